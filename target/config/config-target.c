/* The [target] section: one row per key, with its field, how its value is
 * parsed, its default, and whether a reload may change it.  config_load
 * starts from the rows' defaults and parses through them; a reload diffs
 * the new config against the running one through the same rows
 * (config_keep_restart_only).  A new key is one row here. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config-parser.h"
#include "log.h"

/* How a field is stored: what a diff compares, and how it is shown. */
enum tk_type {
	TK_U16,       /* uint16_t */
	TK_UINT,      /* unsigned, uint32_t */
	TK_U64,       /* uint64_t */
	TK_INT,       /* int: a boolean, or an index into names */
	TK_STR,       /* char[size]: "" shows as none */
};

struct target_key;
/* A key's own parser: set the field(s) from val, or perr and leave them. */
typedef void tk_parse_fn(struct parser *p, int line, const struct target_key *k,
			 const char *val);

struct target_key {
	const char   *key;
	enum tk_type  type;
	size_t        off, size;   /* of its field (size: TK_STR) */
	int           live;        /* a reload may change it; else it needs a restart */
	tk_parse_fn  *parse;
	uint64_t      def;         /* numbers, booleans and names' indexes */
	const char   *def_str;     /* TK_STR */
	struct simple_key simple;  /* parse_simple: a number's range, or a boolean */
	const char *const *names;  /* parse_name: the values, by index */
	unsigned      nnames;
	/* Restart-only keys that set more than their field (listen, say):
	 * copy all of it from the running config into the new one. */
	void        (*keep)(struct config *nc, const struct config *run);
};

_Static_assert(sizeof(enum ioq_engine) == sizeof(int), "io-engine is stored as an int");

#define FIELD(f)    offsetof(struct config, f)
#define STR(f)      TK_STR, FIELD(f), sizeof(((struct config *)0)->f)

static void *
field(struct config *c, const struct target_key *k)
{
	return (char *)c + k->off;
}

static const void *
cfield(const struct config *c, const struct target_key *k)
{
	return (const char *)c + k->off;
}

static uint64_t
get_num(const struct config *c, const struct target_key *k)
{
	const void *f = cfield(c, k);

	switch (k->type) {
	case TK_U16: return *(const uint16_t *)f;
	case TK_UINT: return *(const unsigned *)f;
	case TK_U64: return *(const uint64_t *)f;
	case TK_INT: return (uint64_t)*(const int *)f;
	case TK_STR: break;
	}
	return 0;
}

static void
set_num(struct config *c, const struct target_key *k, uint64_t v)
{
	void *f = field(c, k);

	switch (k->type) {
	case TK_U16: *(uint16_t *)f = (uint16_t)v; break;
	case TK_UINT: *(unsigned *)f = (unsigned)v; break;
	case TK_U64: *(uint64_t *)f = v; break;
	case TK_INT: *(int *)f = (int)v; break;
	case TK_STR: break;
	}
}

/* ---- parsers ---- */

/* A number in a range, or a boolean: the [export] keys' parser
 * (config-keys.c), with their messages. */
static void
parse_simple(struct parser *p, int line, const struct target_key *k, const char *val)
{
	simple_key_set(p, line, &k->simple, p->c, val);
}

static void
parse_name(struct parser *p, int line, const struct target_key *k, const char *val)
{
	int i = parse_choice_key(p, line, k->key, val, k->names, (int)k->nnames);

	if (i >= 0)
		set_num(p->c, k, (uint64_t)i);
}

static void
parse_port(struct parser *p, int line, const struct target_key *k, const char *val)
{
	uint64_t v;

	if (rb_parse_uint(val, 1, 65535, &v) < 0)
		perr(p, line, "port: bad port '%s' (1..65535)", val);
	else
		set_num(p->c, k, v);
}

static void
parse_max_io(struct parser *p, int line, const struct target_key *k, const char *val)
{
	uint64_t v;

	if (parse_size_key(p, line, k->key, val, &v) < 0)
		return;
	if (v < 4096 || v > CONFIG_MAX_MAX_IO || v % CONFIG_BLOCK != 0)
		perr(p, line, "max-io: %s must be a multiple of 512 between 4K and 16M", val);
	else
		set_num(p->c, k, v);
}

