/* A connection's send queue (target/conn/conn.h): the round's chain of WRs,
 * slot accounting, back-pressure, and resuming what waits for room. */
#include <string.h>

#include "conn.h"
#include "log.h"
#include "req/request.h"

int
conn_post_own(struct conn *c, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad = NULL;
	int rc;

	conn_post_sends(c);     /* keep the order of what was queued before */
	wr->send_flags |= IBV_SEND_SIGNALED;
	wr->next = NULL;
	c->sq_used++;
	rc = ibv_post_send(c->qp, wr, &bad);
	if (rc != 0) {
		c->sq_used--;
		log_warnx("%s: ibv_post_send (%s): %s", c->peer, what, strerror(rc));
		conn_fail(c, "cannot post a work request");
		return -1;
	}
	return 0;
}


void
conn_queue_send(struct conn *c, struct ibv_send_wr *first, struct ibv_send_wr *last)
{
	struct ibv_send_wr *wr;

	for (wr = first; ; wr = wr->next) {
		if (wr->opcode == IBV_WR_RDMA_READ)
			c->reads_pending++;
		if (wr == last)
			break;
	}
	last->next = NULL;
	if (c->post_tail != NULL)
		c->post_tail->next = first;
	else
		c->post_head = first;
	c->post_tail = last;
}

/* bad and the WRs after it were not posted: give back their slots (one
 * each) and let their requests move on (the connection is in error by
 * now).  The WRs before bad were posted and will complete or flush. */
static void
conn_unpost(struct conn *c, struct ibv_send_wr *first, struct ibv_send_wr *bad)
{
	struct ibv_send_wr *wr, *next, *prev = NULL;
	const struct wr_ctx *ctx, *pctx;
	int data_posted;

	for (wr = first; wr != NULL && wr != bad; wr = wr->next)
		prev = wr;
	for (wr = bad; wr != NULL; wr = next) {
		next = wr->next;
		ctx = (const struct wr_ctx *)(uintptr_t)wr->wr_id;
		pctx = prev != NULL ? (const struct wr_ctx *)(uintptr_t)prev->wr_id : NULL;
		/* A READ reply whose RDMA WRITE went out but whose SEND did not. */
		data_posted = wr == bad && ctx->type == WR_SEND && pctx != NULL &&
			pctx->type == WR_DATA && pctx->obj == ctx->obj;
		c->sq_used--;
		if (wr->opcode == IBV_WR_RDMA_READ)
			c->reads_pending--;
		req_unposted(ctx->obj, ctx, data_posted);
	}
}

void
conn_post_sends(struct conn *c)
{
	struct ibv_send_wr *first = c->post_head, *bad = NULL;
	int rc;

	if (first == NULL)
		return;
	c->post_head = c->post_tail = NULL;
	if (c->state == CONN_ERROR || c->qp == NULL) {
		conn_unpost(c, first, first);
		return;
	}
	rc = ibv_post_send(c->qp, first, &bad);
	if (rc == 0)
		return;
	log_warnx("%s: ibv_post_send (chained request WRs): %s", c->peer, strerror(rc));
	conn_fail(c, "cannot post a work request");
	conn_unpost(c, first, bad != NULL ? bad : first);
}

/* 1 when a request waits for a quota (pool share, slow-job slots) that
 * has room now. */
static int
conn_quota_room(const struct conn *c)
{
	return (c->rq.cap_waiters > 0 && c->rq.bufs_held < c->rq.buf_cap) ||
	       (c->rq.slot_waiters > 0 && c->rq.slow_inflight < c->rq.slow_quota);
}

/* Does anything wait for a send completion?  Reply SENDs alone do not:
 * their completions only free slots and buffers, and are reaped by
 * polling each round.  RDMA READs (a WRITE's data), control SENDs and
 * the probe do, and so does anyone short of slots or buffers. */
static int
conn_wants_send_events(const struct conn *c)
{
	return c->reads_pending > 0 || c->state != CONN_READY || c->ctrl_busy ||
	       c->probe_busy || !waitq_empty(&c->sq_wait) || !STAILQ_EMPTY(&c->backlog) ||
	       c->rq.cap_waiters > 0 ||
	       (c->sq_used > 0 && pool_has_waiters(c->rq.pool));
}

