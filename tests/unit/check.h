/* The unit tests' one assertion: CHECK(cond) counts, and reports a failed
 * condition with its place; main() prints the counts and fails when
 * failures > 0.  check(ok, what) is the same count for a check better told
 * in words: it prints "ok: what" or "FAIL: what". */
#ifndef RDMABLK_TESTS_UNIT_CHECK_H
#define RDMABLK_TESTS_UNIT_CHECK_H

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

#endif
