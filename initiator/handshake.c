/* HELLO and LIST exchanges, run before the completion thread starts. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>

#include "internal.h"
#include "util.h"

static int
send_ctrl(struct rb_conn *conn, size_t len, char *errbuf)
{
	void *buf = (char *)conn->send.base +
		(size_t)(conn->nsend_bufs - 1) * RB_RECV_BUF_SIZE;
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf,
		.length = (uint32_t)len,
		.lkey = conn->send.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = (uintptr_t)&conn->ctrl_ctx,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int r = ibv_post_send(conn->id->qp, &wr, &bad);

	if (r != 0) {
		rb_seterr(errbuf, "handshake: ibv_post_send: %s", strerror(r));
		return -r;
	}
	return 0;
}

static void *
ctrl_buf(struct rb_conn *conn)
{
	return (char *)conn->send.base +
		(size_t)(conn->nsend_bufs - 1) * RB_RECV_BUF_SIZE;
}

/* Wait for one received message: request notification, poll, and only then
 * sleep on the channel, so a completion that raced the arming is seen. */
static int
wait_recv(struct rb_conn *conn, uint64_t deadline_ns, uint32_t *index,
	  uint32_t *len, const char *what, char *errbuf)
{
	struct pollfd pfd = { .fd = conn->comp_ch->fd, .events = POLLIN };
	struct ibv_wc wc;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int armed = 0, n;

	for (;;) {
		n = ibv_poll_cq(conn->cq, 1, &wc);
		if (n < 0) {
			rb_seterr(errbuf, "%s: ibv_poll_cq failed", what);
			return -EIO;
		}
		if (n == 1) {
			const struct rb_wr_ctx *ctx = (const void *)(uintptr_t)wc.wr_id;

			if (wc.status != IBV_WC_SUCCESS) {
				rb_seterr(errbuf, "%s from %s:%u: %s", what,
					  conn->cfg.host, conn->cfg.port,
					  wc.status == IBV_WC_WR_FLUSH_ERR ?
					  "connection closed by the target" :
					  ibv_wc_status_str(wc.status));
				return -EIO;
			}
			if (ctx->kind == RB_WR_RECV) {
				*index = ctx->index;
				*len = wc.byte_len;
				return 0;
			}
			continue;
		}
		if (!armed) {
			if (ibv_req_notify_cq(conn->cq, 0) != 0) {
				rb_seterr(errbuf, "%s: ibv_req_notify_cq failed", what);
				return -EIO;
			}
			armed = 1;
			continue;
		}
		{
			uint64_t now = rb_now_ns();
			int ms;

			if (now >= deadline_ns) {
				rb_seterr(errbuf, "%s from %s:%u: timed out", what,
					  conn->cfg.host, conn->cfg.port);
				return -ETIMEDOUT;
			}
			ms = (int)((deadline_ns - now + 999999) / 1000000);
			if (poll(&pfd, 1, ms) < 0 && errno != EINTR) {
				rb_seterr(errbuf, "%s: poll: %s", what, strerror(errno));
				return -EIO;
			}
		}
		while (ibv_get_cq_event(conn->comp_ch, &ev_cq, &ev_ctx) == 0) {
			ibv_ack_cq_events(ev_cq, 1);
			armed = 0;
		}
	}
}

static int
refused(struct rb_conn *conn, uint16_t status, char *errbuf)
{
	rb_seterr(errbuf, "export '%s' on %s:%u: target refused: %s (%s)",
		  conn->cfg.export_name, conn->cfg.host, conn->cfg.port,
		  rb_reason(status), rb_error_name(status));
	return -rb_error_to_errno(status);
}

int
rb_handshake_hello(struct rb_conn *conn, uint64_t deadline_ns, char *errbuf)
{
	struct rb_hello_info h;
	struct rb_export_info *e = &conn->exp;
	uint32_t idx, len;
	uint8_t type;
	const char *why = "";
	void *buf;
	int r;

	memset(&h, 0, sizeof(h));
	h.queue_depth = (uint16_t)conn->cm_qd;
	h.max_io = conn->cfg.max_io;
	if (getrandom(h.nonce, sizeof(h.nonce), 0) != (ssize_t)sizeof(h.nonce))
		memset(h.nonce, 0, sizeof(h.nonce));
	memcpy(h.export_name, conn->cfg.export_name, sizeof(h.export_name));
	r = send_ctrl(conn, rb_hello_encode(ctrl_buf(conn), &h), errbuf);
	if (r < 0)
		return r;
	r = wait_recv(conn, deadline_ns, &idx, &len, "HELLO_REPLY", errbuf);
	if (r < 0)
		return r;
	buf = rb_conn_recv_buf(conn, idx);
	if (rb_msg_peek(buf, len, &type, &why) == 0 && type == RB_MSG_CHALLENGE) {
		rb_seterr(errbuf, "export '%s' on %s:%u requires a secret, which "
			  "this initiator does not support yet", conn->cfg.export_name,
			  conn->cfg.host, conn->cfg.port);
		return -EACCES;
	}
	r = rb_hello_reply_decode(buf, len, e, &why);
	if (r < 0) {
		rb_seterr(errbuf, "%s:%u: bad HELLO_REPLY: %s", conn->cfg.host,
			  conn->cfg.port, why);
		return -EPROTO;
	}
	if (e->status != RB_OK)
		return refused(conn, e->status, errbuf);
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
	uint32_t idx, len;
	uint16_t count, flags;
	const char *why = "", *name, *desc;
	size_t pos = 0;
	void *buf;
	int r;

	r = send_ctrl(conn, rb_list_encode(ctrl_buf(conn)), errbuf);
	if (r < 0)
		return r;
	r = wait_recv(conn, deadline_ns, &idx, &len, "LIST_REPLY", errbuf);
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
