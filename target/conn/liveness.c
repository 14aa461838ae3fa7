/* Connection deadlines: a handshake must finish in time, and a silent
 * connection is probed, so that a peer that vanished without a disconnect
 * (a cable pulled, a host powered off) is noticed and its resources freed.
 *
 * The probe is a signaled zero-length RDMA WRITE: it carries no data and
 * needs no key (IBTA C9-88), consumes nothing at the initiator and produces
 * no completion there, yet it must be acknowledged, so against a dead peer
 * it fails once the RC retries run out, and conn_handle_wc tears the
 * connection down.  A probe that does not complete at all (seen on rxe with
 * the netdev down) fails the connection after PROBE_DEADLINE. */
#include <string.h>

#include "conn.h"
#include "log.h"

#define NS_PER_S 1000000000ull
/* 3 x keepalive, as the initiator waits for its NOPs, but at least 10 s:
 * the retries of a live but slow peer (an overloaded host, a congested
 * link) must not count as death. */
#define PROBE_DEADLINE_S(ka) ((ka) * 3 > 10 ? (ka) * 3 : 10)
/* Send WRs outstanding and none completed for this long: the oldest is at
 * least this old (an RC send queue completes in order), so the peer does
 * not take what we send (it posts no receives, or is gone).  RNR retries
 * (CONN_RNR_RETRY, at most ~4 s) and a live peer's RC retries end sooner. */
#define CONN_SEND_STALL_S 10

static void
conn_probe(struct conn *c)
{
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&c->probe_ctx;
	wr.opcode = IBV_WR_RDMA_WRITE;
	if (conn_post_own(c, &wr, "liveness probe") < 0)
		return;
	c->probe_busy = 1;
	stats_count(c->t, &c->t->stats.probes[STATS_PROBE_POSTED]);
	c->probe_deadline_ns = rb_now_ns() +
		PROBE_DEADLINE_S(c->t->cfg->keepalive) * NS_PER_S;
	log_debug("%s: silent for %u s: liveness probe posted", c->peer,
		  c->t->cfg->keepalive);
}

void
conn_watch(struct conn *c, uint64_t now)
{
	const struct config *cfg = c->t->cfg;

	if (c->alive_seen) {
		c->alive_seen = 0;
		c->alive_ns = now;
	}
	switch (c->state) {
	case CONN_ACCEPTING:
	case CONN_HELLO:
	case CONN_LINGER:     /* a refusal or LIST reply that never completes */
		if (now - c->created_ns >= cfg->handshake_timeout * NS_PER_S)
			conn_fail(c, c->state == CONN_LINGER ?
				  "final reply not sent within handshake-timeout" :
				  c->auth_pending ? "no AUTH within handshake-timeout" :
				  "no HELLO within handshake-timeout");
		return;
	case CONN_READY:
	case CONN_DRAINING:
		break;
	default:
		return;
	}
	/* About to judge the peer by its send completions: reap those that
	 * came since the round's last poll of the send CQ first (the
	 * channel's handler polls only the receive CQ; conn_after_round
	 * polls the send CQ after this), or a probe or stall that ended just
	 * now would count against a live peer. */
	if ((c->probe_busy && now >= c->probe_deadline_ns) ||
	    (c->sq_stall_ns != 0 && now - c->sq_stall_ns >= CONN_SEND_STALL_S * NS_PER_S)) {
		conn_poll_cq(c, c->send_cq);
		if (c->state == CONN_ERROR)
			return;
	}
	if (c->sq_used > 0 && c->send_done == c->send_done_seen) {
		if (c->sq_stall_ns == 0) {
			c->sq_stall_ns = now;
		} else if (now - c->sq_stall_ns >= CONN_SEND_STALL_S * NS_PER_S) {
			log_warnx("%s: %u send WRs outstanding, none completed for %u s",
				  c->peer, c->sq_used, CONN_SEND_STALL_S);
			conn_fail(c, "send queue stalled");
			return;
		}
	} else {
		c->sq_stall_ns = 0;
	}
	c->send_done_seen = c->send_done;
	if (c->probe_busy && now >= c->probe_deadline_ns) {
		log_warnx("%s: liveness probe unanswered", c->peer);
		stats_count(c->t, &c->t->stats.probes[STATS_PROBE_UNANSWERED]);
		conn_fail(c, "peer unreachable");
		return;
	}
	if (cfg->keepalive == 0 || c->probe_busy || c->sq_used >= c->sq_depth)
		return;
	if (now - c->alive_ns >= cfg->keepalive * NS_PER_S)
		conn_probe(c);
}