static void
parse_buffer_pool(struct parser *p, int line, const struct target_key *k, const char *val)
{
	uint64_t v;

	if (parse_size_key(p, line, k->key, val, &v) < 0)
		return;
	if (v == 0 || v > (64ull << 30))
		perr(p, line, "buffer-pool: %s is out of range (up to 64G)", val);
	else
		set_num(p->c, k, v);
}

static void
parse_inline_max(struct parser *p, int line, const struct target_key *k, const char *val)
{
	uint64_t v;

	if (parse_size_key(p, line, k->key, val, &v) < 0)
		return;
	if (v > RB_INLINE_MAX)
		perr(p, line, "inline-max: %s is larger than %u", val, RB_INLINE_MAX);
	else
		set_num(p->c, k, v);
}

static void
parse_listen(struct parser *p, int line, const struct target_key *k, const char *val)
{
	struct config *c = p->c;
	struct sockaddr_storage ss;
	socklen_t len;

	(void)k;
	p->listen_seen = 1;
	if (strlen(val) >= sizeof(c->listen_host) ||
	    rb_sockaddr_parse(val, RB_DEFAULT_PORT, &ss, &len) < 0) {
		perr(p, line, "listen: bad address '%s' (a numeric IPv4 or IPv6 address)", val);
		return;
	}
	snprintf(c->listen_host, sizeof(c->listen_host), "%s", val);
	c->listen = ss;
	c->listen_len = len;
}

static void
keep_listen(struct config *nc, const struct config *run)
{
	memcpy(nc->listen_host, run->listen_host, sizeof(nc->listen_host));
	nc->listen = run->listen;
	nc->listen_len = run->listen_len;
}

