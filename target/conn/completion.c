/* Completion dispatch of a connection (target/conn/conn.h): each work
 * completion to its request, the handshake or the connection; received
 * messages routed by the connection's state. */
#include "conn.h"
#include "log.h"
#include "req/request.h"
#include "util.h"

static void
conn_request(struct conn *c, struct recv_buf *rb)
{
	if (c->rq.credits_used >= c->qd) {
		conn_fail(c, "protocol violation: more requests outstanding than granted");
		return;
	}
	c->rq.credits_used++;
	rb->msg.arrived_ns = rb_now_ns();
	/* When every slot waits for a SEND completion, the message waits. */
	STAILQ_INSERT_TAIL(&c->backlog, rb, backlog_link);
	conn_start_backlog(c);
}

void
conn_start_backlog(struct conn *c)
{
	struct recv_buf *rb;
	struct req *r;

	while ((rb = STAILQ_FIRST(&c->backlog)) != NULL &&
	       (r = SLIST_FIRST(&c->rq.free_reqs)) != NULL) {
		STAILQ_REMOVE_HEAD(&c->backlog, backlog_link);
		SLIST_REMOVE_HEAD(&c->rq.free_reqs, free_link);
		req_start(r, &rb->msg);
	}
}

static void
conn_recv(struct conn *c, struct recv_buf *rb)
{
	const char *why = "?";
	uint8_t type;

	if (c->state == CONN_ERROR || c->state == CONN_LINGER || c->state == CONN_DRAINING)
		return;   /* dropped: the connection is going away */
	if (rb_msg_peek(rb->msg.buf, rb->msg.len, &type, &why) < 0) {
		conn_fail(c, why);
		return;
	}
	switch (c->state) {
	case CONN_ACCEPTING:
	case CONN_HELLO:
		conn_handshake_recv(c, rb, type);
		break;
	case CONN_READY:
		if (type != RB_MSG_REQUEST) {
			conn_fail(c, "protocol violation: unexpected message after HELLO");
			return;
		}
		conn_request(c, rb);
		break;
	default:
		break;
	}
}


static const char *
wr_type_name(enum wr_type type)
{
	switch (type) {
	case WR_RECV: return "receive";
	case WR_SEND: return "reply send";
	/* "RDMA completion failed: remote access error" is what
	 * tests/test-hostile.sh looks for: the same word for both. */
	case WR_RDMA: return "RDMA";
	case WR_DATA: return "RDMA";
	case WR_CTRL: return "control send";
	case WR_PROBE: return "liveness probe";
	}
	return "?";
}

static void
conn_handle_wc(struct conn *c, const struct ibv_wc *wc)
{
	/* On error only wr_id, status, qp_num and vendor_err are valid. */
	struct wr_ctx *ctx = (struct wr_ctx *)(uintptr_t)wc->wr_id;
	int ok = wc->status == IBV_WC_SUCCESS;

	c->alive_seen |= ok;
	if (!ok) {
		if (wc->status == IBV_WC_WR_FLUSH_ERR) {
			conn_close(c, "queue pair flushed");
		} else {
			log_warnx("%s: %s completion failed: %s (vendor error 0x%x)", c->peer,
				  wr_type_name(ctx->type), ibv_wc_status_str(wc->status),
				  wc->vendor_err);
			/* A failed probe is one whose error puts the connection
			 * in error: not the late error of one already counted
			 * unanswered. */
			if (ctx->type == WR_PROBE && c->state != CONN_ERROR)
				stats_count(c->t, &c->t->stats.probes[STATS_PROBE_FAILED]);
			conn_fail(c, "work completion error");
		}
	}
	switch (ctx->type) {
	case WR_RECV:
		if (ok) {
			struct recv_buf *rb = ctx->obj;

			rb->msg.len = wc->byte_len;
			conn_recv(c, rb);
		}
		break;
	case WR_SEND:
		c->send_done++;
		/* Its own slot and that of the unsignaled WRITE before it. */
		c->sq_used -= ((struct req *)ctx->obj)->send_slots;
		req_send_done(ctx->obj, ok);
		break;
	case WR_RDMA:
		c->send_done++;
		c->sq_used--;
		c->reads_pending--;
		req_rdma_done(ctx->obj, ok);
		break;
	case WR_DATA:
		/* Only a failed unsignaled WRITE completes; its slot is freed
		 * with its SEND's completion, unless that SEND was never
		 * posted. */
		if (((struct req *)ctx->obj)->data_orphan)
			c->sq_used--;
		req_data_done(ctx->obj, ok);
		break;
	case WR_CTRL:
		c->send_done++;
		c->sq_used--;
		if (c->ctrl_busy > 0)
			c->ctrl_busy--;
		if (c->state == CONN_LINGER && c->ctrl_busy == 0)
			conn_close(c, "final control reply sent");
		break;
	case WR_PROBE:
		c->send_done++;
		c->sq_used--;
		c->probe_busy = 0;
		break;
	}
}

