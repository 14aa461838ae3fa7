/* One RDMA CM connection (target/conn.h): setup and teardown of its verbs
 * resources, completion handling, and the HELLO/LIST handshake.  Requests
 * themselves are request.c's business. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "auth.h"
#include "conn.h"
#include "log.h"
#include "qpview.h"
#include "request.h"

#define CONN_SQ_SLACK        4
#define CONN_TEARDOWN_NS     (30ull * 1000000000ull)

static const char *
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

/* ---- setup ---- */

static int
conn_create_cqs(struct conn *c)
{
	struct ibv_context *verbs = c->cm_id->verbs;
	int flags;

	c->channel = ibv_create_comp_channel(verbs);
	if (c->channel == NULL) {
		log_warn("%s: ibv_create_comp_channel", c->peer);
		return -1;
	}
	flags = fcntl(c->channel->fd, F_GETFL);
	if (flags < 0 || fcntl(c->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		log_warn("%s: completion channel O_NONBLOCK", c->peer);
		goto out_destroy_channel;
	}
	/* Sized for the full ring (recvring.c), though the handshake posts
	 * only CONN_HANDSHAKE_RECVS. */
	c->recv_cq = ibv_create_cq(verbs, (int)conn_recv_max(c), c, c->channel, 0);
	if (c->recv_cq == NULL) {
		log_warn("%s: ibv_create_cq (receive, %u entries)", c->peer, conn_recv_max(c));
		goto out_destroy_channel;
	}
	c->send_cq = ibv_create_cq(verbs, (int)c->sq_depth, c, c->channel, 0);
	if (c->send_cq == NULL) {
		log_warn("%s: ibv_create_cq (send, %u entries)", c->peer, c->sq_depth);
		goto out_destroy_recv_cq;
	}
	/* The receive CQ is always armed.  The send CQ is armed only while
	 * something waits for a send completion (conn_send_arm): the
	 * handshake's control SEND here. */
	if (ibv_req_notify_cq(c->recv_cq, 0) != 0 ||
	    ibv_req_notify_cq(c->send_cq, 0) != 0) {
		log_warnx("%s: ibv_req_notify_cq failed", c->peer);
		goto out_destroy_send_cq;
	}
	c->send_armed = 1;
	return 0;

out_destroy_send_cq:
	ibv_destroy_cq(c->send_cq);
out_destroy_recv_cq:
	ibv_destroy_cq(c->recv_cq);
out_destroy_channel:
	ibv_destroy_comp_channel(c->channel);
	c->channel = NULL;
	c->send_cq = c->recv_cq = NULL;
	return -1;
}

static void
conn_destroy_cqs(struct conn *c)
{
	ibv_destroy_cq(c->send_cq);
	ibv_destroy_cq(c->recv_cq);
	ibv_destroy_comp_channel(c->channel);
}

/* Move our QP to state with the attributes the CM computed (and the RDMA
 * READ depths we grant), as rdma_accept would for a QP it owned; the send
 * side's RNR retry count is ours, not the initiator's (conn.h). */
static int
conn_modify_qp(struct conn *c, enum ibv_qp_state state, uint8_t rd_atomic)
{
	struct ibv_qp_attr attr;
	struct ibv_port_attr port;
	int mask, rc;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = state;
	if (rdma_init_qp_attr(c->cm_id, &attr, &mask) != 0) {
		log_warn("%s: rdma_init_qp_attr (state %d)", c->peer, (int)state);
		return -1;
	}
	switch (state) {
	case IBV_QPS_RTR:
		attr.max_dest_rd_atomic = rd_atomic;
		/* librdmacm's workaround: an IB port's CM sets RoCE-only bits. */
		if (ibv_query_port(c->cm_id->verbs, c->cm_id->port_num, &port) == 0 &&
		    port.link_layer == IBV_LINK_LAYER_INFINIBAND)
			mask &= ~0xe00000;
		break;
	case IBV_QPS_RTS:
		attr.max_rd_atomic = rd_atomic;
		attr.rnr_retry = CONN_RNR_RETRY;
		mask |= IBV_QP_RNR_RETRY;
		break;
	default:
		break;
	}
	rc = ibv_modify_qp(c->qp, &attr, mask);
	if (rc != 0) {
		log_warnx("%s: ibv_modify_qp (state %d): %s", c->peer, (int)state, strerror(rc));
		return -1;
	}
	return 0;
}

static int
conn_create_qp(struct conn *c)
{
	struct ibv_qp_init_attr attr;
	const uint32_t need_inline = sizeof(struct rb_reply);

	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	attr.send_cq = c->send_cq;
	attr.recv_cq = c->recv_cq;
	attr.cap.max_send_wr = c->sq_depth;
	attr.cap.max_recv_wr = conn_recv_max(c);
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = need_inline;
	/* Our own QP, not rdma_create_qp's: rdma_accept would move it to RTS
	 * with the RNR retry count the initiator asked for (7 = forever),
	 * and a peer that posts no receives could then hold our send queue
	 * and pool buffers forever.  We make every transition ourselves
	 * (conn_modify_qp) and pass its number to rdma_accept. */
	c->qp = ibv_create_qp(c->dev->pd, &attr);
	if (c->qp == NULL) {
		log_warn("%s: ibv_create_qp (send %u, recv %u)", c->peer, c->sq_depth,
			 conn_recv_max(c));
		return -1;
	}
	/* The provider may round up, but must not give less than asked. */
	if (attr.cap.max_send_wr < c->sq_depth || attr.cap.max_recv_wr < conn_recv_max(c) ||
	    attr.cap.max_send_sge < 1 || attr.cap.max_recv_sge < 1 ||
	    attr.cap.max_inline_data < need_inline) {
		log_warnx("%s: QP capabilities short: send_wr %u/%u recv_wr %u/%u "
			  "send_sge %u/1 recv_sge %u/1 inline %u/%u", c->peer,
			  attr.cap.max_send_wr, c->sq_depth, attr.cap.max_recv_wr, conn_recv_max(c),
			  attr.cap.max_send_sge, attr.cap.max_recv_sge,
			  attr.cap.max_inline_data, need_inline);
		goto out_destroy_qp;
	}
	/* INIT now, so that the receives can be posted before the accept. */
	if (conn_modify_qp(c, IBV_QPS_INIT, 0) < 0)
		goto out_destroy_qp;
	return 0;

out_destroy_qp:
	ibv_destroy_qp(c->qp);
	c->qp = NULL;
	return -1;
}

/* The control SEND buffer (CHALLENGE, HELLO_REPLY, LIST_REPLY). */
static int
conn_create_ctrl(struct conn *c)
{
	c->ctrl_buf = calloc(1, RB_CTRL_MSG_MAX);
	if (c->ctrl_buf == NULL) {
		log_warnx("%s: out of memory for the control buffer", c->peer);
		return -1;
	}
	c->ctrl_mr = ibv_reg_mr(c->dev->pd, c->ctrl_buf, RB_CTRL_MSG_MAX, 0);
	if (c->ctrl_mr == NULL) {
		log_warn("%s: ibv_reg_mr (control buffer)", c->peer);
		goto out_free;
	}
	c->ctrl_ctx.type = WR_CTRL;
	c->ctrl_ctx.obj = c;
	return 0;

out_free:
	free(c->ctrl_buf);
	c->ctrl_buf = NULL;
	return -1;
}

static void
conn_destroy_ctrl(struct conn *c)
{
	ibv_dereg_mr(c->ctrl_mr);
	free(c->ctrl_buf);
}

struct conn *
conn_create(struct target *t, struct rdma_cm_id *id, unsigned cm_qd,
	    const struct sockaddr *peer)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct epoll_event ev;

	if (c == NULL) {
		log_warnx("connection: out of memory");
		return NULL;
	}
	c->t = t;
	c->id = ++t->next_conn_id;
	c->cm_id = id;
	c->state = CONN_ACCEPTING;
	c->created_ns = c->alive_ns = rb_now_ns();
	c->probe_ctx.type = WR_PROBE;
	c->probe_ctx.obj = c;
	rb_sockaddr_str(peer, c->peer, sizeof(c->peer));
	memcpy(&c->peer_sa, peer, peer->sa_family == AF_INET6 ?
	       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	c->dev = device_get(t, id->verbs);
	if (c->dev == NULL)
		goto out_free;
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
	c->eh.type = EP_COMP;
	c->eh.obj = c;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = &c->eh;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, c->channel->fd, &ev) < 0) {
		log_warn("%s: epoll_ctl", c->peer);
		goto out_destroy_ring;
	}
	id->context = c;
	c->next = t->conns;
	if (t->conns != NULL)
		t->conns->prev = c;
	t->conns = c;
	t->nconns++;
	c->handshaking = 1;
	t->nhandshakes++;
	t->stats.accepted++;
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
 * conn_kick for a finished one. */
