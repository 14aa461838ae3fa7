/* HELLO and LIST exchanges, run before any request (no other thread touches
 * the CQs yet).  Each control SEND's completion is reaped before the control
 * buffer is written again or the handshake ends. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>

#include "cqarm.h"
#include "deadline.h"
#include "internal.h"
#include "qpview.h"
#include "util.h"

static void *
ctrl_buf(struct rb_conn *conn)
{
	return (char *)conn->send.base +
		(size_t)(conn->nsend_bufs - 1) * RB_MSG_BUF_SIZE;
}

static int
post_ctrl(struct rb_conn *conn, size_t len, char *errbuf)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	int r;

	rb_conn_send_wr(conn, &wr, &sge, ctrl_buf(conn), len, &conn->ctrl_ctx);
	r = ibv_post_send(conn->id->qp, &wr, &bad);
	if (r != 0) {
		rb_seterr(errbuf, "handshake: ibv_post_send: %s", strerror(r));
		return -r;
	}
	return 0;
}

/* One CQ, one completion at a time (common/cqarm.h callbacks). */
struct one_cq {
	struct rb_conn *conn;
	struct ibv_cq *cq;
	struct ibv_wc *wc;
};

static int
one_cq_poll(void *opaque)
{
	struct one_cq *o = opaque;

	memset(o->wc, 0, sizeof(*o->wc));
	return ibv_poll_cq(o->cq, 1, o->wc);
}

/* Through the connection's arming record, so that after the handshake
 * the data path knows which CQ is still armed (wait.c). */
static int
one_cq_arm(void *opaque)
{
	struct one_cq *o = opaque;

	return rb_conn_arm_cq(o->conn, o->cq);
}

/* Wait for the next successful completion of the given kind on cq, with
 * the arming rule (poll, arm, poll again) before each sleep, so a
 * completion that raced the arming is seen. */
static int
wait_wc(struct rb_conn *conn, struct ibv_cq *cq, enum rb_wr_kind kind,
	uint64_t deadline_ns, struct ibv_wc *wc, const char *what, char *errbuf)
{
	struct pollfd pfd = { .fd = conn->comp_ch->fd, .events = POLLIN };
	struct one_cq o = { .conn = conn, .cq = cq, .wc = wc };
	int n, ms;

	for (;;) {
		n = rb_cq_poll_arm_poll(one_cq_poll, one_cq_arm, &o);
		if (n == RB_CQ_ARM_FAILED) {
			rb_seterr(errbuf, "%s: ibv_req_notify_cq failed", what);
			return -EIO;
		}
		if (n < 0) {
			rb_seterr(errbuf, "%s: ibv_poll_cq failed", what);
			return -EIO;
		}
		if (n == 1) {
			const struct rb_wr_ctx *ctx = (const void *)(uintptr_t)wc->wr_id;

			if (wc->status != IBV_WC_SUCCESS) {
				rb_seterr(errbuf, "%s from %s:%u: %s", what,
					  conn->cfg.host, conn->cfg.port,
					  wc->status == IBV_WC_WR_FLUSH_ERR ?
					  "connection closed by the target" :
					  ibv_wc_status_str(wc->status));
				return -EIO;
			}
			if (ctx->kind == kind)
				return 0;
			continue;
		}
		ms = rb_deadline_ms_left(deadline_ns);
		if (ms == 0) {
			rb_seterr(errbuf, "%s from %s:%u: timed out", what,
				  conn->cfg.host, conn->cfg.port);
			return -ETIMEDOUT;
		}
		if (poll(&pfd, 1, ms) < 0 && errno != EINTR) {
			rb_seterr(errbuf, "%s: poll: %s", what, strerror(errno));
			return -EIO;
		}
		rb_conn_take_events(conn);
	}
}

/* Wait for one received message. */
static int
wait_recv(struct rb_conn *conn, uint64_t deadline_ns, uint32_t *index,
	  uint32_t *len, const char *what, char *errbuf)
{
	struct ibv_wc wc;
	int r = wait_wc(conn, conn->recv_cq, RB_WR_RECV, deadline_ns, &wc, what,
			errbuf);

	if (r == 0) {
		*index = ((const struct rb_wr_ctx *)(uintptr_t)wc.wr_id)->index;
		*len = wc.byte_len;
	}
	return r;
}

