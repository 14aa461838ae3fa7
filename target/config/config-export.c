/* The keys of an [export] section (target/config/config-parser.h): path, size,
 * the allow list and its keys, secret-file, the ceph-* keys and the rest.
 * Errors are "FILE:LINE: message", as everywhere in the parser. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config-parser.h"
#include "log.h"

/* An allow line's trailing secret-file=PATH: loaded now (so -n and a reload
 * refuse a bad file).  Returns 1 + its index in e->keys, or 0 on error. */
static unsigned
allow_key_load(struct parser *p, int line, struct cfg_export *e, const char *path)
{
	struct cfg_allow_key *n, *k;
	char msg[512];

	if (path[0] == '\0') {
		perr(p, line, "allow: secret-file= without a path");
		return 0;
	}
	n = realloc(e->keys, (e->nkeys + 1) * sizeof(*n));
	if (n == NULL) {
		perr(p, line, "allow: out of memory");
		return 0;
	}
	e->keys = n;
	k = &e->keys[e->nkeys];
	memset(k, 0, sizeof(*k));
	k->line = line;
	k->file = strdup(path);
	if (k->file == NULL) {
		perr(p, line, "allow: out of memory");
		return 0;
	}
	e->nkeys++;
	if (!(p->flags & CONFIG_NO_OPEN) &&
	    rb_secret_load(path, &k->secret, msg, sizeof(msg)) < 0) {
		perr(p, line, "allow: %s", msg);
		return 0;
	}
	return (unsigned)e->nkeys;
}

/* A prefix listed twice, on lines with different keys, would leave which key
 * applies to the order of the lines: refuse it. */
static int
allow_dup(struct parser *p, int line, const struct cfg_export *e,
	  const struct rb_prefix *pf, unsigned key, const char *tok)
{
	size_t i;

	for (i = 0; i < e->nallow; i++) {
		if (e->allow[i].family != pf->family || e->allow[i].bits != pf->bits ||
		    memcmp(e->allow[i].addr, pf->addr, sizeof(pf->addr)) != 0 ||
		    e->allow_key[i] == key)
			continue;
		if (e->allow_key[i] != 0)
			perr(p, line, "allow: %s is already listed with another secret-file= "
			     "(line %d)", tok, e->keys[e->allow_key[i] - 1].line);
		else
			perr(p, line, "allow: %s is already listed on an allow line without "
			     "secret-file=", tok);
		return 1;
	}
	return 0;
}