static void
conn_destroy(struct conn *c)
{
	struct target *t = c->t;

	if (epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->channel->fd, NULL) < 0)
		log_warn("%s: epoll_ctl del", c->peer);
	stats_conn_closed(c);
	if (c->exp != NULL)
		export_put_conn(t, c->exp);
	if (c->qp != NULL && ibv_destroy_qp(c->qp) != 0)
		log_warnx("%s: ibv_destroy_qp failed", c->peer);
	recvring_destroy(c);
	conn_destroy_ctrl(c);
	conn_destroy_cqs(c);
	free(c->reqs);
	rdma_destroy_id(c->cm_id);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		t->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	t->nconns--;
	conn_handshake_done(c);
	log_debug("%s: connection %llu freed", c->peer, (unsigned long long)c->id);
	free(c);
}

void
conn_handshake_done(struct conn *c)
{
	if (c->handshaking) {
		c->handshaking = 0;
		c->t->nhandshakes--;
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
	if (c->auth_pending) {
		/* E.g. the initiator found our proof wrong (a different key). */
		log_warnx("%s: export %s: authentication failed: no response "
			  "(the initiator gave up after the challenge)", c->peer,
			  c->auth_hello.export_name);
		stats_refused(c->t, STATS_REFUSED_AUTH);
		rb_auth_wipe(c->auth_expect, sizeof(c->auth_expect));
		c->auth_pending = 0;
	}
	c->state = CONN_ERROR;
	c->error_since_ns = rb_now_ns();
	c->backlog_head = c->backlog_tail = NULL;
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
		  c->exp != NULL ? c->exp->cfg->name : "-", conn_state_name(c->state), why);
	conn_enter_error(c);
}

