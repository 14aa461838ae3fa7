/* Parse rdmablk-target's configuration file (target/config.h).
 *
 * Every error is reported as "FILE:LINE: message" and parsing continues so
 * that one run shows them all.  The result is a fresh struct: -n, startup
 * and SIGHUP reload all go through config_load(). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

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

static void
perr(struct parser *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
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

static char *
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
	struct cfg_export *e, *next;

	if (c == NULL)
		return;
	for (e = c->exports; e != NULL; e = next) {
		next = e->next;
		cfg_export_free(e);
	}
	free(c->file);
	free(c);
}

const struct cfg_export *
config_find_export(const struct config *c, const char *name)
{
	const struct cfg_export *e;

	for (e = c->exports; e != NULL; e = e->next)
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
static int
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

static int
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

static void
target_key(struct parser *p, int line, const char *key, const char *val)
{
	struct config *c = p->c;
	uint64_t v;

	if (strcmp(key, "listen") == 0) {
		struct sockaddr_storage ss;
		socklen_t len;

		p->listen_seen = 1;
		if (strlen(val) >= sizeof(c->listen_host) ||
		    rb_sockaddr_parse(val, RB_DEFAULT_PORT, &ss, &len) < 0) {
			perr(p, line, "listen: bad address '%s' (a numeric IPv4 or IPv6 address)",
			     val);
			return;
		}
		snprintf(c->listen_host, sizeof(c->listen_host), "%s", val);
		c->listen = ss;
		c->listen_len = len;
	} else if (strcmp(key, "port") == 0) {
		if (rb_parse_uint(val, 1, 65535, &v) < 0)
			perr(p, line, "port: bad port '%s' (1..65535)", val);
		else
			c->port = (uint16_t)v;
	} else if (strcmp(key, "queue-depth") == 0) {
		if (rb_parse_uint(val, 1, CONFIG_MAX_QUEUE_DEPTH, &v) < 0)
			perr(p, line, "queue-depth: bad value '%s' (1..%u)", val,
			     CONFIG_MAX_QUEUE_DEPTH);
		else
			c->queue_depth = (unsigned)v;
	} else if (strcmp(key, "max-io") == 0) {
		if (parse_size_key(p, line, key, val, &v) < 0)
			return;
		if (v < 4096 || v > CONFIG_MAX_MAX_IO || v % CONFIG_BLOCK != 0)
			perr(p, line, "max-io: %s must be a multiple of 512 between 4K and 16M",
			     val);
		else
			c->max_io = (uint32_t)v;
	} else if (strcmp(key, "threads") == 0) {
		if (rb_parse_uint(val, 1, CONFIG_MAX_THREADS, &v) < 0)
			perr(p, line, "threads: bad value '%s' (1..%u)", val,
			     CONFIG_MAX_THREADS);
		else
			c->threads = (unsigned)v;
	} else if (strcmp(key, "io-engine") == 0) {
		if (strcasecmp(val, "io_uring") == 0)
			c->io_engine = IOQ_IO_URING;
		else if (strcasecmp(val, "threads") == 0)
			c->io_engine = IOQ_THREADS;
		else
			perr(p, line, "io-engine: bad value '%s' (io_uring or threads)", val);
	} else if (strcmp(key, "log-level") == 0) {
		static const char *const names[] = { "error", "warn", "info", "debug" };
		int i;

		for (i = 0; i < 4; i++)
			if (strcasecmp(val, names[i]) == 0)
				break;
		if (i == 4)
			perr(p, line, "log-level: bad value '%s' (error, warn, info or debug)",
			     val);
		else
			c->log_level = i;
	} else if (strcmp(key, "buffer-pool") == 0) {
		if (parse_size_key(p, line, key, val, &v) < 0)
			return;
		if (v == 0 || v > (64ull << 30))
			perr(p, line, "buffer-pool: %s is out of range (up to 64G)", val);
		else
			c->buffer_pool = v;
	} else if (strcmp(key, "inline-max") == 0) {
		if (parse_size_key(p, line, key, val, &v) < 0)
			return;
		if (v > RB_INLINE_MAX)
			perr(p, line, "inline-max: %s is larger than %u", val, RB_INLINE_MAX);
		else
			c->inline_max = (uint32_t)v;
	} else if (strcmp(key, "admin-socket") == 0) {
		c->admin_socket_set = 1;
		if (strcasecmp(val, "none") == 0)
			c->admin_socket[0] = '\0';
		else if (val[0] != '/' || strlen(val) >= sizeof(c->admin_socket))
			perr(p, line, "admin-socket: '%s' is not an absolute path of at most "
			     "%zu bytes (or none)", val, sizeof(c->admin_socket) - 1);
		else
			snprintf(c->admin_socket, sizeof(c->admin_socket), "%s", val);
	} else if (strcmp(key, "keepalive") == 0) {
		if (rb_parse_uint(val, 0, CONFIG_MAX_SECONDS, &v) < 0)
			perr(p, line, "keepalive: bad value '%s' (seconds, 0..%u; 0 disables)",
			     val, CONFIG_MAX_SECONDS);
		else
			c->keepalive = (unsigned)v;
	} else if (strcmp(key, "handshake-timeout") == 0) {
		if (rb_parse_uint(val, 1, CONFIG_MAX_SECONDS, &v) < 0)
			perr(p, line, "handshake-timeout: bad value '%s' (seconds, 1..%u)",
			     val, CONFIG_MAX_SECONDS);
		else
			c->handshake_timeout = (unsigned)v;
	} else if (strcmp(key, "max-connections-total") == 0) {
		if (rb_parse_uint(val, 1, CONFIG_MAX_CONNS, &v) < 0)
			perr(p, line, "max-connections-total: bad value '%s' (1..%u)", val,
			     CONFIG_MAX_CONNS);
		else
			c->max_conns_total = (unsigned)v;
	} else if (strcmp(key, "max-handshakes") == 0) {
		if (rb_parse_uint(val, 1, CONFIG_MAX_CONNS, &v) < 0)
			perr(p, line, "max-handshakes: bad value '%s' (1..%u)", val,
			     CONFIG_MAX_CONNS);
		else
			c->max_handshakes = (unsigned)v;
	} else if (strcmp(key, "max-connections-per-address") == 0) {
		if (rb_parse_uint(val, 1, CONFIG_MAX_CONNS, &v) < 0)
			perr(p, line, "max-connections-per-address: bad value '%s' (1..%u)", val,
			     CONFIG_MAX_CONNS);
		else
			c->max_conns_per_addr = (unsigned)v;
	} else if (strcmp(key, "stats") == 0) {
		int b;

		if (rb_parse_bool(val, &b) < 0)
			perr(p, line, "stats: bad boolean '%s' (yes/no/true/false/on/off)", val);
		else
			c->stats = b;
	} else {
		perr(p, line, "unknown key '%s' in [target]", key);
	}
}

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

static void
export_key(struct parser *p, int line, const char *key, char *val)
{
	struct cfg_export *e = p->cur;
	uint64_t v;
	int b;

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
	} else if (strcmp(key, "read-only") == 0) {
		if (rb_parse_bool(val, &b) < 0)
			perr(p, line, "read-only: bad boolean '%s' (yes/no/true/false/on/off)",
			     val);
		else
			e->read_only = b;
	} else if (strcmp(key, "durability") == 0) {
		if (strcasecmp(val, "always") == 0)
			e->durability = DURABILITY_ALWAYS;
		else if (strcasecmp(val, "fua") == 0)
			e->durability = DURABILITY_FUA;
		else
			perr(p, line, "durability: bad value '%s' (always or fua)", val);
	} else if (strcmp(key, "allow") == 0) {
		parse_allow(p, line, e, val);
	} else if (strcmp(key, "description") == 0) {
		if (strlen(val) > RB_DESCRIPTION_MAX)
			perr(p, line, "description: longer than %d bytes", RB_DESCRIPTION_MAX);
		else
			snprintf(e->description, sizeof(e->description), "%s", val);
	} else if (strcmp(key, "shared") == 0) {
		if (rb_parse_bool(val, &b) < 0)
			perr(p, line, "shared: bad boolean '%s' (yes/no/true/false/on/off)",
			     val);
		else
			e->shared = b;
	} else if (strcmp(key, "max-connections") == 0) {
		if (rb_parse_uint(val, 0, 65535, &v) < 0)
			perr(p, line, "max-connections: bad value '%s' (0..65535)", val);
		else
			e->max_connections = (unsigned)v;
	} else if (strcmp(key, "listed") == 0) {
		if (rb_parse_bool(val, &b) < 0)
			perr(p, line, "listed: bad boolean '%s' (yes/no/true/false/on/off)", val);
		else
			e->listed = b;
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

/* An RBD export's ceph-conf and ceph-keyring must be files this process
 * can read; a keyring must not be readable by everyone. */
