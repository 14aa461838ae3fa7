/* The client's options: their defaults (rb_opts_init) and the checks that
 * turn them into a connection config, a target list and timeouts. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "util.h"

/* With several targets, one connect attempt gets timeout / ntargets, but at
 * least this, so that a silent host cannot eat the whole budget. */
#define ATTEMPT_MIN_NS     (2000 * 1000000ull)

void
rb_opts_init(struct rb_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->port = RB_DEFAULT_PORT;
	o->queue_depth = RB_DEFAULT_QUEUE_DEPTH;
	o->max_io = RB_DEFAULT_MAX_IO;
	o->timeout_s = RB_DEFAULT_TIMEOUT_S;
	o->keepalive_s = RB_DEFAULT_KEEPALIVE_S;
	o->mr = RB_MR_WINDOW;
}

int
rb_client_cfg_from_opts(struct rb_client *c, const struct rb_opts *o,
			int need_export)
{
	const char *why = "";

	if (o->ntargets > RB_MAX_TARGETS) {
		rb_log(RB_LOG_ERROR, "%u targets given, at most %u", o->ntargets,
		       RB_MAX_TARGETS);
		return -EINVAL;
	}
	if (o->ntargets == 0 &&
	    (o->host == NULL || strlen(o->host) >= sizeof(c->cfg.host))) {
		rb_log(RB_LOG_ERROR, "no target address given");
		return -EINVAL;
	}
	if (o->source != NULL && strlen(o->source) >= sizeof(c->cfg.source)) {
		rb_log(RB_LOG_ERROR, "source address '%s' is too long", o->source);
		return -EINVAL;
	}
	if (need_export && (o->export_name == NULL ||
			    rb_export_name_valid(o->export_name, &why) < 0)) {
		rb_log(RB_LOG_ERROR, "export name '%s': %s",
		       o->export_name ? o->export_name : "", o->export_name ? why : "missing");
		return -EINVAL;
	}
	if (o->queue_depth < 1 || o->queue_depth > RB_MAX_QUEUE_DEPTH) {
		rb_log(RB_LOG_ERROR, "queue depth %u is not in 1..%u",
		       o->queue_depth, RB_MAX_QUEUE_DEPTH);
		return -EINVAL;
	}
	if (o->max_io < 4096 || o->max_io % 4096 != 0 || o->max_io > (64u << 20)) {
		rb_log(RB_LOG_ERROR, "max-io %u is not a multiple of 4096 in 4K..64M",
		       o->max_io);
		return -EINVAL;
	}
	if (o->timeout_s == 0) {
		rb_log(RB_LOG_ERROR, "timeout must be at least 1 second");
		return -EINVAL;
	}
	memset(&c->cfg, 0, sizeof(c->cfg));
	if (o->ntargets > 0) {
		memcpy(c->targets, o->targets, o->ntargets * sizeof(o->targets[0]));
		c->ntargets = o->ntargets;
	} else {
		snprintf(c->targets[0].host, sizeof(c->targets[0].host), "%s", o->host);
		c->targets[0].port = o->port;
		c->ntargets = 1;
	}
	snprintf(c->cfg.host, sizeof(c->cfg.host), "%s", c->targets[0].host);
	c->cfg.port = c->targets[0].port;
	if (o->source != NULL)
		snprintf(c->cfg.source, sizeof(c->cfg.source), "%s", o->source);
	if (o->export_name != NULL)
		snprintf(c->cfg.export_name, sizeof(c->cfg.export_name), "%s",
			 o->export_name);
	c->cfg.queue_depth = o->queue_depth;
	c->cfg.max_io = o->max_io;
	c->cfg.keepalive_ns = (uint64_t)o->keepalive_s * 1000000000u;
	c->cfg.busy_poll = o->busy_poll;
	c->cfg.stats = &c->stats;
	c->cfg.mr_static = o->mr == RB_MR_STATIC;
	if (o->mr != RB_MR_WINDOW && o->mr != RB_MR_STATIC) {
		rb_log(RB_LOG_ERROR, "mr: unknown mode %d", o->mr);
		return -EINVAL;
	}
	c->timeout_ns = (uint64_t)o->timeout_s * 1000000000u;
	c->attempt_ns = c->timeout_ns / c->ntargets;
	if (c->attempt_ns < ATTEMPT_MIN_NS)
		c->attempt_ns = ATTEMPT_MIN_NS;
	c->retry = o->retry;
	if (need_export && o->secret_file != NULL) {
		char msg[512];

		if (rb_secret_load(o->secret_file, &c->secret, msg, sizeof(msg)) < 0) {
			rb_log(RB_LOG_ERROR, "%s", msg);
			return -EACCES;
		}
		c->cfg.secret = &c->secret;
	}
	return 0;
}
