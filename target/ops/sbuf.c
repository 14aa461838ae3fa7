/* A bounded string builder (target/ops/sbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sbuf.h"

void
sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->full)
		return;
	for (;;) {
		size_t room = b->cap - b->len;
		size_t ncap;
		char *np;

		va_start(ap, fmt);
		n = vsnprintf(b->p != NULL ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->full = 1;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		ncap = b->cap ? b->cap : 4096;
		while (ncap <= b->len + (size_t)n)
			ncap *= 2;
		if (ncap > b->max)
			ncap = b->max;
		if (ncap <= b->len + (size_t)n || (np = realloc(b->p, ncap)) == NULL) {
			b->full = 1;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
}

/* Other bytes pass through: names and paths are the admin's own. */
void
sb_json_str(struct sbuf *b, const char *s)
{
	sb_printf(b, "\"");
	for (; *s != '\0' && !b->full; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			sb_printf(b, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			sb_printf(b, "\\u%04x", ch);
		else
			sb_printf(b, "%c", ch);
	}
	sb_printf(b, "\"");
}

void
sb_label_str(struct sbuf *b, const char *s)
{
	sb_printf(b, "\"");
	for (; *s != '\0' && !b->full; s++) {
		if (*s == '"' || *s == '\\')
			sb_printf(b, "\\%c", *s);
		else if (*s == '\n')
			sb_printf(b, "\\n");
		else
			sb_printf(b, "%c", *s);
	}
	sb_printf(b, "\"");
}

int
sb_take(struct sbuf *b, char **out, size_t *len)
{
	if (b->full || b->p == NULL) {
		free(b->p);
		b->p = NULL;
		*out = NULL;
		*len = 0;
		return -1;
	}
	*out = b->p;
	*len = b->len;
	b->p = NULL;
	return 0;
}
