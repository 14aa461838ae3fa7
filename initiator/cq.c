/* The completion thread: sleeps on the CQ's completion channel (or spins in
 * busy-poll mode), completes slots, reposts receives, sends keepalive NOPs
 * and notices dead connections. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"
#include "util.h"

#define CQ_BATCH 16

int
rb_post_request(struct rb_conn *conn, struct rb_slot *s, const struct rb_req_info *ri)
{
	size_t len = rb_request_encode(s->send_buf, ri);
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->send_buf,
		.length = (uint32_t)len,
		.lkey = conn->send.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = (uintptr_t)&s->ctx,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, bind, *bad;
	int r;

	if (s->bind_len == 0)
		return -ibv_post_send(conn->id->qp, &wr, &bad);
	/* Bind the slot's window over exactly the request's bytes, on this
	 * QP, ahead of the SEND: the target sees the key only after the
	 * bind (send queue order). */
	memset(&bind, 0, sizeof(bind));
	bind.wr_id = (uintptr_t)&s->bind_ctx;
	bind.opcode = IBV_WR_BIND_MW;
	bind.bind_mw.mw = s->mw;
	bind.bind_mw.rkey = s->rkey;
	bind.bind_mw.bind_info.mr = conn->data.mr;
	bind.bind_mw.bind_info.addr = (uintptr_t)s->data;
	bind.bind_mw.bind_info.length = s->bind_len;
	bind.bind_mw.bind_info.mw_access_flags = (unsigned)s->bind_access;
	bind.next = &wr;
	/* The test hook: name a stale current key, which the device must
	 * refuse (rxe: IBV_WC_MW_BIND_ERR), like any failed bind. */
	if (conn->fault_bind != 0 &&
	    __atomic_add_fetch(&conn->binds, 1, __ATOMIC_RELAXED) % conn->fault_bind == 0)
		s->mw->rkey = ibv_inc_rkey(s->rkey);
	r = ibv_post_send(conn->id->qp, &bind, &bad);
	/* Providers read mw->rkey as the window's current key (rxe checks
	 * it against its own): once bound, that is the new key. */
	if (r == 0 || bad == &wr)
		s->mw->rkey = s->rkey;
	return -r;
}

/* The reply did not invalidate the request's window: do it ourselves.
 * The slot is DONE only once this completes. */
static int
post_local_inv(struct rb_conn *conn, struct rb_slot *s)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&s->inv_ctx;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = s->rkey;
	s->inv_posted = 1;
	return -ibv_post_send(conn->id->qp, &wr, &bad);
}

/* A slot is done when its SEND completed (send buffer free) and its reply
 * arrived (the target is finished with the data buffer). */
static void
slot_progress_locked(struct rb_conn *conn, struct rb_slot *s)
{
	if (!s->send_done || !s->replied || s->mw_live)
		return;
	s->state = RB_SLOT_DONE;
	if (s->waiter) {
		pthread_cond_signal(&s->cond);
		return;
	}
	/* Nobody waits: a keepalive NOP. */
	if (s->rep.error != RB_OK)
		rb_log(RB_LOG_DEBUG, "keepalive NOP failed: %s",
		       rb_error_name(s->rep.error));
	conn->nop_inflight = 0;
	rb_slot_put_locked(conn, s);
}

static void
handle_recv_locked(struct rb_conn *conn, uint32_t index, uint32_t len,
		   const struct ibv_wc *wc)
{
	struct rb_rep_info rep;
	const char *why = "";
	struct rb_slot *s = NULL;
	uint64_t index_mask = (UINT64_C(1) << RB_TAG_INDEX_BITS) - 1;
	int r;

	conn->last_rx_ns = rb_now_ns();
	if (rb_reply_decode(rb_conn_recv_buf(conn, index), len, &rep, &why) < 0) {
		rb_log(RB_LOG_ERROR, "%s:%u: bad reply: %s", conn->cfg.host,
		       conn->cfg.port, why);
		rb_conn_mark_dead_locked(conn, "protocol violation");
		return;
	}
	if ((rep.tag & index_mask) < conn->nslots)
		s = &conn->slots[rep.tag & index_mask];
	if (s == NULL || s->state != RB_SLOT_POSTED || s->replied ||
	    s->gen != rep.tag >> RB_TAG_INDEX_BITS) {
		rb_log(RB_LOG_ERROR, "%s:%u: rejected a reply with a stale or "
		       "unknown tag %#llx", conn->cfg.host, conn->cfg.port,
		       (unsigned long long)rep.tag);
	} else {
		s->rep = rep;
		s->replied = 1;
		/* Killed by the reply (SEND_WITH_INV of exactly this key)?
		 * rxe leaves IBV_WC_WITH_INV unset, so compare the key; an
		 * immediate shares the field, so never trust it then. */
		if (s->mw_live && !(wc->wc_flags & IBV_WC_WITH_IMM) &&
		    wc->invalidated_rkey == s->rkey)
			s->mw_live = 0;
		if (s->mw_live && !s->inv_posted) {
			r = post_local_inv(conn, s);
			if (r < 0) {
				rb_log(RB_LOG_ERROR, "local invalidate: ibv_post_send: %s",
				       strerror(-r));
				rb_conn_mark_dead_locked(conn, "cannot invalidate a window");
			}
		}
		slot_progress_locked(conn, s);
	}
	r = rb_conn_post_recv(conn, index);
	if (r < 0) {
		rb_log(RB_LOG_ERROR, "ibv_post_recv: %s", strerror(-r));
		rb_conn_mark_dead_locked(conn, "cannot repost a receive");
	}
}