void
conn_close(struct conn *c, const char *why)
{
	if (c->state == CONN_ERROR)
		return;
	log_info("%s: connection closed (export %s): %s", c->peer,
		 c->exp != NULL ? c->exp->cfg->name : "-", why);
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

/* ---- control messages ---- */

static void
conn_post_ctrl(struct conn *c, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->ctrl_buf,
		.length = (uint32_t)len,
		.lkey = c->ctrl_mr->lkey,
	};
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&c->ctrl_ctx;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (conn_post_own(c, &wr, "control message") == 0)
		c->ctrl_busy++;   /* CHALLENGE and HELLO_REPLY may both be in flight */
}

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

static void
hello_refuse(struct conn *c, uint16_t status, const char *name, const char *why)
{
	struct rb_export_info info;

	log_warnx("%s: HELLO for export '%s' refused: %s (%s)", c->peer, name,
		  rb_error_name(status), why);
	if (c->auth_pending)
		stats_refused(c->t, STATS_REFUSED_AUTH);
	else
		stats_refused_status(c->t, status, 1);
	c->auth_pending = 0;
	rb_auth_wipe(c->auth_expect, sizeof(c->auth_expect));
	memset(&info, 0, sizeof(info));
	info.status = status;
	conn_post_ctrl(c, rb_hello_reply_encode(c->ctrl_buf, &info));
	if (c->state != CONN_ERROR)
		c->state = CONN_LINGER;
}

static uint32_t
pow2_floor(uint32_t v)
{
	uint32_t p = 1;

	while (p <= v / 2)
		p *= 2;
	return p;
}

/* The export-level checks, run at HELLO and again after AUTH (a reload or
 * another connection may have changed things meanwhile), then commit: the
 * request slots, the export's connection count, HELLO_REPLY OK. */
