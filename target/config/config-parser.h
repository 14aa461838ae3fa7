/* The config parser's state, shared by config.c ([target], sections,
 * lines) and config-export.c (the keys of an [export] section). */
#ifndef RDMABLK_TARGET_CONFIG_PARSER_H
#define RDMABLK_TARGET_CONFIG_PARSER_H

#include <stddef.h>

#include "config.h"

struct parser {
	const char *file;
	int flags;
	config_error_fn *err;
	void *arg;
	unsigned nerrors;
	struct config *c;
	int target_line;            /* line of [target], 0 if none */
	int in_target;
	struct cfg_export *cur;     /* export being parsed, or NULL */
	int cur_discard;            /* a duplicate: parse, report, drop */
	/* keys seen in the current section, to catch duplicates */
	char seen[24][32];
	int nseen;
	int path_line, size_line;
	int listen_seen;            /* even if its value was bad */
};

/* One "FILE:LINE: message" error (line 0: no line). */
void perr(struct parser *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* s without its leading and trailing white space (in place). */
char *trim(char *s);
/* Returns 1 when the key was already set in this section. */
int  seen_key(struct parser *p, const char *key);
/* A size with an optional K, M, G or T; -1 after reporting a bad one. */
int  parse_size_key(struct parser *p, int line, const char *key, const char *val,
		    uint64_t *out);
/* key = one of names[0..n-1] (case-insensitive): its index, or -1 after
 * "KEY: bad value 'VAL' (a, b or c)". */
int  parse_choice_key(struct parser *p, int line, const char *key, const char *val,
		      const char *const *names, int n);

/* A key that sets one field from a number or a boolean: the [export]
 * section has a table of them, and a [target] key's row (config-target.c)
 * holds one. */
struct simple_key {
	const char *key;
	size_t      off;        /* of its field: unsigned (a number) or int (a bool) */
	int         is_bool;
	unsigned    lo, hi;     /* a number's range */
	const char *unit;       /* said before the range: "seconds, " */
	const char *note;       /* said after it: "; 0 disables" */
};
#define UINT_KEY(key, type, field, lo, hi, unit, note) \
	{ key, offsetof(type, field), 0, lo, hi, unit, note }
#define BOOL_KEY(key, type, field) \
	{ key, offsetof(type, field), 1, 0, 0, "", "" }
/* If key is in table t (ended by a NULL key), set its field of base from
 * val (or report "KEY: bad value 'VAL' (LO..HI)" or "KEY: bad boolean
 * 'VAL' (...)") and return 1; 0 if key is not in the table. */
int  simple_key(struct parser *p, int line, const struct simple_key *t,
		void *base, const char *key, const char *val);
/* The same for the one key t (a row of such a table). */
void simple_key_set(struct parser *p, int line, const struct simple_key *t, void *base,
		    const char *val);

/* config-target.c: the [target] keys.  Set every one to its default; parse
 * one (0: no such key). */
void target_defaults(struct config *c);
int  target_key(struct parser *p, int line, const char *key, const char *val);

/* config-export.c: the [export] keys of export_keys, and every other
 * key = value line of the current [export]. */
extern const struct simple_key export_keys[];
void export_key(struct parser *p, int line, const char *key, char *val);

#endif