/* The control buffer is free again only after its SEND completed. */
static int
wait_ctrl_sent(struct rb_conn *conn, uint64_t deadline_ns, char *errbuf)
{
	struct ibv_wc wc;

	return wait_wc(conn, conn->send_cq, RB_WR_SEND_CTRL, deadline_ns, &wc,
		       "control send", errbuf);
}

/* Send len bytes of the control buffer and wait until it may be reused. */
static int
send_ctrl(struct rb_conn *conn, size_t len, uint64_t deadline_ns, char *errbuf)
{
	int r = post_ctrl(conn, len, errbuf);

	return r < 0 ? r : wait_ctrl_sent(conn, deadline_ns, errbuf);
}

/* 1 when the message received at index is a HELLO_REPLY that refuses. */
static int
is_refusal(struct rb_conn *conn, uint32_t index, uint32_t len)
{
	struct rb_export_info e;
	const char *why = "";
	const void *buf = rb_conn_recv_buf(conn, index);
	uint8_t type;

	return rb_msg_peek(buf, len, &type, &why) == 0 && type == RB_MSG_HELLO_REPLY &&
	       rb_hello_reply_decode(buf, len, &e, &why) == 0 && e.status != RB_OK;
}

/* Send len bytes of the control buffer and wait for the answer, what, then
 * for the SEND's completion, which frees the buffer for the next message.
 * Not after a refusal: the target sends it and closes at once, so the ACK of
 * our SEND may never come, and the refusal is what the caller must report;
 * the connection then ends, and its teardown destroys the QP before the
 * buffer. */
static int
exchange(struct rb_conn *conn, size_t len, const char *what, uint64_t deadline_ns,
	 uint32_t *index, uint32_t *rlen, char *errbuf)
{
	int r = post_ctrl(conn, len, errbuf);

	if (r == 0)
		r = wait_recv(conn, deadline_ns, index, rlen, what, errbuf);
	if (r == 0 && !is_refusal(conn, *index, *rlen))
		r = wait_ctrl_sent(conn, deadline_ns, errbuf);
	return r;
}

static int
refused(struct rb_conn *conn, uint16_t status, char *errbuf)
{
	rb_seterr(errbuf, "export '%s' on %s:%u: target refused: %s (%s)",
		  conn->cfg.export_name, conn->cfg.host, conn->cfg.port,
		  rb_reason(status), rb_error_name(status));
	return -rb_error_to_errno(status);
}

/* Our proof Mi for a CHALLENGE whose proof Mt checked out, over the
 * connection as we see it: a CHALLENGE relayed from another connection (an
 * on-path relay holds two) was computed for other QPNs and fails here.
 * 0, or a negative errno with errbuf set. */
static int
challenge_proof(struct rb_conn *conn, const struct rb_hello_info *h,
		const struct rb_auth_info *ch, uint8_t mi[RB_MAC_LEN], char *errbuf)
{
	const struct rb_conn_cfg *cfg = &conn->cfg;
	struct rb_auth_bind b;
	uint8_t mt[RB_MAC_LEN];
	char why[160];

	if (rb_qp_view(conn->id->qp, conn->id, 0, &b, why, sizeof(why)) < 0) {
		rb_seterr(errbuf, "%s:%u: authentication: %s", cfg->host, cfg->port, why);
		return -EIO;
	}
	if (rb_auth_mac_target(cfg->secret, h->nonce, ch->nonce, &b, h->export_name,
			       mt) < 0 ||
	    !rb_auth_mac_equal(mt, ch->mac)) {
		rb_auth_wipe(mt, sizeof(mt));
		rb_seterr(errbuf, "export '%s' on %s:%u: target failed to prove it knows "
			  "the secret (for this connection)", cfg->export_name, cfg->host,
			  cfg->port);
		return -EACCES;
	}
	rb_auth_wipe(mt, sizeof(mt));
	if (rb_auth_mac_initiator(cfg->secret, h->nonce, ch->nonce, &b, h->export_name,
				  mi) < 0) {
		rb_seterr(errbuf, "HMAC-SHA256 failed");
		return -ENOMEM;
	}
	return 0;
}

/* CHALLENGE: check the target's proof Mt before anything of ours goes out
 * (a fake target learns nothing), then send AUTH with our proof Mi. */