static void
conn_hello_finish(struct conn *c, struct recv_buf *rb, const struct rb_hello_info *hp)
{
	struct target *t = c->t;
	struct rb_hello_info h = *hp;
	struct rb_export_info info;
	struct export *e;
	uint32_t max_io;
	unsigned i;

	e = export_find(t, h.export_name);
	if (t->shutting_down) {
		hello_refuse(c, RB_ESHUTDOWN, h.export_name, "target is shutting down");
		return;
	}
	if (e == NULL) {
		hello_refuse(c, RB_ENOENT, h.export_name, "no such export");
		return;
	}
	if (!cfg_export_allows(e->cfg, (struct sockaddr *)&c->peer_sa)) {
		hello_refuse(c, RB_EACCES, h.export_name, "address not allowed");
		return;
	}
	if (e->cfg->max_connections != 0 && e->nconns >= e->cfg->max_connections) {
		hello_refuse(c, RB_EBUSY, h.export_name, "max-connections reached");
		return;
	}
	max_io = h.max_io < t->cfg->max_io ? h.max_io : t->cfg->max_io;
	max_io -= max_io % CONFIG_BLOCK;
	if (max_io < CONFIG_BLOCK) {
		hello_refuse(c, RB_EPROTO, h.export_name, "max_io below 512 bytes");
		return;
	}
	c->qd = h.queue_depth < c->cm_qd ? h.queue_depth : c->cm_qd;
	/* Proved (or no secret asked): every request the initiator may now
	 * send needs a posted buffer before HELLO_REPLY goes out. */
	if (recvring_grow(c, c->qd + 1) < 0) {
		hello_refuse(c, RB_ENOMEM, h.export_name, "cannot grow the receive ring");
		return;
	}
	c->nreqs = 2 * c->qd;
	c->reqs = calloc(c->nreqs, sizeof(*c->reqs));
	if (c->reqs == NULL) {
		hello_refuse(c, RB_ENOMEM, h.export_name, "out of memory");
		return;
	}
	for (i = c->nreqs; i-- > 0;) {
		req_init(&c->reqs[i], c);
		c->reqs[i].next = c->free_reqs;
		c->free_reqs = &c->reqs[i];
	}
	/* No connection may hold more than half of the device's pool, nor
	 * run more TRIM/WRITE_ZEROES than half of the worker threads. */
	c->buf_cap = pool_nbufs(c->dev->pool) / 2 > 0 ? pool_nbufs(c->dev->pool) / 2 : 1;
	c->slow_quota = t->cfg->threads / 2 > 0 ? t->cfg->threads / 2 : 1;
	c->exp = e;
	e->nconns++;
	c->auth_pending = 0;
	c->send_inv = (h.flags & RB_HELLO_SEND_INV) != 0;
	c->inline_max = t->cfg->inline_max < max_io ? t->cfg->inline_max : max_io;
	c->lim.export_size = e->cfg->size;
	c->lim.max_io = max_io;
	c->lim.min_block = CONFIG_BLOCK;
	c->lim.inline_max = c->inline_max;
	c->lim.read_only = e->cfg->read_only;

	memset(&info, 0, sizeof(info));
	info.status = RB_OK;
	info.queue_depth = (uint16_t)c->qd;
	info.flags = export_flags(e);
	info.size = e->cfg->size;
	info.min_block = CONFIG_BLOCK;
	info.pref_block = pow2_floor(max_io < 4096 ? max_io : 4096);
	info.max_io = max_io;
	info.inline_max = c->inline_max;
	snprintf(info.description, sizeof(info.description), "%s", e->cfg->description);
	c->state = CONN_READY;
	conn_handshake_done(c);
	if (conn_post_recv(c, rb) < 0)
		return;
	log_info("%s: connected to export %s, queue depth %u, max-io %u, inline %u",
		 c->peer, e->cfg->name, c->qd, max_io, c->inline_max);
	conn_post_ctrl(c, rb_hello_reply_encode(c->ctrl_buf, &info));
}

