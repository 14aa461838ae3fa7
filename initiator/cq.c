/* Reaping the two CQs.  There is no completion thread: whoever polls the
 * CQs empty (the waiting leader, a thread short of a slot, or the
 * housekeeping thread when nobody leads or a NOP is out) hands every
 * completion to the slot state machine (slots.c) and wakes the owners
 * after unlocking. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "util.h"

#define CQ_BATCH 16

/* Owners to wake once the lock is dropped (signalling under the lock makes
 * the woken thread block on the mutex straight away). */
struct wake {
	struct rb_slot *cond[2 * CQ_BATCH];
	unsigned        n;
	int             leader;     /* write wake_fd: the leader's slot is DONE */
	unsigned        slot_cond;  /* slots that went back to the free list */
};

/* The reply did not invalidate the request's window: do it ourselves.
 * The slot is DONE only once this completes; while it is pending the
 * leader arms the send CQ too. */
static int
post_local_inv(struct rb_conn *conn, struct rb_slot *s)
{
	struct ibv_send_wr wr, *bad;
	int r;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&s->inv_ctx;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = s->rkey;
	r = ibv_post_send(conn->id->qp, &wr, &bad);
	if (r == 0)
		__atomic_add_fetch(&conn->inv_pending, 1, __ATOMIC_RELEASE);
	return -r;
}

static void
wake_owner_locked(struct rb_conn *conn, struct rb_slot *s,
		  const struct rb_slot *self, struct wake *w)
{
	if (s == self)
		return;
	if (s->aio != NULL) {
		/* Nobody sleeps on it: queue it for the reaping thread. */
		STAILQ_INSERT_TAIL(&conn->aio_done, s, aio_link);
		if (!conn->aio_reaping)
			w->leader = 1;      /* wake_fd: the reaper polls it */
		return;
	}
	if (conn->leader == (int)s->ctx.index)
		w->leader = 1;          /* asleep in poll(), not on its cond */
	else if (w->n < sizeof(w->cond) / sizeof(w->cond[0]))
		w->cond[w->n++] = s;
	else
		pthread_cond_signal(&s->cond);
}

/* Whoever sleeps for s's completion arms the send CQ only while a
 * LOCAL_INV or a REPLIED slot's SEND is due (rb_conn_arm): one who went
 * to sleep before that must wake and re-arm, or the completion wakes
 * nobody.  The sync leader (unless it is self), or the aio reaper of an
 * asynchronous s (as in wake_owner_locked). */
static void
rearm_sleeper_locked(struct rb_conn *conn, const struct rb_slot *s,
		     const struct rb_slot *self, struct wake *w)
{
	if ((conn->leader >= 0 && (self == NULL || conn->leader != (int)self->ctx.index)) ||
	    (s->aio != NULL && !conn->aio_reaping))
		w->leader = 1;
}

/* Record ev for slot s and do what the state machine (slots.c) asks:
 * wake the owner of a DONE slot, post the LOCAL_INV of an INVALIDATING one,
 * have the send CQ armed for a REPLIED one, count a freed credit. */
static void
slot_event_locked(struct rb_conn *conn, struct rb_slot *s, enum rb_slot_event ev,
		  const struct rb_slot *self, struct wake *w)
{
	unsigned todo = rb_slot_event_locked(conn, s, ev);
	int r;

	if (todo & RB_SLOT_DO_POST_INV) {
		r = post_local_inv(conn, s);
		if (r < 0) {
			rb_log(RB_LOG_ERROR, "local invalidate: ibv_post_send: %s",
			       strerror(-r));
			rb_conn_mark_dead_locked(conn, "cannot invalidate a window");
		} else {
			rearm_sleeper_locked(conn, s, self, w);
		}
	}
	if (todo & RB_SLOT_DO_ARM_SEND)
		rearm_sleeper_locked(conn, s, self, w);
	if (todo & RB_SLOT_DO_WAKE_OWNER)
		wake_owner_locked(conn, s, self, w);
	if (todo & RB_SLOT_DO_CREDIT)
		w->slot_cond++;
}

