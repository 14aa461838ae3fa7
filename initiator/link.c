/* What every layer above does to one connection (internal.h): its receive
 * buffers and their posting, a SEND's work request, the wake eventfd, and
 * marking it dead (its QP to the error state, its unanswered slots
 * ORPHANED).  cm.c, cq.c, wait.c, timer.c, handshake.c and request.c call
 * these; this file calls none of them, so the connection's layers stand on
 * it without calling each other in a circle. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void *
rb_conn_recv_buf(struct rb_conn *conn, uint32_t index)
{
	return (char *)conn->recv.base + (size_t)index * RB_MSG_BUF_SIZE;
}

int
rb_conn_post_recv(struct rb_conn *conn, uint32_t index)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rb_conn_recv_buf(conn, index),
		.length = RB_MSG_BUF_SIZE,
		.lkey = conn->recv.mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = (uintptr_t)&conn->recv_ctx[index],
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	return -ibv_post_recv(conn->id->qp, &wr, &bad);
}

void
rb_conn_send_wr(struct rb_conn *conn, struct ibv_send_wr *wr, struct ibv_sge *sge,
		void *buf, size_t len, struct rb_wr_ctx *ctx)
{
	memset(sge, 0, sizeof(*sge));
	sge->addr = (uintptr_t)buf;
	sge->length = (uint32_t)len;
	sge->lkey = conn->send.mr->lkey;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = (uintptr_t)ctx;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	wr->send_flags = IBV_SEND_SIGNALED;
}

void
rb_conn_wake(struct rb_conn *conn)
{
	uint64_t one = 1;

	if (write(conn->wake_fd, &one, sizeof(one)) < 0) {
		rb_log(RB_LOG_DEBUG, "wake_fd: %s", strerror(errno));
		return;
	}
	/* After the write: a reader that sees it finds the count there. */
	__atomic_store_n(&conn->wake_posted, 1, __ATOMIC_RELEASE);
}

void
rb_conn_wake_take(struct rb_conn *conn)
{
	uint64_t n;

	if (__atomic_exchange_n(&conn->wake_posted, 0, __ATOMIC_ACQ_REL) &&
	    read(conn->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		rb_log(RB_LOG_DEBUG, "wake_fd: %s", strerror(errno));
}

void
rb_conn_mark_dead_locked(struct rb_conn *conn, const char *why)
{
	unsigned i;

	if (conn->dead)
		return;
	__atomic_store_n(&conn->dead, 1, __ATOMIC_RELEASE);
	rb_log(RB_LOG_WARN, "connection to %s:%u lost: %s", conn->cfg.host,
	       conn->cfg.port, why);
	/* The fence, before anything is resent: a QP in the error state
	 * sends nothing more (no retransmission of an unanswered request)
	 * and answers no RDMA of the target's, so no key of this connection
	 * reaches our memory any more.  Every posted WR flushes. */
	if (conn->qp_created) {
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
		int r = ibv_modify_qp(conn->id->qp, &qa, IBV_QP_STATE);

		if (r != 0)
			rb_log(RB_LOG_ERROR, "%s:%u: cannot move the QP to the error state: %s",
			       conn->cfg.host, conn->cfg.port, strerror(r));
	}
	/* Every unanswered slot is ORPHANED now, under the same lock: an
	 * owner sees that, not a state to wait in. */
	for (i = 0; i < conn->nslots; i++) {
		rb_slot_event_locked(conn, &conn->slots[i], RB_SLOT_EV_CONN_DEAD);
		pthread_cond_broadcast(&conn->slots[i].cond);
	}
	pthread_cond_broadcast(&conn->slot_cond);
	/* The leader, or an asynchronous reaper, sleeps on wake_fd. */
	if (conn->leader >= 0 || conn->inflight > 0)
		rb_conn_wake(conn);
	/* The housekeeping thread disconnects it, with no tick to wait for. */
	rb_timer_kick(conn);
}