/* The CHALLENGE for HELLO h under key k: a fresh nonce Nt, our proof Mt, and
 * the Mi we expect (kept in c->auth_expect), both over the connection as we
 * see it, so that proofs relayed from another connection do not match.
 * 0, or -1 with a reason in why. */
static int
conn_challenge(struct conn *c, const struct rb_secret *k, const struct rb_hello_info *h,
	       struct rb_auth_info *ch, char *why, size_t whylen)
{
	struct rb_auth_bind b;

	if (rb_qp_view(c->qp, c->cm_id, 1, &b, why, whylen) < 0)
		return -1;
	memset(ch, 0, sizeof(*ch));
	if (rb_auth_nonce(ch->nonce) < 0 ||
	    rb_auth_mac_target(k, h->nonce, ch->nonce, &b, h->export_name, ch->mac) < 0 ||
	    rb_auth_mac_initiator(k, h->nonce, ch->nonce, &b, h->export_name,
				  c->auth_expect) < 0) {
		rb_auth_wipe(ch, sizeof(*ch));
		rb_auth_wipe(c->auth_expect, sizeof(c->auth_expect));
		snprintf(why, whylen, "cannot compute the challenge");
		return -1;
	}
	return 0;
}

/* HELLO: refusals that need no secret first (nothing is committed for
 * them), then CHALLENGE when this peer needs a secret, else finish. */
static void
conn_hello(struct conn *c, struct recv_buf *rb)
{
	struct target *t = c->t;
	struct rb_hello_info h;
	struct rb_auth_info ch;
	const struct rb_secret *k;
	struct export *e;
	const char *why = "?";
	char cwhy[192];

	if (rb_hello_decode(rb->buf, rb->len, &h, &why) < 0) {
		hello_refuse(c, RB_EPROTO, "?", why);
		return;
	}
	e = export_find(t, h.export_name);
	if (t->shutting_down) {
		hello_refuse(c, RB_ESHUTDOWN, h.export_name, "target is shutting down");
		return;
	}
	if (e == NULL) {
		hello_refuse(c, RB_ENOENT, h.export_name, "no such export");
		return;
	}
	if (!cfg_export_allows(e->cfg, (struct sockaddr *)&c->peer_sa)) {
		hello_refuse(c, RB_EACCES, h.export_name, "address not allowed");
		return;
	}
	k = cfg_export_secret(e->cfg, (struct sockaddr *)&c->peer_sa);
	if (k == NULL) {
		conn_hello_finish(c, rb, &h);
		return;
	}
	if (!(h.flags & RB_HELLO_AUTH_BIND)) {
		hello_refuse(c, RB_EPROTO, h.export_name, "the export needs a secret and "
			     "the initiator does not bind authentication to the connection "
			     "(no AUTH_BIND flag in HELLO: an initiator older than it; "
			     "upgrade it)");
		return;
	}
	/* Mt proves we know the key (over the initiator's fresh nonce); the
	 * Mi we expect covers our fresh nonce, so a recorded AUTH from an
	 * earlier connection never matches.  The key's identity stays with
	 * the connection, for the reload check (revoke.c). */
	if (conn_challenge(c, k, &h, &ch, cwhy, sizeof(cwhy)) < 0) {
		hello_refuse(c, RB_ENOMEM, h.export_name, cwhy);
		return;
	}
	c->key_set = rb_secret_id(k, c->key_id) == 0;
	if (!c->key_set) {
		rb_auth_wipe(&ch, sizeof(ch));
		hello_refuse(c, RB_ENOMEM, h.export_name, "cannot compute the key's identity");
		return;
	}
	c->auth_hello = h;
	c->auth_pending = 1;
	if (conn_post_recv(c, rb) < 0) {
		rb_auth_wipe(&ch, sizeof(ch));
		return;
	}
	log_debug("%s: export %s: challenge sent", c->peer, h.export_name);
	conn_post_ctrl(c, rb_challenge_encode(c->ctrl_buf, &ch));
	rb_auth_wipe(&ch, sizeof(ch));
}

