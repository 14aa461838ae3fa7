/* A bounded, growing string builder for the daemon's text renderings
 * (--stats, Prometheus metrics): printf into it, then take the result.
 * A write that would pass max marks it full and writes nothing more. */
#ifndef RDMABLK_TARGET_SBUF_H
#define RDMABLK_TARGET_SBUF_H

#include <stddef.h>

struct sbuf {
	char *p;
	size_t len, cap, max;
	int full;                 /* a write did not fit in max */
};

void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string: quotes, backslashes and control bytes escaped. */
void sb_json_str(struct sbuf *b, const char *s);
/* A Prometheus label value: backslash, double quote and newline escaped. */
void sb_label_str(struct sbuf *b, const char *s);
/* The text (malloc'd, NUL-terminated) and its length: 0, or -1 when it
 * was full or empty (freed; *out NULL). */
int  sb_take(struct sbuf *b, char **out, size_t *len);

#endif
