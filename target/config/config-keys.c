/* The value of one config key, by kind: a size, one of a list of words,
 * and the numbers and booleans of a section's table of simple keys
 * (target/config/config-parser.h).  Each bad value gets one "FILE:LINE: KEY: ..."
 * error naming what the key takes. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config-parser.h"

int
parse_size_key(struct parser *p, int line, const char *key, const char *val,
	       uint64_t *out)
{
	int r = rb_parse_size(val, out);

	if (r < 0) {
		perr(p, line, "%s: bad size '%s' (a number with optional K, M, G or T)",
		     key, val);
		return -1;
	}
	return 0;
}

int
parse_choice_key(struct parser *p, int line, const char *key, const char *val,
		 const char *const *names, int n)
{
	char choices[256];
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++)
		if (strcasecmp(val, names[i]) == 0)
			return i;
	choices[0] = '\0';
	for (i = 0; i < n && len < sizeof(choices); i++)
		len += (size_t)snprintf(choices + len, sizeof(choices) - len, "%s%s",
					i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
	perr(p, line, "%s: bad value '%s' (%s)", key, val, choices);
	return -1;
}

int
simple_key(struct parser *p, int line, const struct simple_key *t,
	   void *base, const char *key, const char *val)
{
	for (; t->key != NULL && strcmp(t->key, key) != 0; t++)
		;
	if (t->key == NULL)
		return 0;
	simple_key_set(p, line, t, base, val);
	return 1;
}

void
simple_key_set(struct parser *p, int line, const struct simple_key *t, void *base,
	       const char *val)
{
	const char *key = t->key;
	uint64_t v;
	int b;

	if (t->is_bool) {
		if (rb_parse_bool(val, &b) < 0)
			perr(p, line, "%s: bad boolean '%s' (yes/no/true/false/on/off)",
			     key, val);
		else
			*(int *)((char *)base + t->off) = b;
	} else {
		if (rb_parse_uint(val, t->lo, t->hi, &v) < 0)
			perr(p, line, "%s: bad value '%s' (%s%u..%u%s)", key, val, t->unit,
			     t->lo, t->hi, t->note);
		else
			*(unsigned *)((char *)base + t->off) = (unsigned)v;
	}
}
