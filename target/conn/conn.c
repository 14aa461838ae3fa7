/* One RDMA CM connection (target/conn/conn.h): its life from the accept to
 * the teardown.  Its verbs resources are qp.c's, the HELLO/AUTH/LIST
 * handshake handshake.c's, completions completion.c's, the send queue
 * sendq.c's; requests themselves are request.c's business. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "conn.h"
#include "core/loop.h"
#include "log.h"
#include "req/request.h"

#define CONN_SQ_SLACK        4
#define CONN_TEARDOWN_NS     (30ull * 1000000000ull)

/* ---- what a request asks of its connection (req/queue.h) ---- */

static int
conn_rq_post_recv(struct req_queue *q, struct req_msg *m)
{
	struct recv_buf *rb = (struct recv_buf *)((char *)m - offsetof(struct recv_buf, msg));

	return conn_post_recv(conn_of(q), rb);
}

static int
conn_rq_sq_reserve(struct req_queue *q, struct req *r, unsigned n)
{
	return conn_sq_reserve(conn_of(q), r, n);
}

static void
conn_rq_sq_release(struct req_queue *q, unsigned n)
{
	conn_sq_release(conn_of(q), n);
}

static void
conn_rq_queue_send(struct req_queue *q, struct ibv_send_wr *first, struct ibv_send_wr *last)
{
	conn_queue_send(conn_of(q), first, last);
}

static void
conn_rq_fail(struct req_queue *q, const char *why)
{
	conn_fail(conn_of(q), why);
}

static const struct req_queue_ops conn_rq_ops = {
	.post_recv = conn_rq_post_recv,
	.sq_reserve = conn_rq_sq_reserve,
	.sq_release = conn_rq_sq_release,
	.queue_send = conn_rq_queue_send,
	.fail = conn_rq_fail,
};

const char *
conn_state_name(enum conn_state s)
{
	switch (s) {
	case CONN_ACCEPTING: return "accepting";
	case CONN_HELLO:     return "hello";
	case CONN_READY:     return "ready";
	case CONN_LINGER:    return "linger";
	case CONN_DRAINING:  return "draining";
	case CONN_ERROR:     return "error";
	}
	return "?";
}

struct conn *
conn_create(struct loop *l, struct rdma_cm_id *id, unsigned cm_qd,
	    const struct sockaddr *peer)
{
	struct target *t = l->t;
	struct conn *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		log_warnx("connection: out of memory");
		return NULL;
	}
	c->t = t;
	c->loop = l;
	c->id = ++t->next_conn_id;
	c->cm_id = id;
	c->state = CONN_ACCEPTING;
	waitq_init(&c->sq_wait);
	STAILQ_INIT(&c->backlog);
	c->rq.ops = &conn_rq_ops;
	c->rq.t = t;
	c->rq.loop = l;
	c->rq.peer = c->peer;
	SLIST_INIT(&c->rq.free_reqs);
	c->created_ns = c->alive_ns = rb_now_ns();
	c->probe_ctx.type = WR_PROBE;
	c->probe_ctx.obj = c;
	rb_sockaddr_str(peer, c->peer, sizeof(c->peer));
	memcpy(&c->peer_sa, peer, peer->sa_family == AF_INET6 ?
	       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	c->dev = device_get(t, id->verbs);
	if (c->dev == NULL)
		goto out_free;
	c->rq.pool = c->dev->pools[l->idx];
	/* Keep the queues within what the device can do. */
	while (cm_qd > 1 && (2 * cm_qd + CONN_SQ_SLACK > (unsigned)c->dev->attr.max_qp_wr ||
			     2 * cm_qd + CONN_SQ_SLACK > (unsigned)c->dev->attr.max_cqe))
		cm_qd /= 2;
	c->cm_qd = cm_qd;
	c->sq_depth = 2 * cm_qd + CONN_SQ_SLACK;
	if (conn_create_cqs(c) < 0)
		goto out_free;
	if (conn_create_qp(c) < 0)
		goto out_destroy_cqs;
	if (conn_create_ctrl(c) < 0)
		goto out_destroy_qp;
	if (recvring_create(c, conn_recv_max(c)) < 0)
		goto out_destroy_ctrl;
	if (ep_watch(l->epfd, c->channel->fd, EPOLLIN, &c->eh, conn_cq_event, c) < 0) {
		log_warn("%s: epoll_ctl", c->peer);
		goto out_destroy_ring;
	}
	id->context = c;
	LIST_INSERT_HEAD(&l->conns, c, link);
	l->nconns++;
	c->handshaking = 1;
	target_lock(t);
	t->nconns++;
	t->nhandshakes++;
	t->stats.accepted++;
	target_unlock(t);
	return c;

out_destroy_ring:
	recvring_destroy(c);
out_destroy_ctrl:
	conn_destroy_ctrl(c);
out_destroy_qp:
	ibv_destroy_qp(c->qp);
out_destroy_cqs:
	conn_destroy_cqs(c);
out_free:
	free(c);
	return NULL;
}

