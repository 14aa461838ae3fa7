/* Reload revokes what the new config no longer grants.
 *
 * A connection got its rights at HELLO: its address was allowed, it proved
 * the export's key (or the export had none), and it was told the export's
 * size.  After a reload (exports_apply) every live connection is checked
 * again against its export's new config, with the questions HELLO asks;
 * one that would not be admitted now is drained: the requests it already
 * sent finish, what it sends after is dropped, then it is disconnected.
 * Its initiator's reconnect meets the new config like any new connection.
 *
 * Only rights are taken back: a grown export, a removed allow list or a
 * removed secret leave connections alone, since a new connection would get
 * at least as much. */
#include <stdio.h>

#include "auth.h"
#include "conn.h"
#include "core/loop.h"
#include "core/target.h"
#include "log.h"

int
conn_key_stale(const struct conn *c, const struct cfg_export *ce)
{
	const struct rb_secret *want;
	uint8_t id[RB_MAC_LEN];
	int stale;

	want = cfg_export_secret(ce, (const struct sockaddr *)&c->peer_sa);
	if (want == NULL)
		return 0;
	if (!c->key_set)
		return 1;
	if (rb_secret_id(want, id) < 0) {
		log_warnx("%s: cannot compute the identity of export %s's key", c->peer,
			  ce->name);
		return 1;   /* cannot tell: the key is not proven */
	}
	stale = !rb_auth_mac_equal(id, c->key_id);
	rb_auth_wipe(id, sizeof(id));
	return stale;
}

/* Why c would not be admitted to its export now, in words for the log
 * (buf holds them when they need numbers), or NULL when it would. */
static const char *
conn_revoke_reason(const struct conn *c, char *buf, size_t len,
		   enum stats_revocation *why)
{
	const struct cfg_export *ce = c->rq.exp->cfg;

	if (!cfg_export_allows(ce, (const struct sockaddr *)&c->peer_sa)) {
		*why = STATS_REVOKED_ADDRESS;
		return "its address is no longer in the export's allow list";
	}
	if (conn_key_stale(c, ce)) {
		*why = STATS_REVOKED_SECRET;
		return c->key_set ? "the export's secret-file changed: it authenticated "
				    "with the old key" :
				    "the export now has a secret-file: it authenticated with none";
	}
	if (c->rq.lim.export_size > ce->size) {
		*why = STATS_REVOKED_SIZE;
		snprintf(buf, len, "the export shrank to %llu bytes: it negotiated %llu",
			 (unsigned long long)ce->size, (unsigned long long)c->rq.lim.export_size);
		return buf;
	}
	return NULL;
}

void
conns_revoke(struct target *t)
{
	enum stats_revocation why;
	const char *reason;
	struct conn *c;
	unsigned li;
	char buf[128];

	/* loop 0, reloading: every loop is stopped (loop.h) */
	FOR_EACH_CONN(t, li, c) {
		/* A removed or replaced export drains its connections itself;
		 * one still in its handshake is checked after AUTH
		 * (conn_hello_finish); a draining one is leaving anyway. */
		if (c->state != CONN_READY || c->rq.exp == NULL || c->rq.exp->removed)
			continue;
		reason = conn_revoke_reason(c, buf, sizeof(buf), &why);
		if (reason == NULL)
			continue;
		log_warnx("%s: export %s: reload revokes connection %llu: %s", c->peer,
			  c->rq.exp->cfg->name, (unsigned long long)c->id, reason);
		stats_revoked(t, why);
		conn_drain(c);
	}
}