/* AUTH: the initiator's proof, checked in constant time. */
static void
conn_auth(struct conn *c, struct recv_buf *rb)
{
	struct rb_auth_info a;
	const char *why = "?", *name = c->auth_hello.export_name;
	struct export *e;
	int ok;

	if (rb_auth_decode(rb->buf, rb->len, &a, &why) < 0) {
		log_warnx("%s: export %s: authentication failed: malformed AUTH (%s)",
			  c->peer, name, why);
		hello_refuse(c, RB_EPROTO, name, why);
		return;
	}
	ok = rb_auth_mac_equal(a.mac, c->auth_expect);
	rb_auth_wipe(&a, sizeof(a));
	rb_auth_wipe(c->auth_expect, sizeof(c->auth_expect));
	if (!ok) {
		log_warnx("%s: export %s: authentication failed: wrong response",
			  c->peer, name);
		hello_refuse(c, RB_EACCES, name, "authentication failed");
		return;
	}
	/* A reload between CHALLENGE and AUTH may have given the peer
	 * another key: what it proved no longer counts. */
	e = export_find(c->t, name);
	if (e != NULL && conn_key_stale(c, e->cfg)) {
		log_warnx("%s: export %s: authentication failed: the export's "
			  "secret-file changed during the handshake", c->peer, name);
		hello_refuse(c, RB_EACCES, name, "authentication failed");
		return;
	}
	log_info("%s: export %s: initiator authenticated", c->peer, name);
	c->auth_pending = 0;
	conn_hello_finish(c, rb, &c->auth_hello);
}

static void
conn_list(struct conn *c, struct recv_buf *rb)
{
	struct export *e;
	const char *why = "?";
	size_t len;

	if (rb_list_decode(rb->buf, rb->len, &why) < 0) {
		conn_fail(c, why);
		return;
	}
	len = rb_list_reply_init(c->ctrl_buf);
	for (e = c->t->exports; e != NULL; e = e->next) {
		if (e->removed || !cfg_export_allows(e->cfg, (struct sockaddr *)&c->peer_sa) ||
		    !cfg_export_listed(e->cfg, (struct sockaddr *)&c->peer_sa))
			continue;
		if (rb_list_reply_add(c->ctrl_buf, &len, e->cfg->name, e->cfg->description) < 0)
			break;
	}
	log_info("%s: listed exports", c->peer);
	c->state = CONN_LINGER;
	conn_post_ctrl(c, len);
}

static void
conn_request(struct conn *c, struct recv_buf *rb)
{
	struct req *r;

	if (c->credits_used >= c->qd) {
		conn_fail(c, "protocol violation: more requests outstanding than granted");
		return;
	}
	c->credits_used++;
	r = c->free_reqs;
	if (r == NULL || c->backlog_head != NULL) {
		/* Every slot waits for a SEND completion: keep the message. */
		rb->next = NULL;
		if (c->backlog_tail != NULL)
			c->backlog_tail->next = rb;
		else
			c->backlog_head = rb;
		c->backlog_tail = rb;
		return;
	}
	c->free_reqs = r->next;
	r->next = NULL;
	req_start(r, rb);
}