int
conn_accept(struct conn *c, uint8_t peer_responder_resources)
{
	struct rdma_conn_param param;
	uint8_t priv[sizeof(struct rb_conn_priv)];
	int init_depth = c->dev->attr.max_qp_init_rd_atom;

	rb_conn_priv_encode(priv, RB_OK, (uint16_t)c->cm_qd);
	memset(&param, 0, sizeof(param));
	param.private_data = priv;
	param.private_data_len = sizeof(priv);
	/* We RDMA READ the WRITE data from the initiator. */
	param.initiator_depth = (uint8_t)(peer_responder_resources < init_depth ?
					  peer_responder_resources : init_depth);
	param.responder_resources = 0;
	if (param.initiator_depth == 0)
		log_warnx("%s: the initiator serves no RDMA READs: non-inline WRITEs will fail",
			  c->peer);
	param.retry_count = 7;
	param.rnr_retry_count = 7;      /* the initiator's side: its business */
	param.qp_num = c->qp->qp_num;
	if (conn_modify_qp(c, IBV_QPS_RTR, 0) < 0 ||
	    conn_modify_qp(c, IBV_QPS_RTS, param.initiator_depth) < 0)
		return -1;
	if (rdma_accept(c->cm_id, &param) != 0) {
		log_warn("%s: rdma_accept", c->peer);
		return -1;
	}
	return 0;
}

/* Called from listener.c for a connection that never got going, and from
 * conn_after_round for a finished one. */
static void
conn_destroy(struct conn *c)
{
	struct target *t = c->t;

	if (epoll_ctl(c->loop->epfd, EPOLL_CTL_DEL, c->channel->fd, NULL) < 0)
		log_warn("%s: epoll_ctl del", c->peer);
	target_lock(t);
	/* Its counts live on in its export's, and the target's. */
	t->stats.closed++;
	if (c->rq.exp != NULL) {
		stats_io_add(&c->rq.exp->stats, &c->rq.stats);
		export_put_conn(t, c->rq.exp);
	}
	t->nconns--;
	target_unlock(t);
	if (c->qp != NULL && ibv_destroy_qp(c->qp) != 0)
		log_warnx("%s: ibv_destroy_qp failed", c->peer);
	recvring_destroy(c);
	conn_destroy_ctrl(c);
	conn_destroy_cqs(c);
	free(c->rq.reqs);
	rdma_destroy_id(c->cm_id);
	LIST_REMOVE(c, link);
	c->loop->nconns--;
	conn_handshake_done(c);
	log_debug("%s: connection %llu freed", c->peer, (unsigned long long)c->id);
	free(c);
}

void
conn_handshake_done(struct conn *c)
{
	if (c->handshaking) {
		c->handshaking = 0;
		target_lock(c->t);
		c->t->nhandshakes--;
		target_unlock(c->t);
	}
}