static void
handle_recv_locked(struct rb_conn *conn, uint32_t index, uint32_t len,
		   const struct ibv_wc *wc, const struct rb_slot *self,
		   struct wake *w)
{
	struct rb_rep_info rep;
	const char *why = "";
	struct rb_slot *s = NULL;
	uint64_t index_mask = (UINT64_C(1) << RB_TAG_INDEX_BITS) - 1, now = rb_now_ns();
	int imm = (wc->wc_flags & IBV_WC_WITH_IMM) != 0, r;

	/* An RDMA WRITE with immediate consumes a receive too, but its
	 * data is not in the receive buffer: nothing here sends one. */
	if (wc->opcode != IBV_WC_RECV) {
		why = "an RDMA WRITE with immediate";
		r = -EPROTO;
	} else if (imm && !conn->read_imm) {
		why = "a SEND with immediate on a connection that was not granted READ_IMM";
		r = -EPROTO;
	} else if (imm) {
		r = rb_reply_imm_decode(wc->imm_data, rb_conn_recv_buf(conn, index), len,
					&rep, &why);
	} else {
		r = rb_reply_decode(rb_conn_recv_buf(conn, index), len, &rep, &why);
	}
	if (r < 0) {
		rb_log(RB_LOG_ERROR, "%s:%u: bad reply: %s", conn->cfg.host,
		       conn->cfg.port, why);
		rb_conn_mark_dead_locked(conn, "protocol violation");
		return;
	}
	if ((rep.tag & index_mask) < conn->nslots)
		s = &conn->slots[rep.tag & index_mask];
	/* READ_IMM carried the tag's low 32 bits: the index and the low
	 * bits of the generation.  The slot's generation gives the rest
	 * when they match; otherwise the tag stays stale. */
	if (imm && s != NULL && (s->gen & (UINT32_MAX >> RB_TAG_INDEX_BITS)) ==
	    rep.tag >> RB_TAG_INDEX_BITS)
		rep.tag = rb_tag(rep.tag & index_mask, s->gen);
	/* Heard from the target; a keepalive NOP's own reply does not move
	 * the next NOP (timer.c: one every keepalive while idle). */
	if (s == NULL || s->owned || s->opcode != RB_OP_NOP)
		conn->last_rx_ns = now;
	if (s != NULL && s->state == RB_SLOT_ORPHANED &&
	    s->gen == rep.tag >> RB_TAG_INDEX_BITS) {
		/* Polled after the connection died: its owner resends it. */
		rb_log(RB_LOG_DEBUG, "%s:%u: a reply after the connection died, dropped: "
		       "the request is resent", conn->cfg.host, conn->cfg.port);
	} else if (s == NULL || s->state != RB_SLOT_POSTED ||
	    s->gen != rep.tag >> RB_TAG_INDEX_BITS) {
		rb_log(RB_LOG_ERROR, "%s:%u: rejected a reply with a stale or "
		       "unknown tag %#llx", conn->cfg.host, conn->cfg.port,
		       (unsigned long long)rep.tag);
	} else if (rep.nextents > 0 && (s->opcode != RB_OP_BLOCK_STATUS ||
		   (size_t)rep.nextents * sizeof(struct rb_extent) > conn->exp.max_io)) {
		rb_log(RB_LOG_ERROR, "%s:%u: bad reply: %u extents in the reply to a %s",
		       conn->cfg.host, conn->cfg.port, rep.nextents,
		       rb_opcode_name(s->opcode));
		rb_conn_mark_dead_locked(conn, "protocol violation");
	} else if (rep.error == RB_OK && rep.data_len != s->rin.len) {
		/* An inline READ's reply carries exactly its data, and no
		 * other reply carries any. */
		rb_log(RB_LOG_ERROR, "%s:%u: bad reply: %u bytes of data in the reply to a "
		       "%s that %s", conn->cfg.host, conn->cfg.port, rep.data_len,
		       rb_opcode_name(s->opcode), s->rin.len == 0 ?
		       "asked for none" : "asked for another length");
		rb_conn_mark_dead_locked(conn, "protocol violation");
	} else {
		/* An inline READ's data leaves the receive buffer before it
		 * is reposted, straight to its caller: the owner waits for
		 * this reply, so the destination is still its own. */
		if (rep.data_len > 0) {
			rb_copy_timed(conn, s->rin.dst, (const char *)rep.data + s->rin.off,
				      s->rin.n);
			__atomic_add_fetch(&conn->cfg.stats->inline_read_bytes, s->rin.n,
					   __ATOMIC_RELAXED);
			if (imm)
				__atomic_add_fetch(&conn->cfg.stats->imm_read_replies, 1,
						   __ATOMIC_RELAXED);
			rep.data = NULL;
		}
		/* The extents leave the receive buffer before it is reposted:
		 * the slot's data buffer holds them for its owner. */
		if (rep.nextents > 0) {
			memcpy(s->data, rep.extents, (size_t)rep.nextents * sizeof(struct rb_extent));
			rep.extents = s->data;
		}
		s->rep = rep;
		/* Killed by the reply (SEND_WITH_INV of exactly this key)?
		 * Otherwise the state machine has us invalidate it. */
		slot_event_locked(conn, s, s->window &&
				  rb_wc_invalidated(wc, s->rkey, conn->rxe_quirk) ?
				  RB_SLOT_EV_REPLY_INV : RB_SLOT_EV_REPLY, self, w);
	}
	r = rb_conn_post_recv(conn, index);
	if (r < 0) {
		rb_log(RB_LOG_ERROR, "ibv_post_recv: %s", strerror(-r));
		rb_conn_mark_dead_locked(conn, "cannot repost a receive");
	}
}

