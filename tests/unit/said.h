/* What a config_error_fn said, for the tests that check its words:
 * said_collect appends each message and a newline to text, and counts. */
#ifndef RDMABLK_TESTS_UNIT_SAID_H
#define RDMABLK_TESTS_UNIT_SAID_H

#include <stdio.h>
#include <string.h>

struct said {
	char     text[4096];
	unsigned n;
};

static inline void
said_collect(void *arg, const char *msg)
{
	struct said *s = arg;
	size_t len = strlen(s->text);

	s->n++;
	snprintf(s->text + len, sizeof(s->text) - len, "%s\n", msg);
}

#endif