void
conn_established(struct conn *c)
{
	if (c->state == CONN_ACCEPTING)
		c->state = CONN_HELLO;
}

static void
conn_enter_error(struct conn *c)
{
	/* E.g. the initiator found our proof wrong (a different key). */
	auth_abandon(c, "no response (the initiator gave up after the challenge)");
	c->state = CONN_ERROR;
	c->rq.failed = 1;
	c->error_since_ns = rb_now_ns();
	STAILQ_INIT(&c->backlog);
	/* The error state flushes every posted WR.  rdma_disconnect does not
	 * touch a QP it does not own (conn_create_qp). */
	if (c->qp != NULL) {
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

		if (ibv_modify_qp(c->qp, &qa, IBV_QP_STATE) != 0)
			log_warnx("%s: cannot move the QP to the error state", c->peer);
	}
	if (rdma_disconnect(c->cm_id) != 0 && errno != EINVAL && errno != ENOTCONN)
		log_debug("%s: rdma_disconnect: %s", c->peer, strerror(errno));
}

void
conn_fail(struct conn *c, const char *why)
{
	if (c->state == CONN_ERROR)
		return;
	log_warnx("%s: closing connection (export %s, state %s): %s", c->peer,
		  c->rq.exp != NULL ? c->rq.exp->cfg->name : "-", conn_state_name(c->state), why);
	conn_enter_error(c);
}

void
conn_close(struct conn *c, const char *why)
{
	if (c->state == CONN_ERROR)
		return;
	log_info("%s: connection closed (export %s): %s", c->peer,
		 c->rq.exp != NULL ? c->rq.exp->cfg->name : "-", why);
	conn_enter_error(c);
}

void
conn_drain(struct conn *c)
{
	switch (c->state) {
	case CONN_READY:
		c->state = CONN_DRAINING;
		break;
	case CONN_ACCEPTING:
	case CONN_HELLO:
		conn_close(c, "target is shutting down or the export was removed");
		break;
	default:
		break;
	}
}

int
conn_after_round(struct conn *c)
{
	unsigned i;

	if (conn_quiet(c))
		return 0;
	if (c->state != CONN_ERROR) {
		/* Send completions first: they free slots and buffers. */
		conn_poll_cq(c, c->send_cq);
		conn_resume(c);
		if (c->state == CONN_DRAINING && c->rq.active == 0 && STAILQ_EMPTY(&c->backlog) &&
		    !c->ctrl_busy)
			conn_close(c, "drained");
		if (c->state != CONN_ERROR)
			return 0;
	}
	/* Nothing queued is posted any more (it is given back); reap the
	 * flushed completions and arm the send CQ for the rest, then force
	 * every request to release what it can. */
	conn_send_arm(c);
	for (i = 0; i < c->rq.nreqs; i++)
		if (c->rq.reqs[i].state != REQ_FREE)
			req_process(&c->rq.reqs[i]);
	if (c->rq.io_inflight > 0)
		return 0;
	if (c->sq_used > 0) {
		if (rb_now_ns() - c->error_since_ns < CONN_TEARDOWN_NS)
			return 0;
		log_warnx("%s: %u send WRs never flushed; destroying the QP anyway",
			  c->peer, c->sq_used);
		ibv_destroy_qp(c->qp);
		c->qp = NULL;
		c->sq_used = 0;
		c->reads_pending = 0;
		for (i = 0; i < c->rq.nreqs; i++) {
			c->rq.reqs[i].wr_pending = 0;
			c->rq.reqs[i].data_orphan = 0;
			if (c->rq.reqs[i].state != REQ_FREE)
				req_process(&c->rq.reqs[i]);
		}
	}
	if (c->rq.active != 0)
		log_warnx("%s: %u requests still active at teardown", c->peer, c->rq.active);
	conn_destroy(c);
	return 1;
}

void
conn_abort(struct conn *c)
{
	c->state = CONN_ERROR;
	c->rq.failed = 1;
	conn_destroy(c);
}