/* allow = PREFIX... [secret-file=PATH] */
static void
parse_allow(struct parser *p, int line, struct cfg_export *e, char *val)
{
	char *tok, *save = NULL, *keyp;
	unsigned key = 0;

	keyp = strstr(val, "secret-file");
	if (keyp != NULL) {
		char *eq = keyp + strlen("secret-file");

		while (*eq == ' ' || *eq == '\t')
			eq++;
		if (*eq != '=') {
			perr(p, line, "allow: expected secret-file=PATH after the addresses");
			return;
		}
		*keyp = '\0';
		key = allow_key_load(p, line, e, trim(eq + 1));
		if (key == 0)
			return;
		if (trim(val)[0] == '\0') {
			perr(p, line, "allow: secret-file= without an address or prefix");
			return;
		}
	}
	for (tok = strtok_r(val, " \t,", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t,", &save)) {
		struct rb_prefix pf, *n;
		unsigned *nk;

		if (rb_prefix_parse(tok, &pf) < 0) {
			perr(p, line, "allow: bad address or prefix '%s'", tok);
			continue;
		}
		if (allow_dup(p, line, e, &pf, key, tok))
			continue;
		n = realloc(e->allow, (e->nallow + 1) * sizeof(*n));
		if (n != NULL)
			e->allow = n;
		nk = n != NULL ? realloc(e->allow_key, (e->nallow + 1) * sizeof(*nk)) : NULL;
		if (nk == NULL) {
			perr(p, line, "allow: out of memory");
			return;
		}
		e->allow_key = nk;
		e->allow_key[e->nallow] = key;
		e->allow[e->nallow++] = pf;
	}
}

/* ceph-conf, ceph-id, ceph-keyring: where an RBD export's client finds its
 * cluster and who it is (rbd.h). */
static void
ceph_key(struct parser *p, int line, const char *key, const char *val)
{
	struct cfg_export *e = p->cur;
	char **slot;
	size_t i;

	if (strcmp(key, "ceph-conf") == 0) {
		slot = &e->ceph_conf;
		e->ceph_conf_line = line;
	} else if (strcmp(key, "ceph-keyring") == 0) {
		slot = &e->ceph_keyring;
		e->ceph_keyring_line = line;
	} else if (strcmp(key, "ceph-id") == 0) {
		slot = &e->ceph_id;
		if (strncmp(val, "client.", 7) == 0) {
			perr(p, line, "ceph-id: '%s': give the client name without 'client.' "
			     "(ceph-id = %s)", val, val + 7);
			return;
		}
		for (i = 0; val[i] != '\0'; i++)
			if (!isalnum((unsigned char)val[i]) && strchr("_.-", val[i]) == NULL)
				break;
		if (val[i] != '\0' || i > 64) {
			perr(p, line, "ceph-id: bad client name '%s' (letters, digits, '_', '.', "
			     "'-'; at most 64)", val);
			return;
		}
	} else {
		perr(p, line, "unknown key '%s' in [export %s] (ceph-conf, ceph-id or "
		     "ceph-keyring)", key, e->name);
		return;
	}
	if (slot != &e->ceph_id && val[0] != '/') {
		perr(p, line, "%s: '%s' is not an absolute path", key, val);
		return;
	}
	if (e->ceph_line == 0)
		e->ceph_line = line;
	free(*slot);
	*slot = strdup(val);
	if (*slot == NULL)
		perr(p, line, "%s: out of memory", key);
}

const struct simple_key export_keys[] = {
	BOOL_KEY("read-only", struct cfg_export, read_only),
	BOOL_KEY("shared", struct cfg_export, shared),
	BOOL_KEY("listed", struct cfg_export, listed),
	BOOL_KEY("direct-io", struct cfg_export, direct_io),
	UINT_KEY("max-connections", struct cfg_export, max_connections, 0, 65535, "", ""),
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};

static const char *const durability_names[] = {
	[DURABILITY_ALWAYS] = "always",
	[DURABILITY_FUA]    = "fua",
};

void
export_key(struct parser *p, int line, const char *key, char *val)
{
	struct cfg_export *e = p->cur;
	uint64_t v;
	int i;

	if (strcmp(key, "path") == 0) {
		if (val[0] == '\0') {
			perr(p, line, "path: empty");
			return;
		}
		if (rbd_is_spec(val)) {
			char pool[128], image[256];
			const char *why = "";

			if (rbd_spec_parse(val, pool, sizeof(pool), image, sizeof(image),
					   &why) < 0) {
				perr(p, line, "path: '%s': %s", val, why);
				return;
			}
			e->is_rbd = 1;
		} else if (val[0] != '/') {
			/* Relative to what?  The daemon's cwd is / after daemon(),
			 * the shell's with -f, and a reload would reopen another
			 * file. */
			perr(p, line, "path: '%s' is not an absolute path (or rbd:POOL/IMAGE)",
			     val);
			return;
		}
		free(e->path);
		e->path = strdup(val);
		p->path_line = line;
	} else if (strcmp(key, "size") == 0) {
		if (parse_size_key(p, line, key, val, &v) < 0)
			return;
		if (v == 0 || v % CONFIG_BLOCK != 0)
			perr(p, line, "size: %s is not a non-zero multiple of 512", val);
		else
			e->size_wanted = v;
		p->size_line = line;
	} else if (strcmp(key, "durability") == 0) {
		i = parse_choice_key(p, line, key, val, durability_names, 2);
		if (i >= 0)
			e->durability = (enum durability)i;
	} else if (strcmp(key, "allow") == 0) {
		parse_allow(p, line, e, val);
	} else if (strcmp(key, "description") == 0) {
		if (strlen(val) > RB_DESCRIPTION_MAX)
			perr(p, line, "description: longer than %d bytes", RB_DESCRIPTION_MAX);
		else
			snprintf(e->description, sizeof(e->description), "%s", val);
	} else if (strcmp(key, "secret-file") == 0) {
		char msg[512];

		if (val[0] == '\0') {
			perr(p, line, "secret-file: empty");
			return;
		}
		free(e->secret_file);
		e->secret_file = strdup(val);
		rb_secret_wipe(&e->secret);
		/* Loaded now, so -n and a reload refuse a bad file; the key
		 * stays in memory until this config is freed. */
		if (!(p->flags & CONFIG_NO_OPEN) &&
		    rb_secret_load(val, &e->secret, msg, sizeof(msg)) < 0)
			perr(p, line, "%s", msg);
	} else if (strncmp(key, "ceph-", 5) == 0) {
		ceph_key(p, line, key, val);
	} else {
		perr(p, line, "unknown key '%s' in [export %s]", key, e->name);
	}
}
