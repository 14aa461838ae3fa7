/* The unit tests' one assertion: CHECK(cond) counts, and reports a failed
 * condition with its place; main() prints the counts and fails when
 * failures > 0.  check(ok, what) is the same count for a check better told
 * in words: it prints "ok: what" or "FAIL: what"; checkf(ok, fmt, ...) the
 * same with printf's format. */
#ifndef RDMABLK_TESTS_UNIT_CHECK_H
#define RDMABLK_TESTS_UNIT_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int failures, checks;

#define CHECK(cond) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	}								\
} while (0)

static inline void
check(int ok, const char *what)
{
	checks++;
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		failures++;
}

static inline void checkf(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline void
checkf(int ok, const char *fmt, ...)
{
	va_list ap;

	checks++;
	printf("%s: ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
}

#endif