static const char *
wr_kind_name(enum rb_wr_kind kind)
{
	switch (kind) {
	case RB_WR_RECV:      return "receive";
	case RB_WR_SEND_SLOT: return "request send";
	case RB_WR_BIND:      return "memory window bind";
	case RB_WR_LOCAL_INV: return "memory window invalidate";
	default:              return "control send";
	}
}

static void
handle_wc_locked(struct rb_conn *conn, const struct ibv_wc *wc)
{
	const struct rb_wr_ctx *ctx = (const void *)(uintptr_t)wc->wr_id;

	if (wc->status != IBV_WC_SUCCESS) {
		/* Only wr_id, status, qp_num and vendor_err are valid here. */
		if (wc->status == IBV_WC_WR_FLUSH_ERR) {
			rb_conn_mark_dead_locked(conn, "queue pair flushed");
			return;
		}
		rb_log(RB_LOG_ERROR, "%s:%u: %s failed: %s (vendor_err %#x)",
		       conn->cfg.host, conn->cfg.port, wr_kind_name(ctx->kind),
		       ibv_wc_status_str(wc->status), wc->vendor_err);
		rb_conn_mark_dead_locked(conn, ibv_wc_status_str(wc->status));
		return;
	}
	switch (ctx->kind) {
	case RB_WR_RECV:
		handle_recv_locked(conn, ctx->index, wc->byte_len, wc);
		break;
	case RB_WR_SEND_SLOT:
		conn->slots[ctx->index].send_done = 1;
		slot_progress_locked(conn, &conn->slots[ctx->index]);
		break;
	case RB_WR_LOCAL_INV:
		conn->slots[ctx->index].mw_live = 0;
		slot_progress_locked(conn, &conn->slots[ctx->index]);
		break;
	case RB_WR_SEND_CTRL:
	case RB_WR_BIND:
		break;
	}
}

/* Poll until the CQ is empty; returns the number of completions. */
static int
drain(struct rb_conn *conn)
{
	struct ibv_wc wc[CQ_BATCH];
	int n, i, total = 0;

	for (;;) {
		n = ibv_poll_cq(conn->cq, CQ_BATCH, wc);
		if (n <= 0) {
			if (n < 0) {
				pthread_mutex_lock(&conn->lock);
				rb_conn_mark_dead_locked(conn, "ibv_poll_cq failed");
				pthread_mutex_unlock(&conn->lock);
			}
			return total;
		}
		pthread_mutex_lock(&conn->lock);
		for (i = 0; i < n; i++)
			handle_wc_locked(conn, &wc[i]);
		pthread_mutex_unlock(&conn->lock);
		total += n;
	}
}

/* Keepalive: after `keepalive` without hearing from the target, send a NOP;
 * no reply within twice that more and the connection is dead.  A dead
 * target is therefore noticed within about 3 x keepalive. */
static void
keepalive_tick_locked(struct rb_conn *conn)
{
	uint64_t now = rb_now_ns(), ka = conn->cfg.keepalive_ns;
	struct rb_req_info ri;
	struct rb_slot *s;
	int r;

	if (ka == 0 || conn->dead)
		return;
	if (conn->nop_inflight) {
		if (now - conn->nop_sent_ns > 2 * ka && now - conn->last_rx_ns > 3 * ka) {
			rb_log(RB_LOG_ERROR, "%s:%u: no reply to keepalive within %llu ms",
			       conn->cfg.host, conn->cfg.port,
			       (unsigned long long)(2 * ka / 1000000));
			rb_conn_mark_dead_locked(conn, "keepalive timeout");
		}
		return;
	}
	if (now - conn->last_rx_ns < ka || now - conn->nop_sent_ns < ka)
		return;
	s = rb_slot_get_locked(conn, 1);
	if (s == NULL)
		return;
	s->state = RB_SLOT_POSTED;
	s->opcode = RB_OP_NOP;
	memset(&ri, 0, sizeof(ri));
	ri.opcode = RB_OP_NOP;
	ri.tag = rb_tag(s->ctx.index, s->gen);
	r = rb_post_request(conn, s, &ri);
	if (r < 0) {
		rb_slot_put_locked(conn, s);
		rb_log(RB_LOG_ERROR, "keepalive: ibv_post_send: %s", strerror(-r));
		rb_conn_mark_dead_locked(conn, "cannot post");
		return;
	}
	conn->nop_inflight = 1;
	conn->nop_sent_ns = now;
	__atomic_add_fetch(&conn->cfg.stats->keepalives, 1, __ATOMIC_RELAXED);
}