int
rb_wc_invalidated(const struct ibv_wc *wc, uint32_t rkey, int rxe_quirk)
{
	unsigned flag = IBV_WC_WITH_INV;

	/* rxe fills the user WC with the kernel's IB_WC_WITH_INVALIDATE
	 * (1 << 2), which is IBV_WC_IP_CSUM_OK in user space: a flag no RC
	 * receive carries otherwise. */
	if (rxe_quirk)
		flag |= IBV_WC_IP_CSUM_OK;
	/* An immediate shares the key's field. */
	return (wc->wc_flags & flag) != 0 && !(wc->wc_flags & IBV_WC_WITH_IMM) &&
	       wc->invalidated_rkey == rkey;
}

/* A QP in error flushes every outstanding WR, and the receive CQ is polled
 * first: the error that broke the QP (a send's retries run out, say) can
 * come after the flushes it caused, in the same batch. */
const char *
rb_wc_batch_cause(const struct ibv_wc *wc, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS && wc[i].status != IBV_WC_WR_FLUSH_ERR)
			return ibv_wc_status_str(wc[i].status);
	return "queue pair flushed";
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

/* wc is one of the n completions of batch (for the reason a flush gives). */
static void
handle_wc_locked(struct rb_conn *conn, const struct ibv_wc *wc, const struct ibv_wc *batch,
		 int n, const struct rb_slot *self, struct wake *w)
{
	const struct rb_wr_ctx *ctx = (const void *)(uintptr_t)wc->wr_id;

	if (wc->status != IBV_WC_SUCCESS) {
		/* Only wr_id, status, qp_num and vendor_err are valid here. */
		if (wc->status == IBV_WC_WR_FLUSH_ERR) {
			if (!conn->dead)
				rb_conn_mark_dead_locked(conn, rb_wc_batch_cause(batch, n));
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
		handle_recv_locked(conn, ctx->index, wc->byte_len, wc, self, w);
		break;
	case RB_WR_SEND_SLOT:
		slot_event_locked(conn, &conn->slots[ctx->index], RB_SLOT_EV_SENT,
				  self, w);
		break;
	case RB_WR_LOCAL_INV:
		__atomic_sub_fetch(&conn->inv_pending, 1, __ATOMIC_RELEASE);
		slot_event_locked(conn, &conn->slots[ctx->index],
				  RB_SLOT_EV_INVALIDATED, self, w);
		break;
	case RB_WR_SEND_CTRL:
	case RB_WR_BIND:
		break;
	}
}

static void
wake_all(struct rb_conn *conn, const struct wake *w)
{
	unsigned i;

	for (i = 0; i < w->n; i++)
		pthread_cond_signal(&w->cond[i]->cond);
	/* One credit waiter per freed slot. */
	for (i = 0; i < w->slot_cond; i++)
		pthread_cond_signal(&conn->slot_cond);
	if (w->leader)
		rb_conn_wake(conn);
}

/* The polling thread's completions.  Fields a provider leaves unset for
 * an opcode (the key of a plain SEND) must not hold an earlier poll's
 * values, so every entry is zero when the provider gets it: the array
 * starts zeroed (thread-local storage) and the entries a poll filled are
 * zeroed again once handled.  A poll that finds nothing (each pass of a
 * spin) costs no clearing at all; clearing the whole array before every
 * poll cost a spinning queue thread 1.5 KB of stores per pass.  This
 * assumes a provider writes no entry beyond the count it returns; after
 * a failed poll the whole array is cleared. */
static __thread struct ibv_wc poll_wc[2 * CQ_BATCH];
static __thread int poll_wc_busy;

int
rb_cq_poll_empty(struct rb_conn *conn, struct rb_slot *self, int *self_done)
{
	struct ibv_wc own[2 * CQ_BATCH], *wc = poll_wc;
	struct wake w;
	int nr, ns, i, total = 0, done = 0, nested = poll_wc_busy;
	size_t filled;

	if (nested) {
		/* Not done today (nothing below polls again): a nested poll
		 * must not clobber the outer one's entries. */
		memset(own, 0, sizeof(own));
		wc = own;
	}
	poll_wc_busy = 1;
	for (;;) {
		/* Receives first: a reply usually finds its SEND's completion
		 * already in the send CQ, so one lock round completes both. */
		nr = ibv_poll_cq(conn->recv_cq, CQ_BATCH, wc);
		ns = ibv_poll_cq(conn->send_cq, CQ_BATCH, wc + (nr > 0 ? nr : 0));
		if (nr == 0 && ns == 0) {
			/* Nothing reaped: no lock round.  DONE is stored
			 * atomically, so the owner may look without it. */
			done = self != NULL &&
				(__atomic_load_n(&conn->dead, __ATOMIC_ACQUIRE) ||
				 !rb_slot_awaiting(self));
			break;
		}
		filled = nr < 0 || ns < 0 ? 2 * CQ_BATCH : (size_t)(nr + ns);
		w.n = 0;
		w.leader = 0;
		w.slot_cond = 0;
		pthread_mutex_lock(&conn->lock);
		if (nr < 0 || ns < 0)
			rb_conn_mark_dead_locked(conn, "ibv_poll_cq failed");
		if (nr < 0)
			nr = 0;
		if (ns < 0)
			ns = 0;
		for (i = 0; i < nr + ns; i++)
			handle_wc_locked(conn, &wc[i], wc, nr + ns, self, &w);
		done = conn->dead || (self != NULL && !rb_slot_awaiting(self));
		pthread_mutex_unlock(&conn->lock);
		memset(wc, 0, filled * sizeof(*wc));
		wake_all(conn, &w);
		total += nr + ns;
		if (nr < CQ_BATCH && ns < CQ_BATCH)
			break;
	}
	poll_wc_busy = nested;
	if (self_done != NULL)
		*self_done = done;
	return total;
}
