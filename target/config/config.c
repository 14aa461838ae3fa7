/* Parse rdmablk-target's configuration file (target/config/config.h).
 *
 * Every error is reported as "FILE:LINE: message" and parsing continues so
 * that one run shows them all.  The result is a fresh struct: -n, startup
 * and SIGHUP reload all go through config_load(). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-parser.h"
#include "config.h"
#include "log.h"


void
perr(struct parser *p, int line, const char *fmt, ...)
{
	char msg[512], full[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 0)
		snprintf(full, sizeof(full), "%s:%d: %s", p->file, line, msg);
	else
		snprintf(full, sizeof(full), "%s: %s", p->file, msg);
	p->nerrors++;
	if (p->err != NULL)
		p->err(p->arg, full);
	else
		log_warnx("%s", full);
}

char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

void
cfg_export_free(struct cfg_export *e)
{
	if (e == NULL)
		return;
	if (e->fd >= 0)
		close(e->fd);
	free(e->path);
	free(e->allow);
	free(e->allow_key);
	while (e->nkeys > 0) {
		e->nkeys--;
		free(e->keys[e->nkeys].file);
		rb_secret_wipe(&e->keys[e->nkeys].secret);
	}
	free(e->keys);
	free(e->secret_file);
	rb_secret_wipe(&e->secret);
	rbd_backing_destroy(e->rbd);
	free(e->ceph_conf);
	free(e->ceph_id);
	free(e->ceph_keyring);
	free(e);
}

void
config_free(struct config *c)
{
	struct cfg_export *e;

	if (c == NULL)
		return;
	while ((e = STAILQ_FIRST(&c->exports)) != NULL) {
		STAILQ_REMOVE_HEAD(&c->exports, link);
		cfg_export_free(e);
	}
	free(c->file);
	free(c);
}

const struct cfg_export *
config_find_export(const struct config *c, const char *name)
{
	const struct cfg_export *e;

	STAILQ_FOREACH(e, &c->exports, link)
		if (strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

int
cfg_export_allows(const struct cfg_export *e, const struct sockaddr *sa)
{
	size_t i;

	if (e->nallow == 0)
		return 1;
	for (i = 0; i < e->nallow; i++)
		if (rb_prefix_match(&e->allow[i], sa))
			return 1;
	return 0;
}

const struct rb_secret *
cfg_export_secret(const struct cfg_export *e, const struct sockaddr *sa)
{
	const struct rb_prefix *best = NULL;
	size_t i, besti = 0;

	for (i = 0; i < e->nallow; i++) {
		if (!rb_prefix_match(&e->allow[i], sa))
			continue;
		if (best == NULL || e->allow[i].bits > best->bits) {
			best = &e->allow[i];
			besti = i;
		}
	}
	if (best != NULL && e->allow_key[besti] != 0)
		return &e->keys[e->allow_key[besti] - 1].secret;
	return e->secret.key != NULL ? &e->secret : NULL;
}

int
cfg_export_listed(const struct cfg_export *e, const struct sockaddr *sa)
{
	if (e->listed >= 0)
		return e->listed;
	return cfg_export_secret(e, sa) == NULL;
}

/* Returns 1 when the key was already set in this section. */
int
seen_key(struct parser *p, const char *key)
{
	int i;

	for (i = 0; i < p->nseen; i++)
		if (strcmp(p->seen[i], key) == 0)
			return 1;
	if (p->nseen < (int)(sizeof(p->seen) / sizeof(p->seen[0])) &&
	    strlen(key) < sizeof(p->seen[0]))
		strcpy(p->seen[p->nseen++], key);
	return 0;
}

/* Open and size the export's backing store (backing-open.c), reporting a
 * failure at the line of the key it is about. */
static void
export_open(struct parser *p, struct cfg_export *e)
{
	struct backing_err err;
	int line = p->path_line;

	if (backing_open(e, p->flags & CONFIG_CHECK, &err) == 0)
		return;
	switch (err.key) {
	case BACKING_KEY_PATH:
		break;
	case BACKING_KEY_SIZE:
		line = p->size_line;
		break;
	case BACKING_KEY_CEPH_CONF:
		if (e->ceph_conf_line != 0)
			line = e->ceph_conf_line;
		break;
	case BACKING_KEY_CEPH_KEYRING:
		line = e->ceph_keyring_line;
		break;
	}
	perr(p, line, "%s", err.msg);
}

