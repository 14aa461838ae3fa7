/* The initiator's key=value parameters, one parser for every front end
 * (plugin/rdma.c, ublk/).  Each key has one small setter; hostname= is
 * kept apart in set_hostname so that what it accepts can change alone. */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "hostlist.h"
#include "protocol.h"
#include "rdmablk.h"
#include "util.h"

static int
bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int
set_string(char **slot, const char **pub, const char *value, char *err,
	   size_t errlen)
{
	char *copy = strdup(value);

	if (copy == NULL)
		return bad(err, errlen, "out of memory");
	free(*slot);
	*slot = copy;
	if (pub != NULL)
		*pub = copy;
	return 0;
}

static int
set_uint(const char *key, const char *value, uint64_t min, uint64_t max,
	 unsigned *out, char *err, size_t errlen)
{
	uint64_t v;

	if (rb_parse_uint(value, min, max, &v) < 0)
		return bad(err, errlen, "invalid %s '%s': expected an integer in "
			   "%llu..%llu", key, value, (unsigned long long)min,
			   (unsigned long long)max);
	*out = (unsigned)v;
	return 0;
}

/* hostname=: one target or a comma-separated list of them (hostlist.c),
 * names or numeric addresses, resolved later.  Checked now, so a bad entry
 * is reported with the key. */
static int
set_hostname(struct rb_opts *o, const char *value, char *err, size_t errlen)
{
	struct rb_host_entry entries[RB_MAX_TARGETS];
	unsigned n;

	if (rb_host_list_parse(value, entries, RB_MAX_TARGETS, &n, err, errlen) < 0)
		return -EINVAL;
	free(o->host_);
	o->host_ = NULL;
	o->host = NULL;
	o->ntargets = 0;
	return set_string(&o->hostname_, NULL, value, err, errlen);
}

/* A relative path is made absolute now: a daemon may chdir("/") later. */
static int
set_secret_file(struct rb_opts *o, const char *value, char *err, size_t errlen)
{
	char cwd[4096], *abs;

	if (value[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
		return set_string(&o->secret_, &o->secret_file, value, err, errlen);
	if (asprintf(&abs, "%s/%s", cwd, value) < 0)
		return bad(err, errlen, "out of memory");
	free(o->secret_);
	o->secret_ = abs;
	o->secret_file = abs;
	return 0;
}

int
rb_opts_set(struct rb_opts *o, const char *key, const char *value,
	    char *err, size_t errlen)
{
	const char *why = "";
	unsigned v = 0;
	int b;

	if (strcmp(key, "hostname") == 0)
		return set_hostname(o, value, err, errlen);
	if (strcmp(key, "port") == 0) {
		if (set_uint(key, value, 1, 65535, &v, err, errlen) < 0)
			return -EINVAL;
		o->port = (uint16_t)v;
		return 0;
	}
	if (strcmp(key, "export") == 0) {
		if (rb_export_name_valid(value, &why) < 0)
			return bad(err, errlen, "invalid export '%s': %s", value, why);
		return set_string(&o->export_, &o->export_name, value, err, errlen);
	}
	if (strcmp(key, "queue-depth") == 0)
		return set_uint(key, value, 1, RB_MAX_QUEUE_DEPTH, &o->queue_depth, err, errlen);
	if (strcmp(key, "timeout") == 0)
		return set_uint(key, value, 1, 86400, &o->timeout_s, err, errlen);
	if (strcmp(key, "retry") == 0)
		return set_uint(key, value, 0, 1000, &o->retry, err, errlen);
	if (strcmp(key, "keepalive") == 0)
		return set_uint(key, value, 0, 3600, &o->keepalive_s, err, errlen);
	if (strcmp(key, "busy-poll") == 0) {
		if (strcmp(value, "adaptive") == 0) {
			o->busy_poll = RB_BUSY_POLL_ADAPTIVE;
			return 0;
		}
		if (rb_parse_bool(value, &b) < 0)
			return bad(err, errlen, "invalid busy-poll '%s': expected adaptive, or a "
				   "boolean (true/false, on/off, 1/0)", value);
		o->busy_poll = b ? RB_BUSY_POLL_YES : RB_BUSY_POLL_NO;
		return 0;
	}
	if (strcmp(key, "secret-file") == 0)
		return set_secret_file(o, value, err, errlen);
	if (strcmp(key, "source-address") == 0) {
		struct sockaddr_storage ss;
		socklen_t len;

		if (strlen(value) >= 64 || rb_sockaddr_parse(value, 0, &ss, &len) < 0)
			return bad(err, errlen, "invalid source-address '%s': not a numeric "
				   "IPv4 or IPv6 address", value);
		return set_string(&o->source_, &o->source, value, err, errlen);
	}
	if (strcmp(key, "mr") == 0) {
		if (strcmp(value, "window") == 0)
			o->mr = RB_MR_WINDOW;
		else if (strcmp(value, "static") == 0)
			o->mr = RB_MR_STATIC;
		else
			return bad(err, errlen, "mr: '%s' is not window or static", value);
		return 0;
	}
	snprintf(err, errlen, "unknown parameter '%s'", key);
	return -ENOENT;
}

/* RDMA CM wants a numeric address: resolve one entry's name, once, here. */
static int
resolve_entry(const struct rb_host_entry *e, unsigned idx, unsigned n,
	      struct rb_target *t, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char where[32] = "";
	int r;

	if (n > 1)
		snprintf(where, sizeof(where), " (entry %u)", idx + 1);
	r = getaddrinfo(e->name, NULL, &hints, &ai);
	if (r != 0)
		return bad(err, errlen, "hostname '%s'%s: %s", e->name, where,
			   gai_strerror(r));
	r = getnameinfo(ai->ai_addr, ai->ai_addrlen, t->host, sizeof(t->host), NULL,
			0, NI_NUMERICHOST);
	freeaddrinfo(ai);
	if (r != 0)
		return bad(err, errlen, "hostname '%s'%s: %s", e->name, where,
			   gai_strerror(r));
	return 0;
}

int
rb_opts_resolve(struct rb_opts *o, char *err, size_t errlen)
{
	struct rb_host_entry entries[RB_MAX_TARGETS];
	unsigned n, i, j;

	if (o->hostname_ == NULL)
		return bad(err, errlen, "the hostname parameter is required");
	if (rb_host_list_parse(o->hostname_, entries, RB_MAX_TARGETS, &n, err,
			       errlen) < 0)
		return -EINVAL;
	o->ntargets = 0;
	for (i = 0; i < n; i++) {
		struct rb_target *t = &o->targets[i];

		if (resolve_entry(&entries[i], i, n, t, err, errlen) < 0)
			return -EINVAL;
		t->port = entries[i].port != 0 ? entries[i].port : o->port;
		for (j = 0; j < i; j++)
			if (strcmp(o->targets[j].host, t->host) == 0 &&
			    o->targets[j].port == t->port)
				return bad(err, errlen, "hostname entries %u and %u "
					   "are the same target, %s port %u", j + 1,
					   i + 1, t->host, t->port);
	}
	o->ntargets = n;
	return set_string(&o->host_, &o->host, o->targets[0].host, err, errlen);
}

void
rb_opts_free(struct rb_opts *o)
{
	free(o->hostname_);
	free(o->host_);
	free(o->export_);
	free(o->secret_);
	free(o->source_);
	rb_opts_init(o);
}