#define POLL_BATCH 16

/* Returns the number of completions handled.  A poll that returns fewer
 * than it asked for found the CQ empty: the next poll would find only
 * what arrived since, and costs a lock and an unlock on rxe.  Whatever
 * arrives later is reaped by the round's next poll, or raises the event
 * of a CQ armed before its last poll. */
unsigned
conn_poll_cq(struct conn *c, struct ibv_cq *cq)
{
	struct ibv_wc wc[POLL_BATCH];
	unsigned total = 0;
	int n, i;

	do {
		n = ibv_poll_cq(cq, POLL_BATCH, wc);
		for (i = 0; i < n; i++)
			conn_handle_wc(c, &wc[i]);
		if (n > 0)
			total += (unsigned)n;
	} while (n == POLL_BATCH);
	if (n < 0) {
		log_warnx("%s: ibv_poll_cq failed (%d)", c->peer, n);
		conn_fail(c, "cannot poll the completion queue");
	}
	return total;
}

/* The channel fired.  Only the receive poll happens now: the requests it
 * starts make this round's replies, which conn_send_arm posts at the
 * round's end before it reads the event and re-arms (conn_cq_rearm).  So
 * the two syscalls of the wake-up are off each request's path.  The
 * channel fd stays readable until then, so no round sleeps with an event
 * unread.  The send CQ (whether its event or the receive CQ's fired) is
 * polled by conn_after_round, which cq_event makes run this round, before
 * it resumes the requests waiting for what those completions free. */
void
conn_cq_event(struct ep_handler *eh, uint32_t events)
{
	struct conn *c = eh->obj;

	(void)events;
	c->cq_event = 1;
	conn_poll_cq(c, c->recv_cq);
}

unsigned
conn_cq_rearm(struct conn *c)
{
	struct ibv_cq *cq;
	void *ctx;
	unsigned nsend = 0, nrecv = 0, most;

	if (!c->cq_event)
		return 0;
	c->cq_event = 0;
	/* Each armed CQ raises at most one event: the receive CQ is armed
	 * until its event fires (then re-armed below), the send CQ when
	 * send_armed says so.  Reading more than that many would only find
	 * the channel empty (EAGAIN), one syscall per wake-up. */
	most = 1 + (c->send_armed ? 1u : 0u);
	while (nsend + nrecv < most && ibv_get_cq_event(c->channel, &cq, &ctx) == 0) {
		if (cq == c->send_cq)
			nsend++;
		else
			nrecv++;
	}
	if (nsend) {
		ibv_ack_cq_events(c->send_cq, nsend);
		c->send_armed = 0;      /* conn_send_arm decides next */
	}
	if (nrecv == 0)
		return 0;
	ibv_ack_cq_events(c->recv_cq, nrecv);
	/* A CQ stays armed until its event fires: re-arm only the one that
	 * fired, then poll it again, so that a completion that arrived
	 * between the last poll and the arm is not lost. */
	if (ibv_req_notify_cq(c->recv_cq, 0) != 0) {
		conn_fail(c, "ibv_req_notify_cq failed");
		return 0;
	}
	return conn_poll_cq(c, c->recv_cq);
}