/* Finish the export being parsed: check it and link it in. */
static void
end_section(struct parser *p)
{
	struct cfg_export *e = p->cur;

	p->in_target = 0;
	p->cur = NULL;
	p->nseen = 0;
	if (e == NULL)
		return;
	/* An RBD image is one store behind every target that exports it
	 * (docs/durability.md): shared unless the section says otherwise. */
	if (e->shared < 0)
		e->shared = e->is_rbd;
	if (e->path == NULL)
		perr(p, e->line, "[export %s]: missing path", e->name);
	else if (!e->is_rbd && e->ceph_line != 0)
		perr(p, e->ceph_line, "ceph-conf, ceph-id and ceph-keyring are only for RBD "
		     "exports (path = rbd:POOL/IMAGE)");
	else if (e->is_rbd && e->direct_io)
		perr(p, e->line, "[export %s]: direct-io is for files and block devices; an "
		     "RBD image has no page cache here", e->name);
	else if (!p->cur_discard && !(p->flags & CONFIG_NO_OPEN))
		export_open(p, e);
	if (p->cur_discard) {
		cfg_export_free(e);
		return;
	}
	STAILQ_INSERT_TAIL(&p->c->exports, e, link);
	p->c->nexports++;
}

static void
section(struct parser *p, int line, char *s)
{
	char *end = strchr(s, ']'), *name;
	const char *why = NULL;
	struct cfg_export *e;

	end_section(p);
	if (end == NULL || trim(end + 1)[0] != '\0') {
		perr(p, line, "bad section header (expected [target] or [export NAME])");
		p->cur_discard = 1;
		return;
	}
	*end = '\0';
	s = trim(s + 1);
	if (strcmp(s, "target") == 0) {
		if (p->target_line != 0)
			perr(p, line, "duplicate [target] section (first at line %d)",
			     p->target_line);
		else
			p->target_line = line;
		p->in_target = 1;
		return;
	}
	if (strncmp(s, "export", 6) != 0 || !isspace((unsigned char)s[6])) {
		perr(p, line, "unknown section [%s]", s);
		p->cur_discard = 1;
		return;
	}
	name = trim(s + 6);
	e = calloc(1, sizeof(*e));
	if (e == NULL) {
		perr(p, line, "out of memory");
		return;
	}
	e->fd = -1;
	e->line = line;
	e->durability = DURABILITY_ALWAYS;
	e->listed = -1;
	e->shared = -1;
	p->cur = e;
	p->cur_discard = 0;
	p->path_line = p->size_line = line;
	snprintf(e->name, sizeof(e->name), "%s", name);
	if (rb_export_name_valid(name, &why) < 0) {
		perr(p, line, "bad export name '%s': %s", name, why);
		p->cur_discard = 1;
	} else if (config_find_export(p->c, name) != NULL) {
		perr(p, line, "duplicate export '%s'", name);
		p->cur_discard = 1;
	}
}

static void
parse_line(struct parser *p, int line, char *raw)
{
	char *s, *eq, *key, *val, *hash;

	hash = strchr(raw, '#');
	if (hash != NULL)
		*hash = '\0';
	s = trim(raw);
	if (s[0] == '\0')
		return;
	if (s[0] == '[') {
		section(p, line, s);
		return;
	}
	eq = strchr(s, '=');
	if (eq == NULL) {
		perr(p, line, "expected KEY = VALUE");
		return;
	}
	*eq = '\0';
	key = trim(s);
	val = trim(eq + 1);
	if (key[0] == '\0') {
		perr(p, line, "missing key before '='");
		return;
	}
	if (!p->in_target && p->cur == NULL) {
		if (!p->cur_discard)
			perr(p, line, "key '%s' outside a section", key);
		return;
	}
	if (strcmp(key, "allow") != 0 && seen_key(p, key)) {
		perr(p, line, "duplicate key '%s'", key);
		return;
	}
	if (val[0] == '\0') {
		perr(p, line, "%s: missing value", key);
		return;
	}
	if (p->in_target) {
		if (!target_key(p, line, key, val))
			perr(p, line, "unknown key '%s' in [target]", key);
	} else if (!simple_key(p, line, export_keys, p->cur, key, val)) {
		export_key(p, line, key, val);
	}
}