static void
conn_recv(struct conn *c, struct recv_buf *rb)
{
	const char *why = "?";
	uint8_t type;

	if (c->state == CONN_ERROR || c->state == CONN_LINGER || c->state == CONN_DRAINING)
		return;   /* dropped: the connection is going away */
	if (rb_msg_peek(rb->buf, rb->len, &type, &why) < 0) {
		conn_fail(c, why);
		return;
	}
	switch (c->state) {
	case CONN_ACCEPTING:
	case CONN_HELLO:
		if (c->auth_pending) {
			if (type == RB_MSG_AUTH) {
				conn_auth(c, rb);
			} else {
				log_warnx("%s: export %s: authentication failed: "
					  "expected AUTH", c->peer,
					  c->auth_hello.export_name);
				stats_refused(c->t, STATS_REFUSED_AUTH);
				rb_auth_wipe(c->auth_expect, sizeof(c->auth_expect));
				c->auth_pending = 0;
				conn_fail(c, "protocol violation: expected AUTH");
			}
		} else if (type == RB_MSG_HELLO) {
			conn_hello(c, rb);
		} else if (type == RB_MSG_LIST) {
			conn_list(c, rb);
			return;
		} else {
			conn_fail(c, "protocol violation: expected HELLO or LIST");
		}
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

/* ---- completions ---- */

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
			conn_fail(c, "work completion error");
		}
	}
	switch (ctx->type) {
	case WR_RECV:
		if (ok) {
			struct recv_buf *rb = ctx->obj;

			rb->len = wc->byte_len;
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

/* Returns the number of completions handled. */
static unsigned
conn_poll_cq(struct conn *c, struct ibv_cq *cq)
{
	struct ibv_wc wc[16];
	unsigned total = 0;
	int n, i;

	while ((n = ibv_poll_cq(cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++)
			conn_handle_wc(c, &wc[i]);
		total += (unsigned)n;
	}
	if (n < 0) {
		log_warnx("%s: ibv_poll_cq failed (%d)", c->peer, n);
		conn_fail(c, "cannot poll the completion queue");
	}
	return total;
}

void
conn_handle_cq_event(struct conn *c)
{
	struct ibv_cq *cq;
	void *ctx;
	unsigned nsend = 0, nrecv = 0;

	while (ibv_get_cq_event(c->channel, &cq, &ctx) == 0) {
		if (cq == c->send_cq)
			nsend++;
		else
			nrecv++;
	}
	if (nsend) {
		ibv_ack_cq_events(c->send_cq, nsend);
		c->send_armed = 0;      /* conn_send_arm decides at the round's end */
	}
	if (nrecv)
		ibv_ack_cq_events(c->recv_cq, nrecv);
	/* Poll until empty, re-arm, poll again: a completion that arrived
	 * between the last poll and the re-arm is not lost.  A CQ stays
	 * armed until its event fires: re-arm only the one that fired. */
	conn_poll_cq(c, c->recv_cq);
	conn_poll_cq(c, c->send_cq);
	if (nrecv && ibv_req_notify_cq(c->recv_cq, 0) != 0) {
		conn_fail(c, "ibv_req_notify_cq failed");
		return;
	}
	if (nrecv)
		conn_poll_cq(c, c->recv_cq);
}

/* ---- posting: one chain per connection and round ---- */

void
conn_queue_send(struct conn *c, struct ibv_send_wr *first, struct ibv_send_wr *last)
{
	last->next = NULL;
	if (c->post_tail != NULL)
		c->post_tail->next = first;
	else
		c->post_head = first;
	c->post_tail = last;
}

/* bad and the WRs after it were not posted: give back their slots and let
 * their requests move on (the connection is in error by now).  The WRs
 * before bad were posted and will complete or flush. */
static void
conn_unpost(struct ibv_send_wr *first, struct ibv_send_wr *bad)
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
		conn_unpost(first, first);
		return;
	}
	rc = ibv_post_send(c->qp, first, &bad);
	if (rc == 0)
		return;
	log_warnx("%s: ibv_post_send (chained request WRs): %s", c->peer, strerror(rc));
	conn_fail(c, "cannot post a work request");
	conn_unpost(first, bad != NULL ? bad : first);
}

/* 1 when a request waits for a quota (pool share, slow-job slots) that
 * has room now. */
static int
conn_quota_room(const struct conn *c)
{
	return (c->cap_waiters > 0 && c->bufs_held < c->buf_cap) ||
	       (c->slot_waiters > 0 && c->slow_inflight < c->slow_quota);
}

/* Does anything wait for a send completion?  Reply SENDs alone do not:
 * their completions only free slots and buffers, and are reaped by
 * polling each round.  RDMA READs (a WRITE's data), control SENDs and
 * the probe do, and so does anyone short of slots or buffers. */
static int
conn_wants_send_events(const struct conn *c)
{
	return c->reads_pending > 0 || c->state != CONN_READY || c->ctrl_busy ||
	       c->probe_busy || c->sq_wait_head != NULL || c->backlog_head != NULL ||
	       c->cap_waiters > 0 ||
	       (c->sq_used > 0 && pool_has_waiters(c->dev->pool));
}

/* Reap send completions; arm the send CQ when something waits for one,
 * then poll again (a completion between the poll and the arm is not
 * lost).  Posts what the completions queued. */
int
conn_send_arm(struct conn *c)
{
	unsigned reaped;

	conn_post_sends(c);
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
	/* What was reaped here freed SQ slots, request slots or buffers after
	 * this round's conn_resume and pool_service ran. */
	return reaped > 0 && c->state != CONN_ERROR &&
	       (c->sq_wait_head != NULL || c->backlog_head != NULL || conn_quota_room(c));
}

/* ---- send-queue accounting ---- */

int
conn_sq_reserve(struct conn *c, struct req *r, unsigned n)
{
	if (c->sq_used + n <= c->sq_depth &&
	    (c->sq_wait_head == NULL || c->sq_wait_head == r)) {
		if (r->sq_waiting)
			conn_sq_cancel(c, r);
		c->sq_used += n;
		return 1;
	}
	if (!r->sq_waiting) {
		r->sq_waiting = 1;
		r->next = NULL;
		if (c->sq_wait_tail != NULL)
			c->sq_wait_tail->next = r;
		else
			c->sq_wait_head = r;
		c->sq_wait_tail = r;
	}
	return 0;
}

void
conn_sq_cancel(struct conn *c, struct req *r)
{
	struct req **pp, *prev = NULL;

	for (pp = &c->sq_wait_head; *pp != NULL; prev = *pp, pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			if (c->sq_wait_tail == r)
				c->sq_wait_tail = prev;
			break;
		}
	}
	r->sq_waiting = 0;
	r->next = NULL;
}