static int
answer_challenge(struct rb_conn *conn, const struct rb_hello_info *h,
		 uint32_t idx, uint32_t len, uint64_t deadline_ns, char *errbuf)
{
	const struct rb_conn_cfg *cfg = &conn->cfg;
	struct rb_auth_info ch, auth;
	const char *why = "";
	int r;

	if ((cfg->secret == NULL || cfg->secret->key == NULL) &&
	    cfg->test_replay_mac == NULL) {
		rb_seterr(errbuf, "export '%s' on %s:%u: export requires a secret "
			  "(secret-file=)", cfg->export_name, cfg->host, cfg->port);
		return -EACCES;
	}
	if (rb_challenge_decode(rb_conn_recv_buf(conn, idx), len, &ch, &why) < 0) {
		rb_seterr(errbuf, "%s:%u: bad CHALLENGE: %s", cfg->host, cfg->port, why);
		return -EPROTO;
	}
	memset(&auth, 0, sizeof(auth));
	if (cfg->test_replay_mac != NULL) {
		memcpy(auth.mac, cfg->test_replay_mac, RB_MAC_LEN);
	} else {
		r = challenge_proof(conn, h, &ch, auth.mac, errbuf);
		if (r < 0) {
			rb_auth_wipe(&ch, sizeof(ch));
			rb_auth_wipe(&auth, sizeof(auth));
			return r;
		}
	}
	rb_auth_wipe(&ch, sizeof(ch));
	if (cfg->test_record_mac != NULL)
		memcpy(cfg->test_record_mac, auth.mac, RB_MAC_LEN);
	r = rb_conn_post_recv(conn, idx);
	if (r < 0) {
		rb_auth_wipe(&auth, sizeof(auth));
		rb_seterr(errbuf, "ibv_post_recv: %s", strerror(-r));
		return r;
	}
	/* The ctrl buffer is free again: send_ctrl reaped the HELLO's SEND. */
	r = send_ctrl(conn, rb_auth_encode(ctrl_buf(conn), &auth), deadline_ns,
		      errbuf);
	rb_auth_wipe(&auth, sizeof(auth));
	return r;
}