/* The first RBD export after e (NULL: from the start) that c's threads
 * rules out.  An RBD export's completions come through one eventfd that one
 * loop watches (export.c): it runs with threads = 1 only, for now.  The
 * parser and a reload (config_reload_conflicts) both ask this. */
static const struct cfg_export *
rbd_ruled_out(const struct config *c, const struct cfg_export *e)
{
	if (c->threads <= 1)
		return NULL;
	for (e = e == NULL ? STAILQ_FIRST(&c->exports) : STAILQ_NEXT(e, link); e != NULL;
	     e = STAILQ_NEXT(e, link))
		if (e->is_rbd)
			return e;
	return NULL;
}

static void
check_loops_rbd(struct parser *p)
{
	const struct cfg_export *e;

	for (e = rbd_ruled_out(p->c, NULL); e != NULL; e = rbd_ruled_out(p->c, e))
		perr(p, e->line, "[export %s]: an RBD export needs threads = 1 (threads = %u)",
		     e->name, p->c->threads);
}

void
config_say(config_error_fn *fn, void *arg, const char *msg)
{
	if (fn != NULL)
		fn(arg, msg);
	else
		log_warnx("%s", msg);
}

unsigned
config_reload_conflicts(const struct config *nc, config_error_fn *fn, void *arg)
{
	const struct cfg_export *e;
	char msg[512];
	unsigned n = 0;

	for (e = rbd_ruled_out(nc, NULL); e != NULL; e = rbd_ruled_out(nc, e)) {
		snprintf(msg, sizeof(msg), "reload: [export %s]: an RBD export needs threads = 1, "
			 "and the target runs with threads = %u until a restart", e->name,
			 nc->threads);
		config_say(fn, arg, msg);
		n++;
	}
	return n;
}

void
config_listen_port(struct config *c)
{
	if (c->listen.ss_family == AF_INET)
		((struct sockaddr_in *)&c->listen)->sin_port = htons(c->port);
	else if (c->listen.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&c->listen)->sin6_port = htons(c->port);
}

static void
check_target(struct parser *p, int last_line)
{
	struct config *c = p->c;
	int line = p->target_line ? p->target_line : last_line;

	if (c->listen_len == 0) {
		if (p->listen_seen)
			return;   /* its bad value was reported */
		perr(p, line, p->target_line ? "[target]: missing listen" :
		     "missing [target] section with listen =");
		return;
	}
	config_listen_port(c);
	if (c->buffer_pool < c->max_io)
		perr(p, line, "buffer-pool (%llu bytes) is smaller than max-io (%u bytes)",
		     (unsigned long long)c->buffer_pool, c->max_io);
	else if (c->buffer_pool / c->max_io < c->threads)
		perr(p, line, "buffer-pool (%llu bytes) holds fewer max-io buffers than "
		     "threads (%u event loops): each loop needs one",
		     (unsigned long long)c->buffer_pool, c->threads);
	check_loops_rbd(p);
}

struct config *
config_load(const char *file, int flags, config_error_fn *err, void *arg,
	    unsigned *nerrors)
{
	struct parser p;
	struct config *c;
	FILE *f;
	char *buf = NULL;
	size_t cap = 0;
	int line = 0;
	ssize_t got;

	memset(&p, 0, sizeof(p));
	p.file = file;
	p.flags = flags;
	p.err = err;
	p.arg = arg;
	c = calloc(1, sizeof(*c));
	if (c == NULL || (c->file = strdup(file)) == NULL) {
		free(c);
		perr(&p, 0, "out of memory");
		*nerrors = p.nerrors;
		return NULL;
	}
	STAILQ_INIT(&c->exports);
	p.c = c;
	target_defaults(c);

	f = fopen(file, "re");
	if (f == NULL) {
		perr(&p, 0, "%s", strerror(errno));
		config_free(c);
		*nerrors = p.nerrors;
		return NULL;
	}
	while ((got = getline(&buf, &cap, f)) != -1) {
		line++;
		if (strlen(buf) != (size_t)got) {
			perr(&p, line, "NUL byte in line");
			continue;
		}
		parse_line(&p, line, buf);
	}
	if (ferror(f))
		perr(&p, line, "read error: %s", strerror(errno));
	free(buf);
	fclose(f);
	end_section(&p);
	check_target(&p, line);

	*nerrors = p.nerrors;
	if (p.nerrors != 0) {
		config_free(c);
		return NULL;
	}
	return c;
}