/* ---- after each event-loop round ---- */

static void
conn_resume(struct conn *c)
{
	struct recv_buf *rb;
	struct req *r;
	unsigned i;

	/* Requests that wait for the connection's share of the pool or of
	 * the slow-job slots. */
	for (i = 0; i < c->nreqs && conn_quota_room(c) && c->state != CONN_ERROR; i++)
		if ((c->reqs[i].cap_wait && c->bufs_held < c->buf_cap) ||
		    (c->reqs[i].slot_wait && c->slow_inflight < c->slow_quota))
			req_process(&c->reqs[i]);

	while (c->sq_wait_head != NULL && c->sq_used < c->sq_depth &&
	       c->state != CONN_ERROR) {
		r = c->sq_wait_head;
		req_process(r);
		if (c->sq_wait_head == r)
			break;    /* still no room for it */
	}
	while ((c->state == CONN_READY || c->state == CONN_DRAINING) &&
	       c->backlog_head != NULL && c->free_reqs != NULL) {
		rb = c->backlog_head;
		c->backlog_head = rb->next;
		if (c->backlog_head == NULL)
			c->backlog_tail = NULL;
		r = c->free_reqs;
		c->free_reqs = r->next;
		r->next = NULL;
		req_start(r, rb);
	}
}

int
conn_kick(struct conn *c)
{
	unsigned i;

	if (c->state != CONN_ERROR) {
		/* Send completions first: they free slots and buffers. */
		conn_poll_cq(c, c->send_cq);
		conn_resume(c);
		if (c->state == CONN_DRAINING && c->active == 0 && c->backlog_head == NULL &&
		    !c->ctrl_busy)
			conn_close(c, "drained");
		if (c->state != CONN_ERROR)
			return 0;
	}
	/* Nothing queued is posted any more (it is given back); reap the
	 * flushed completions and arm the send CQ for the rest, then force
	 * every request to release what it can. */
	conn_send_arm(c);
	for (i = 0; i < c->nreqs; i++)
		if (c->reqs[i].state != REQ_FREE)
			req_process(&c->reqs[i]);
	if (c->io_inflight > 0)
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
		for (i = 0; i < c->nreqs; i++) {
			c->reqs[i].wr_pending = 0;
			c->reqs[i].data_orphan = 0;
			if (c->reqs[i].state != REQ_FREE)
				req_process(&c->reqs[i]);
		}
	}
	if (c->active != 0)
		log_warnx("%s: %u requests still active at teardown", c->peer, c->active);
	conn_destroy(c);
	return 1;
}

void
conn_abort(struct conn *c)
{
	c->state = CONN_ERROR;
	conn_destroy(c);
}