static int
rbd_files_ok(struct parser *p, struct cfg_export *e, const char *conf)
{
	struct stat st;
	int line = e->ceph_conf_line != 0 ? e->ceph_conf_line : p->path_line;

	if (access(conf, R_OK) < 0) {
		perr(p, line, "ceph-conf: %s%s: %s", conf,
		     e->ceph_conf == NULL ? " (the default)" : "", strerror(errno));
		return -1;
	}
	if (e->ceph_keyring == NULL)
		return 0;
	if (stat(e->ceph_keyring, &st) < 0 || access(e->ceph_keyring, R_OK) < 0) {
		perr(p, e->ceph_keyring_line, "ceph-keyring: %s: %s", e->ceph_keyring, strerror(errno));
		return -1;
	}
	if (st.st_mode & S_IROTH) {
		perr(p, e->ceph_keyring_line, "ceph-keyring: %s is readable by everyone (mode %04o): "
		     "chmod o-rwx it", e->ceph_keyring, (unsigned)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

/* Connect to the cluster and open the image, to prove it usable (also with
 * -n: a wrong pool, image or monitor is an error there, in bounded time). */
static void
rbd_export_open(struct parser *p, struct cfg_export *e)
{
	const char *conf = e->ceph_conf != NULL ? e->ceph_conf : RBD_DEFAULT_CONF;
	struct rbd_opts o = {
		.conf = conf,
		.id = e->ceph_id != NULL ? e->ceph_id : RBD_DEFAULT_ID,
		.keyring = e->ceph_keyring,
		.read_only = e->read_only,
		.name = e->name,
	};
	char err[512];

	if (rbd_files_ok(p, e, conf) < 0)
		return;
	e->rbd = rbd_backing_create(e->path, &o, err, sizeof(err));
	if (e->rbd == NULL) {
		perr(p, strncmp(err, "ceph-conf", 9) == 0 && e->ceph_conf_line != 0 ?
		     e->ceph_conf_line : p->path_line, "path: %s", err);
		return;
	}
	e->size = rbd_backing_size(e->rbd);
	if (e->size_wanted != 0 && e->size_wanted != e->size)
		perr(p, p->size_line, "size: %s is an image of %llu bytes, not %llu (rbd resize "
		     "it)", e->path, (unsigned long long)e->size,
		     (unsigned long long)e->size_wanted);
	else if (e->size == 0 || e->size % CONFIG_BLOCK != 0)
		perr(p, p->path_line, "path: %s: size %llu is not a non-zero multiple of 512",
		     e->path, (unsigned long long)e->size);
	else if (!(p->flags & CONFIG_CHECK))
		return;
	rbd_backing_destroy(e->rbd);
	e->rbd = NULL;
}

/* Open the backing file to prove it usable; create or extend it to `size`
 * unless only checking. */
static void
export_open(struct parser *p, struct cfg_export *e)
{
	int check = p->flags & CONFIG_CHECK;
	int oflags = (e->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	int line = p->path_line;
	struct stat st;

	if (e->size_wanted != 0 && !e->read_only && !check)
		oflags |= O_CREAT;
	e->fd = open(e->path, oflags, 0600);
	if (e->fd < 0) {
		int saved = errno;
		char *dup, *dir;
		int ok = 0;

		/* -n must not create the file, but `size` would. */
		if (saved == ENOENT && check && e->size_wanted != 0 && !e->read_only &&
		    (dup = strdup(e->path)) != NULL) {
			dir = dirname(dup);
			ok = access(dir, W_OK) == 0;
			free(dup);
		}
		if (ok) {
			e->size = e->size_wanted;
			return;
		}
		perr(p, line, "path: %s: %s", e->path, strerror(saved));
		return;
	}
	if (fstat(e->fd, &st) < 0) {
		perr(p, line, "path: %s: fstat: %s", e->path, strerror(errno));
		goto out_close;
	}
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	if (S_ISBLK(st.st_mode)) {
		uint64_t bytes;

		if (ioctl(e->fd, BLKGETSIZE64, &bytes) < 0) {
			perr(p, line, "path: %s: BLKGETSIZE64: %s", e->path, strerror(errno));
			goto out_close;
		}
		e->is_blockdev = 1;
		if (e->size_wanted != 0 && e->size_wanted != bytes) {
			perr(p, p->size_line, "size: %s is a block device of %llu bytes, not %llu",
			     e->path, (unsigned long long)bytes,
			     (unsigned long long)e->size_wanted);
			goto out_close;
		}
		e->size = bytes;
	} else if (S_ISREG(st.st_mode)) {
		uint64_t cur = (uint64_t)st.st_size;

		e->size = cur;
		if (e->size_wanted != 0 && e->size_wanted < cur) {
			perr(p, p->size_line, "size: %s is %llu bytes; refusing to shrink it to %llu",
			     e->path, (unsigned long long)cur,
			     (unsigned long long)e->size_wanted);
			goto out_close;
		}
		if (e->size_wanted > cur) {
			if (e->read_only) {
				perr(p, p->size_line, "size: cannot extend %s: the export is read-only",
				     e->path);
				goto out_close;
			}
			if (!check && ftruncate(e->fd, (off_t)e->size_wanted) < 0) {
				perr(p, p->size_line, "size: %s: ftruncate: %s", e->path,
				     strerror(errno));
				goto out_close;
			}
			e->size = e->size_wanted;
		}
	} else {
		perr(p, line, "path: %s: not a regular file or block device", e->path);
		goto out_close;
	}
	if (e->size == 0) {
		perr(p, line, "path: %s is empty (set size = to create it)", e->path);
		goto out_close;
	}
	if (e->size % CONFIG_BLOCK != 0) {
		perr(p, line, "path: %s: size %llu is not a multiple of 512", e->path,
		     (unsigned long long)e->size);
		goto out_close;
	}
	if (check)
		goto out_close;
	return;

out_close:
	close(e->fd);
	e->fd = -1;
}

/* Finish the export being parsed: check it and link it in. */
static void
end_section(struct parser *p)
{
	struct cfg_export *e = p->cur, **tail;

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
	else if (!p->cur_discard && !(p->flags & CONFIG_NO_OPEN))
		e->is_rbd ? rbd_export_open(p, e) : export_open(p, e);
	if (p->cur_discard) {
		cfg_export_free(e);
		return;
	}
	for (tail = &p->c->exports; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = e;
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
	if (p->in_target)
		target_key(p, line, key, val);
	else
		export_key(p, line, key, val);
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
	if (c->listen.ss_family == AF_INET)
		((struct sockaddr_in *)&c->listen)->sin_port = htons(c->port);
	else
		((struct sockaddr_in6 *)&c->listen)->sin6_port = htons(c->port);
	if (c->buffer_pool < c->max_io)
		perr(p, line, "buffer-pool (%llu bytes) is smaller than max-io (%u bytes)",
		     (unsigned long long)c->buffer_pool, c->max_io);
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
	long n;
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
	p.c = c;
	c->port = RB_DEFAULT_PORT;
	c->queue_depth = CONFIG_DEFAULT_QUEUE_DEPTH;
	c->max_io = CONFIG_DEFAULT_MAX_IO;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	c->threads = n < 1 ? 1 : n > CONFIG_MAX_THREADS ? CONFIG_MAX_THREADS : (unsigned)n;
	c->io_engine = IOQ_IO_URING;
	c->log_level = LOG_LEVEL_INFO;
	c->buffer_pool = CONFIG_DEFAULT_POOL;
	c->inline_max = CONFIG_DEFAULT_INLINE_MAX;
	snprintf(c->admin_socket, sizeof(c->admin_socket), "%s", CONFIG_DEFAULT_ADMIN_SOCKET);
	c->stats = 1;
	c->keepalive = CONFIG_DEFAULT_KEEPALIVE;
	c->handshake_timeout = CONFIG_DEFAULT_HANDSHAKE;
	c->max_conns_total = CONFIG_DEFAULT_MAX_CONNS_TOTAL;
	c->max_handshakes = CONFIG_DEFAULT_MAX_HANDSHAKES;
	c->max_conns_per_addr = CONFIG_DEFAULT_MAX_CONNS_PER_ADDR;

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