/* Nothing for the round's end to do on c: it is ready, its channel did
 * not fire, no send WR is queued or outstanding (sq_used counts both, so
 * no send completion can come and none needs arming for), and no request
 * waits for room, a quota or a control or probe SEND.  Every round ends
 * by visiting each connection of its loop; a quiet one costs this test
 * instead of three CQ polls, two re-arm checks and the waiters' scans.
 * Whatever makes it busy (a receive, backing I/O done, a reply or probe
 * queued, a drain) changes one of these before the round's end. */
int
conn_quiet(const struct conn *c)
{
	return c->state == CONN_READY && !c->cq_event && c->sq_used == 0 &&
	       !c->ctrl_busy && !c->probe_busy && waitq_empty(&c->sq_wait) &&
	       STAILQ_EMPTY(&c->backlog) && c->rq.cap_waiters == 0 && c->rq.slot_waiters == 0;
}

/* Post the round's WRs; then read the channel's event and re-arm the
 * receive CQ (conn_cq_rearm); reap send completions and arm the send CQ
 * when something waits for one, then poll again (a completion between
 * the poll and the arm is not lost).  Posts what the completions queued. */
int
conn_send_arm(struct conn *c)
{
	int was_error = c->state == CONN_ERROR;
	unsigned reaped, late;

	if (conn_quiet(c))
		return 0;
	conn_post_sends(c);
	/* The round's replies are out: now read the channel's event and
	 * re-arm.  What the poll after arming finds runs now, and its WRs go
	 * out below or, with backing I/O, in the round this asks for. */
	late = conn_cq_rearm(c);
	reaped = conn_poll_cq(c, c->send_cq);
	if (!c->send_armed && conn_wants_send_events(c)) {
		if (ibv_req_notify_cq(c->send_cq, 0) != 0) {
			conn_fail(c, "ibv_req_notify_cq failed");
		} else {
			c->send_armed = 1;
			reaped += conn_poll_cq(c, c->send_cq);
		}
	}
	conn_post_sends(c);
	/* Failed here (a post, an arm, or what the late poll found): its
	 * teardown runs next round, not after the next event or tick. */
	if (c->state == CONN_ERROR)
		return !was_error;
	/* What the poll after re-arming handled, or what was reaped here,
	 * may need the round's work again: completions reaped here freed SQ
	 * slots, request slots or buffers after this round's conn_resume and
	 * pool_service ran. */
	return late > 0 ||
	       (reaped > 0 && (!waitq_empty(&c->sq_wait) || !STAILQ_EMPTY(&c->backlog) ||
			       conn_quota_room(c)));
}

/* ---- send-queue accounting ---- */

int
conn_sq_reserve(struct conn *c, struct req *r, unsigned n)
{
	struct waiter *first = waitq_first(&c->sq_wait);

	if (c->sq_used + n <= c->sq_depth && (first == NULL || first == &r->wait)) {
		waiter_cancel(&r->wait);
		c->sq_used += n;
		return 1;
	}
	waitq_add(&c->sq_wait, &r->wait);
	return 0;
}

void
conn_sq_release(struct conn *c, unsigned n)
{
	c->sq_used -= n;
}

/* ---- after each event-loop round ---- */

void
conn_resume(struct conn *c)
{
	struct waiter *w;
	unsigned i;

	/* Requests that wait for the connection's share of the pool or of
	 * the slow-job slots. */
	for (i = 0; i < c->rq.nreqs && conn_quota_room(c) && c->state != CONN_ERROR; i++)
		if ((c->rq.reqs[i].cap_wait && c->rq.bufs_held < c->rq.buf_cap) ||
		    (c->rq.reqs[i].slot_wait && c->rq.slow_inflight < c->rq.slow_quota))
			req_process(&c->rq.reqs[i]);

	while ((w = waitq_first(&c->sq_wait)) != NULL && c->sq_used < c->sq_depth &&
	       c->state != CONN_ERROR) {
		w->wake(w);
		if (waitq_first(&c->sq_wait) == w)
			break;    /* still no room for it */
	}
	if (c->state == CONN_READY || c->state == CONN_DRAINING)
		conn_start_backlog(c);
}