/* metrics-listen = ADDR:PORT, [IPv6]:PORT, or none. */
static void
parse_metrics_listen(struct parser *p, int line, const struct target_key *k, const char *val)
{
	struct config *c = p->c;
	char host[64];
	const char *colon, *h = val;
	size_t hlen;
	uint64_t port;

	(void)k;
	if (strcasecmp(val, "none") == 0) {
		c->metrics_listen_len = 0;
		c->metrics_listen_str[0] = '\0';
		return;
	}
	if (*h == '[') {
		colon = strstr(h, "]:");
		h++;
		hlen = colon != NULL ? (size_t)(colon - h) : 0;
		colon = colon != NULL ? colon + 1 : NULL;
	} else {
		colon = strrchr(h, ':');
		hlen = colon != NULL ? (size_t)(colon - h) : 0;
		if (colon != NULL && memchr(h, ':', hlen) != NULL)
			colon = NULL;        /* an IPv6 address goes in brackets */
	}
	if (colon == NULL || hlen == 0 || hlen >= sizeof(host) ||
	    strlen(val) >= sizeof(c->metrics_listen_str) ||
	    rb_parse_uint(colon + 1, 1, 65535, &port) < 0) {
		perr(p, line, "metrics-listen: '%s' is not ADDR:PORT (a numeric IPv4 address "
		     "or a bracketed IPv6 one, and a port 1..65535), or none", val);
		return;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (rb_sockaddr_parse(host, (uint16_t)port, &c->metrics_listen,
			      &c->metrics_listen_len) < 0) {
		perr(p, line, "metrics-listen: bad address '%s' (a numeric IPv4 or IPv6 address)",
		     host);
		c->metrics_listen_len = 0;
		return;
	}
	snprintf(c->metrics_listen_str, sizeof(c->metrics_listen_str), "%s", val);
}

static void
keep_metrics_listen(struct config *nc, const struct config *run)
{
	memcpy(nc->metrics_listen_str, run->metrics_listen_str, sizeof(nc->metrics_listen_str));
	nc->metrics_listen = run->metrics_listen;
	nc->metrics_listen_len = run->metrics_listen_len;
}

static void
parse_admin_socket(struct parser *p, int line, const struct target_key *k, const char *val)
{
	struct config *c = p->c;

	(void)k;
	c->admin_socket_set = 1;
	if (strcasecmp(val, "none") == 0)
		c->admin_socket[0] = '\0';
	else if (val[0] != '/' || strlen(val) >= sizeof(c->admin_socket))
		perr(p, line, "admin-socket: '%s' is not an absolute path of at most "
		     "%zu bytes (or none)", val, sizeof(c->admin_socket) - 1);
	else
		snprintf(c->admin_socket, sizeof(c->admin_socket), "%s", val);
}

static void
keep_admin_socket(struct config *nc, const struct config *run)
{
	memcpy(nc->admin_socket, run->admin_socket, sizeof(nc->admin_socket));
	nc->admin_socket_set = run->admin_socket_set;
}

/* ---- the table ---- */

static const char *const io_engine_names[] = {
	[IOQ_IO_URING] = "io_uring",
	[IOQ_THREADS]  = "threads",
};

static const char *const log_level_names[] = {
	[LOG_LEVEL_ERROR] = "error",
	[LOG_LEVEL_WARN]  = "warn",
	[LOG_LEVEL_INFO]  = "info",
	[LOG_LEVEL_DEBUG] = "debug",
};

#define NO_SIMPLE { NULL, 0, 0, 0, 0, NULL, NULL }
#define NUM(key, type, f, live, parse, def) \
	{ key, type, FIELD(f), 0, live, parse, def, NULL, NO_SIMPLE, NULL, 0, NULL }
#define RANGE(key, f, live, def, lo, hi, unit, note) \
	{ key, TK_UINT, FIELD(f), 0, live, parse_simple, def, NULL, \
	  UINT_KEY(key, struct config, f, lo, hi, unit, note), NULL, 0, NULL }
#define BOOL(key, f, live, def) \
	{ key, TK_INT, FIELD(f), 0, live, parse_simple, def, NULL, \
	  BOOL_KEY(key, struct config, f), NULL, 0, NULL }
#define NAMES(key, f, live, def, names) \
	{ key, TK_INT, FIELD(f), 0, live, parse_name, def, NULL, NO_SIMPLE, names, \
	  sizeof(names) / sizeof(names[0]), NULL }
#define OWN_STR(key, f, parse, def, keep) \
	{ key, STR(f), 0, parse, 0, def, NO_SIMPLE, NULL, 0, keep }

/* io-threads defaults to the number of CPUs: its row says 0, and
 * target_defaults asks sysconf. */
static const struct target_key target_keys[] = {
	OWN_STR("listen", listen_host, parse_listen, "", keep_listen),
	NUM("port", TK_U16, port, 0, parse_port, RB_DEFAULT_PORT),
	RANGE("queue-depth", queue_depth, 1, CONFIG_DEFAULT_QUEUE_DEPTH, 1,
	      CONFIG_MAX_QUEUE_DEPTH, "", ""),
	NUM("max-io", TK_UINT, max_io, 0, parse_max_io, CONFIG_DEFAULT_MAX_IO),
	RANGE("threads", threads, 0, 1, 1, CONFIG_MAX_LOOPS, "", " event loops"),
	RANGE("io-threads", io_threads, 0, 0, 1, CONFIG_MAX_THREADS, "", ""),
	NAMES("io-engine", io_engine, 0, IOQ_IO_URING, io_engine_names),
	NAMES("log-level", log_level, 1, LOG_LEVEL_INFO, log_level_names),
	NUM("buffer-pool", TK_U64, buffer_pool, 0, parse_buffer_pool, CONFIG_DEFAULT_POOL),
	NUM("inline-max", TK_UINT, inline_max, 1, parse_inline_max, CONFIG_DEFAULT_INLINE_MAX),
	OWN_STR("metrics-listen", metrics_listen_str, parse_metrics_listen, "",
		keep_metrics_listen),
	OWN_STR("admin-socket", admin_socket, parse_admin_socket, CONFIG_DEFAULT_ADMIN_SOCKET,
		keep_admin_socket),
	BOOL("stats", stats, 1, 1),
	RANGE("keepalive", keepalive, 1, CONFIG_DEFAULT_KEEPALIVE, 0, CONFIG_MAX_SECONDS,
	      "seconds, ", "; 0 disables"),
	RANGE("handshake-timeout", handshake_timeout, 1, CONFIG_DEFAULT_HANDSHAKE, 1,
	      CONFIG_MAX_SECONDS, "seconds, ", ""),
	/* New limits apply to new connections; none already set up is cut. */
	RANGE("max-connections-total", max_conns_total, 1, CONFIG_DEFAULT_MAX_CONNS_TOTAL, 1,
	      CONFIG_MAX_CONNS, "", ""),
	RANGE("max-handshakes", max_handshakes, 1, CONFIG_DEFAULT_MAX_HANDSHAKES, 1,
	      CONFIG_MAX_CONNS, "", ""),
	RANGE("max-connections-per-address", max_conns_per_addr, 1,
	      CONFIG_DEFAULT_MAX_CONNS_PER_ADDR, 1, CONFIG_MAX_CONNS, "", ""),
};
#define NKEYS (sizeof(target_keys) / sizeof(target_keys[0]))

void
target_defaults(struct config *c)
{
	const struct target_key *k;
	long n;

	for (k = target_keys; k < target_keys + NKEYS; k++) {
		if (k->type == TK_STR)
			snprintf(field(c, k), k->size, "%s", k->def_str);
		else
			set_num(c, k, k->def);
	}
	n = sysconf(_SC_NPROCESSORS_ONLN);
	c->io_threads = n < 1 ? 1 : n > CONFIG_MAX_THREADS ? CONFIG_MAX_THREADS : (unsigned)n;
}

int
target_key(struct parser *p, int line, const char *key, const char *val)
{
	const struct target_key *k;

	for (k = target_keys; k < target_keys + NKEYS; k++) {
		if (strcmp(k->key, key) == 0) {
			k->parse(p, line, k, val);
			return 1;
		}
	}
	return 0;
}

/* KEY's value in c as the config file would say it. */
static void
show(const struct config *c, const struct target_key *k, char *buf, size_t len)
{
	const char *s = cfield(c, k);
	uint64_t v;

	if (k->type == TK_STR) {
		snprintf(buf, len, "%s", s[0] != '\0' ? s : "none");
		return;
	}
	v = get_num(c, k);
	if (k->names != NULL && v < k->nnames)
		snprintf(buf, len, "%s", k->names[v]);
	else if (k->simple.is_bool)
		snprintf(buf, len, "%s", v ? "yes" : "no");
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
}

static int
differs(const struct config *a, const struct config *b, const struct target_key *k)
{
	if (k->type == TK_STR)
		return strncmp(cfield(a, k), cfield(b, k), k->size) != 0;
	return get_num(a, k) != get_num(b, k);
}

unsigned
config_keep_restart_only(const struct config *run, struct config *nc,
			 config_error_fn *fn, void *arg)
{
	const struct target_key *k;
	char was[128], now[128], msg[400];
	unsigned n = 0;

	for (k = target_keys; k < target_keys + NKEYS; k++) {
		if (k->live || !differs(run, nc, k))
			continue;
		show(nc, k, now, sizeof(now));
		show(run, k, was, sizeof(was));
		snprintf(msg, sizeof(msg), "reload: %s = %s needs a restart; keeping %s",
			 k->key, now, was);
		config_say(fn, arg, msg);
		if (k->keep != NULL)
			k->keep(nc, run);
		else if (k->type == TK_STR)
			memcpy(field(nc, k), cfield(run, k), k->size);
		else
			set_num(nc, k, get_num(run, k));
		n++;
	}
	/* listen's port is the port key's: set in check_target. */
	if (n > 0)
		config_listen_port(nc);
	return n;
}