int
rb_handshake_hello(struct rb_conn *conn, uint64_t deadline_ns, char *errbuf)
{
	struct rb_hello_info h;
	struct rb_export_info *e = &conn->exp;
	int have_secret = conn->cfg.secret != NULL && conn->cfg.secret->key != NULL;
	int authed = 0;
	uint32_t idx = 0, len = 0;
	uint8_t type;
	const char *why = "";
	void *buf;
	int r;

	memset(&h, 0, sizeof(h));
	h.queue_depth = (uint16_t)conn->cm_qd;
	h.max_io = conn->cfg.max_io;
	/* AUTH_BIND always: a target that needs a secret refuses a HELLO
	 * without it, and one that predates it refuses any HELLO with it. */
	h.flags = (conn->use_mw ? RB_HELLO_SEND_INV : 0) | RB_HELLO_AUTH_BIND |
		(conn->test_no_read_inline ? 0 : RB_HELLO_READ_INLINE);
	/* A tag's low 32 bits hold the slot index, unique among the
	 * outstanding requests, as READ_IMM asks (cq.c finds the rest). */
	if (!conn->test_no_read_inline && !conn->test_no_read_imm)
		h.flags |= RB_HELLO_READ_IMM;
	if (rb_auth_nonce(h.nonce) < 0 &&
	    getrandom(h.nonce, sizeof(h.nonce), 0) != (ssize_t)sizeof(h.nonce)) {
		rb_seterr(errbuf, "no random bytes for the HELLO nonce");
		return -EIO;
	}
	if (conn->cfg.test_nonce != NULL)
		memcpy(h.nonce, conn->cfg.test_nonce, RB_NONCE_LEN);
	if (conn->cfg.test_record_nonce != NULL)
		memcpy(conn->cfg.test_record_nonce, h.nonce, RB_NONCE_LEN);
	memcpy(h.export_name, conn->cfg.export_name, sizeof(h.export_name));
	r = exchange(conn, rb_hello_encode(ctrl_buf(conn), &h), "HELLO_REPLY",
		     deadline_ns, &idx, &len, errbuf);
	if (r < 0)
		return r;
	buf = rb_conn_recv_buf(conn, idx);
	if (rb_msg_peek(buf, len, &type, &why) == 0 && type == RB_MSG_CHALLENGE) {
		r = answer_challenge(conn, &h, idx, len, deadline_ns, errbuf);
		if (r < 0)
			return r;
		authed = 1;
		r = wait_recv(conn, deadline_ns, &idx, &len, "HELLO_REPLY", errbuf);
		if (r < 0)
			return r;
		buf = rb_conn_recv_buf(conn, idx);
	}
	r = rb_hello_reply_decode(buf, len, e, &why);
	if (r < 0) {
		rb_seterr(errbuf, "%s:%u: bad HELLO_REPLY: %s", conn->cfg.host,
			  conn->cfg.port, why);
		return -EPROTO;
	}
	if (authed && e->status == RB_EACCES) {
		rb_seterr(errbuf, "export '%s' on %s:%u: target rejected "
			  "authentication (EACCES)", conn->cfg.export_name,
			  conn->cfg.host, conn->cfg.port);
		return -EACCES;
	}
	if (!authed && e->status == RB_EPROTO) {
		rb_seterr(errbuf, "export '%s' on %s:%u: target refused the HELLO: %s "
			  "(EPROTO); a target that predates authentication bound to the "
			  "connection (HELLO flag AUTH_BIND) or inline reads (READ_INLINE, "
			  "READ_IMM) refuses every HELLO of this initiator: upgrade the target",
			  conn->cfg.export_name,
			  conn->cfg.host, conn->cfg.port, rb_reason(RB_EPROTO));
		return -EPROTO;
	}
	if (e->status != RB_OK)
		return refused(conn, e->status, errbuf);
	if (have_secret && !authed) {
		/* We expected mutual authentication: a target that skips it
		 * may be an impostor. */
		rb_seterr(errbuf, "export '%s' on %s:%u: the target did not "
			  "authenticate (the export has no secret, but secret-file= "
			  "was given); refusing", conn->cfg.export_name,
			  conn->cfg.host, conn->cfg.port);
		return -EACCES;
	}
	if ((e->flags & RB_EXP_READ_INLINE) && !(h.flags & RB_HELLO_READ_INLINE)) {
		rb_seterr(errbuf, "%s:%u: HELLO_REPLY grants inline reads (READ_INLINE), "
			  "which the HELLO did not ask for", conn->cfg.host, conn->cfg.port);
		return -EPROTO;
	}
	if ((e->flags & RB_EXP_READ_IMM) &&
	    (!(h.flags & RB_HELLO_READ_IMM) || !(e->flags & RB_EXP_READ_INLINE))) {
		rb_seterr(errbuf, "%s:%u: HELLO_REPLY grants inline reads with immediate "
			  "(READ_IMM), which the HELLO did not ask for or without inline "
			  "reads (READ_INLINE)", conn->cfg.host, conn->cfg.port);
		return -EPROTO;
	}
	conn->read_inline = (e->flags & RB_EXP_READ_INLINE) != 0;
	conn->read_imm = (e->flags & RB_EXP_READ_IMM) != 0;
	if (e->queue_depth > conn->cm_qd || e->max_io > conn->cfg.max_io) {
		rb_seterr(errbuf, "%s:%u: HELLO_REPLY grants more than asked "
			  "(queue depth %u > %u or max-io %u > %u)", conn->cfg.host,
			  conn->cfg.port, e->queue_depth, conn->cm_qd, e->max_io,
			  conn->cfg.max_io);
		return -EPROTO;
	}
	r = rb_conn_post_recv(conn, idx);
	if (r < 0) {
		rb_seterr(errbuf, "ibv_post_recv: %s", strerror(-r));
		return r;
	}
	return 0;
}

int
rb_handshake_list(struct rb_conn *conn, uint64_t deadline_ns, rb_list_fn *cb,
		  void *opaque, char *errbuf)
{
	uint32_t idx = 0, len = 0;
	uint16_t count, flags;
	const char *why = "", *name, *desc;
	size_t pos = 0;
	void *buf;
	int r;

	r = exchange(conn, rb_list_encode(ctrl_buf(conn)), "LIST_REPLY",
		     deadline_ns, &idx, &len, errbuf);
	if (r < 0)
		return r;
	buf = rb_conn_recv_buf(conn, idx);
	if (rb_list_reply_decode(buf, len, &count, &flags, &why) < 0) {
		rb_seterr(errbuf, "%s:%u: bad LIST_REPLY: %s", conn->cfg.host,
			  conn->cfg.port, why);
		return -EPROTO;
	}
	if (flags & RB_LIST_TRUNCATED)
		rb_log(RB_LOG_DEBUG, "%s:%u: export list truncated by the target",
		       conn->cfg.host, conn->cfg.port);
	while (rb_list_reply_next(buf, len, &pos, &name, &desc) == 1) {
		r = cb(opaque, name, desc);
		if (r != 0)
			return r;
	}
	return 0;
}