/* Periodic work: CM events, keepalive, and disconnecting a dead QP so its
 * outstanding work requests flush. */
static void
housekeeping(struct rb_conn *conn)
{
	int disconnect = 0;

	rb_cm_poll_events(conn);
	pthread_mutex_lock(&conn->lock);
	keepalive_tick_locked(conn);
	if (conn->dead && !conn->disconnect_sent) {
		conn->disconnect_sent = 1;
		disconnect = 1;
	}
	pthread_mutex_unlock(&conn->lock);
	if (disconnect)
		rdma_disconnect(conn->id);
}

static int
tick_ms(const struct rb_conn *conn)
{
	uint64_t ms = conn->cfg.keepalive_ns / 4 / 1000000;

	if (conn->cfg.keepalive_ns == 0 || ms > 1000)
		return 1000;
	return ms < 50 ? 50 : (int)ms;
}

static void
busy_loop(struct rb_conn *conn)
{
	uint64_t next = 0, now;

	while (!__atomic_load_n(&conn->stop, __ATOMIC_ACQUIRE)) {
		drain(conn);
		now = rb_now_ns();
		if (now >= next) {
			housekeeping(conn);
			next = now + (uint64_t)tick_ms(conn) * 1000000 / 4;
		}
	}
}

static void
event_loop(struct rb_conn *conn)
{
	struct pollfd pfd[3] = {
		{ .fd = conn->comp_ch->fd, .events = POLLIN },
		{ .fd = conn->cm_ch->fd, .events = POLLIN },
		{ .fd = conn->stop_fd, .events = POLLIN },
	};
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	uint64_t next = 0, now;

	while (!__atomic_load_n(&conn->stop, __ATOMIC_ACQUIRE)) {
		now = rb_now_ns();
		if (now >= next) {
			housekeeping(conn);
			next = now + (uint64_t)tick_ms(conn) * 1000000;
		}
		drain(conn);
		if (ibv_req_notify_cq(conn->cq, 0) != 0) {
			pthread_mutex_lock(&conn->lock);
			rb_conn_mark_dead_locked(conn, "ibv_req_notify_cq failed");
			pthread_mutex_unlock(&conn->lock);
		}
		/* Re-armed: anything that arrived before arming is only seen by
		 * polling again, so no wakeup is lost. */
		if (drain(conn) > 0)
			continue;
		if (poll(pfd, 3, tick_ms(conn)) < 0 && errno != EINTR)
			break;
		while (ibv_get_cq_event(conn->comp_ch, &ev_cq, &ev_ctx) == 0)
			ibv_ack_cq_events(ev_cq, 1);
		if (pfd[1].revents & POLLIN)
			next = 0;
	}
}

static void *
cq_thread(void *arg)
{
	struct rb_conn *conn = arg;

	if (conn->cfg.busy_poll)
		busy_loop(conn);
	else
		event_loop(conn);
	return NULL;
}

int
rb_cq_start(struct rb_conn *conn, char *errbuf)
{
	int r;

	conn->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (conn->stop_fd < 0) {
		rb_seterr(errbuf, "eventfd: %s", strerror(errno));
		return -errno;
	}
	r = pthread_create(&conn->cq_thread, NULL, cq_thread, conn);
	if (r != 0) {
		rb_seterr(errbuf, "pthread_create: %s", strerror(r));
		return -r;
	}
	conn->cq_thread_started = 1;
	return 0;
}

void
rb_cq_stop(struct rb_conn *conn)
{
	uint64_t one = 1;

	if (conn->cq_thread_started) {
		__atomic_store_n(&conn->stop, 1, __ATOMIC_RELEASE);
		if (write(conn->stop_fd, &one, sizeof(one)) < 0)
			rb_log(RB_LOG_DEBUG, "stop completion thread: %s", strerror(errno));
		pthread_join(conn->cq_thread, NULL);
		conn->cq_thread_started = 0;
	}
	if (conn->stop_fd >= 0)
		close(conn->stop_fd);
	conn->stop_fd = -1;
}
