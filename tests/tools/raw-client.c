/* raw-client: an rdmablk connection on librdmacm and libibverbs directly
 * (raw-client.h). */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raw-client.h"
#include "deadline.h"
#include "util.h"

struct raw_cfg raw = { .timeout_s = 10, .connect_qd = 8, .prog = "raw-client", .cur = "?" };

void
debug(const char *fmt, ...)
{
	va_list ap;

	if (!raw.verbose)
		return;
	fprintf(stderr, "%s: %s: ", raw.prog, raw.cur);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void __attribute__((format(printf, 1, 2)))
raw_fail(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (raw.fail != NULL)
		raw.fail(msg);
	else
		fprintf(stderr, "%s: %s\n", raw.prog, msg);
}

uint64_t
deadline_after_s(unsigned s)
{
	return rb_deadline_after((uint64_t)s * 1000000000ull);
}

/* ---- verbs setup of one connection ---- */

int
raw_qp_create(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_comp_channel *cc,
	      unsigned send_wr, unsigned recv_wr, unsigned max_inline,
	      struct ibv_cq **cq, const char **what)
{
	struct ibv_qp_init_attr qa;

	*cq = ibv_create_cq(id->verbs, (int)(send_wr + recv_wr), NULL, cc, 0);
	if (*cq == NULL || (cc != NULL && ibv_req_notify_cq(*cq, 0) != 0)) {
		*what = "ibv_create_cq";
		return -1;
	}
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = *cq;
	qa.recv_cq = *cq;
	qa.cap.max_send_wr = send_wr;
	qa.cap.max_recv_wr = recv_wr;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = max_inline;
	if (rdma_create_qp(id, pd, &qa) != 0) {
		*what = "rdma_create_qp";
		return -1;
	}
	if (qa.cap.max_send_wr < send_wr || qa.cap.max_recv_wr < recv_wr ||
	    qa.cap.max_inline_data < max_inline) {
		*what = "rdma_create_qp (smaller capacities than asked for)";
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int
raw_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

int
raw_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, uint64_t deadline_ns)
{
	struct timespec ts = { 0, 1000000 };
	int n;

	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			return -1;
		if (n == 1)
			return 0;
		if (rb_now_ns() >= deadline_ns)
			break;
		nanosleep(&ts, NULL);
	}
	errno = ETIMEDOUT;
	return -1;
}

static int
wc_is_recv(const struct ibv_wc *wc)
{
	return (wc->opcode & IBV_WC_RECV) != 0;
}

int
raw_poll_kind(struct ibv_cq *cq, struct raw_stash *st, int want_recv, struct ibv_wc *wc,
	      uint64_t deadline_ns)
{
	unsigned i;

	for (i = 0; i < st->n; i++)
		if (wc_is_recv(&st->wc[i]) == !!want_recv) {
			*wc = st->wc[i];
			memmove(&st->wc[i], &st->wc[i + 1], (st->n - i - 1) * sizeof(*wc));
			st->n--;
			return 0;
		}
	for (;;) {
		if (raw_poll_one(cq, wc, deadline_ns) < 0)
			return -1;
		if (wc->status != IBV_WC_SUCCESS || wc_is_recv(wc) == !!want_recv)
			return 0;
		if (st->n == RAW_STASH) {
			errno = EOVERFLOW;
			return -1;
		}
		st->wc[st->n++] = *wc;
	}
}

/* ---- the client's connections ---- */

static void
h_mark_closed(struct hconn *h, const char *why)
{
	if (h->closed)
		return;
	h->closed = 1;
	snprintf(h->closed_why, sizeof(h->closed_why), "%s", why);
}

/* Wait up to deadline for the next CM event; copies what is needed and
 * acks it.  Returns the event type, or -1 on timeout/error. */
int
h_cm_event(struct hconn *h, uint64_t deadline, int *status, uint8_t *priv,
	   uint8_t *priv_len)
{
	struct rdma_cm_event *e;
	struct pollfd pfd = { .fd = h->ec->fd, .events = POLLIN };
	int type;

	for (;;) {
		if (rdma_get_cm_event(h->ec, &e) == 0)
			break;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			debug("rdma_get_cm_event: %s", strerror(errno));
			return -1;
		}
		uint64_t now = rb_now_ns();
		if (now >= deadline)
			return -1;
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000 + 1)) < 0 && errno != EINTR)
			return -1;
	}
	type = (int)e->event;
	if (status != NULL)
		*status = e->status;
	if (priv != NULL && priv_len != NULL) {
		size_t n = e->param.conn.private_data != NULL ? e->param.conn.private_data_len : 0;

		if (n > 64)
			n = 64;
		if (n > 0)
			memcpy(priv, e->param.conn.private_data, n);
		*priv_len = (uint8_t)n;
	}
	rdma_ack_cm_event(e);
	debug("CM event %s (status %d)", rdma_event_str((enum rdma_cm_event_type)type),
	      status != NULL ? *status : 0);
	return type;
}

void
h_close(struct hconn *h)
{
	if (h->id != NULL && h->connected && !h->closed)
		rdma_disconnect(h->id);
	if (h->qp != NULL)
		rdma_destroy_qp(h->id);
	if (h->extra_mr != NULL)
		ibv_dereg_mr(h->extra_mr);
	if (h->data_mr != NULL)
		ibv_dereg_mr(h->data_mr);
	if (h->send_mr != NULL)
		ibv_dereg_mr(h->send_mr);
	if (h->recv_mr != NULL)
		ibv_dereg_mr(h->recv_mr);
	if (h->cq != NULL)
		ibv_destroy_cq(h->cq);
	if (h->cc != NULL)
		ibv_destroy_comp_channel(h->cc);
	if (h->pd != NULL)
		ibv_dealloc_pd(h->pd);
	if (h->id != NULL)
		rdma_destroy_id(h->id);
	if (h->ec != NULL)
		rdma_destroy_event_channel(h->ec);
	free(h->recv_mem);
	free(h->send_mem);
	free(h->data);
	free(h->extra);
	memset(h, 0, sizeof(*h));
}

int
h_post_recv(struct hconn *h, unsigned i)
{
	int rc = raw_post_recv(h->qp, WRID(WR_KIND_RECV, i),
			       h->recv_mem + (size_t)i * RB_MSG_BUF_SIZE, RB_MSG_BUF_SIZE,
			       h->recv_mr->lkey);

	if (rc != 0)
		debug("ibv_post_recv: %s", strerror(rc));
	return rc == 0 ? 0 : -1;
}

/* Resolve the target and set up PD, CQ, QP and buffers, with receives
 * posted: everything up to rdma_connect.  Returns 0 or -1 (reported). */
int
h_open(struct hconn *h)
{
	uint64_t deadline = rb_now_ns() + H_RESOLVE_MS * 1000000ull;
	const char *what = "?";
	int type, status = 0, r;
	size_t data_size;
	unsigned i;

	memset(h, 0, sizeof(*h));
	h->next_tag = 1;
	h->ec = rdma_create_event_channel();
	if (h->ec == NULL || rb_fd_set_nonblock(h->ec->fd) < 0) {
		raw_fail("rdma_create_event_channel: %s", strerror(errno));
		goto out_close;
	}
	if (rdma_create_id(h->ec, &h->id, h, RDMA_PS_TCP) != 0) {
		raw_fail("rdma_create_id: %s", strerror(errno));
		goto out_close;
	}
	if (rdma_resolve_addr(h->id, raw.has_src ? (struct sockaddr *)&raw.src : NULL,
			      (struct sockaddr *)&raw.dst, H_RESOLVE_MS) != 0) {
		raw_fail("rdma_resolve_addr: %s", strerror(errno));
		goto out_close;
	}
	type = h_cm_event(h, deadline, &status, NULL, NULL);
	if (type != RDMA_CM_EVENT_ADDR_RESOLVED) {
		raw_fail("address resolution failed (event %d, status %d)", type, status);
		goto out_close;
	}
	if (rdma_resolve_route(h->id, H_RESOLVE_MS) != 0) {
		raw_fail("rdma_resolve_route: %s", strerror(errno));
		goto out_close;
	}
	type = h_cm_event(h, deadline, &status, NULL, NULL);
	if (type != RDMA_CM_EVENT_ROUTE_RESOLVED) {
		raw_fail("route resolution failed (event %d, status %d)", type, status);
		goto out_close;
	}
	h->pd = ibv_alloc_pd(h->id->verbs);
	h->cc = h->pd != NULL ? ibv_create_comp_channel(h->id->verbs) : NULL;
	if (h->cc == NULL || rb_fd_set_nonblock(h->cc->fd) < 0) {
		raw_fail("ibv_alloc_pd/ibv_create_comp_channel: %s", strerror(errno));
		goto out_close;
	}
	r = raw_qp_create(h->id, h->pd, h->cc, H_NSEND, H_NRECV, 0, &h->cq, &what);
	h->qp = h->id->qp;
	if (r < 0) {
		raw_fail("%s: %s", what, strerror(errno));
		goto out_close;
	}
	h->nrecv = raw.lean ? H_LEAN_RECV : H_NRECV;
	h->nsend = raw.lean ? H_LEAN_SEND : H_NSEND;
	data_size = raw.lean ? H_LEAN_DATA : H_DATA_SIZE;
	h->recv_mem = calloc(h->nrecv, RB_MSG_BUF_SIZE);
	h->send_mem = calloc(h->nsend, H_SEND_SLOT);
	h->data = calloc(1, data_size);
	if (h->recv_mem == NULL || h->send_mem == NULL || h->data == NULL) {
		raw_fail("out of memory");
		goto out_close;
	}
	h->recv_mr = ibv_reg_mr(h->pd, h->recv_mem, (size_t)h->nrecv * RB_MSG_BUF_SIZE,
				IBV_ACCESS_LOCAL_WRITE);
	h->send_mr = ibv_reg_mr(h->pd, h->send_mem, (size_t)h->nsend * H_SEND_SLOT, 0);
	h->data_mr = ibv_reg_mr(h->pd, h->data, data_size, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	if (h->recv_mr == NULL || h->send_mr == NULL || h->data_mr == NULL) {
		raw_fail("ibv_reg_mr: %s", strerror(errno));
		goto out_close;
	}
	for (i = 0; i < (raw.starving ? 1u : h->nrecv); i++)
		if (h_post_recv(h, i) < 0) {
			raw_fail("cannot post receives");
			goto out_close;
		}
	return 0;

out_close:
	h_close(h);
	return -1;
}

/* rdma_connect with the given private data (NULL: none) and wait for the
 * outcome.  On CONN_REJECTED, *why says what the reject carried. */
enum conn_result
h_connect_raw(struct hconn *h, const void *priv, uint8_t priv_len, char *why, size_t wsize)
{
	struct rdma_conn_param param;
	struct ibv_device_attr attr;
	uint8_t rpriv[64], rlen = 0;
	uint16_t st = 0, qd = 0;
	const char *dwhy = "?";
	int type, status = 0;

	memset(&param, 0, sizeof(param));
	param.private_data = priv;
	param.private_data_len = priv_len;
	param.responder_resources = 1;
	if (ibv_query_device(h->id->verbs, &attr) == 0 && attr.max_qp_rd_atom > 1)
		param.responder_resources = (uint8_t)(attr.max_qp_rd_atom < 16 ?
						       attr.max_qp_rd_atom : 16);
	param.initiator_depth = 0;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(h->id, &param) != 0) {
		snprintf(why, wsize, "rdma_connect: %s", strerror(errno));
		return CONN_FAILED;
	}
	type = h_cm_event(h, deadline_after_s(raw.timeout_s), &status, rpriv, &rlen);
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		h->connected = 1;
		if (rb_conn_priv_decode(rlen ? rpriv : NULL, rlen, &st, &qd, &dwhy) == 0)
			h->cm_qd = qd;
		snprintf(why, wsize, "established, queue depth %u", h->cm_qd);
		return CONN_OK;
	case RDMA_CM_EVENT_REJECTED:
		if (rb_conn_priv_decode(rlen ? rpriv : NULL, rlen, &st, &qd, &dwhy) == 0)
			snprintf(why, wsize, "%s", rb_error_name(st));
		else
			snprintf(why, wsize, "no rdmablk reason (%s, CM status %d)", dwhy, status);
		return CONN_REJECTED;
	case -1:
		snprintf(why, wsize, "no CM event within %u s", raw.timeout_s);
		return CONN_FAILED;
	default:
		snprintf(why, wsize, "%s (status %d)",
			 rdma_event_str((enum rdma_cm_event_type)type), status);
		return CONN_FAILED;
	}
}

/* A well-formed connect.  Returns 0 or -1 (reported as a failure). */
int
h_connect(struct hconn *h)
{
	uint8_t priv[sizeof(struct rb_conn_priv)];
	char why[128];

	if (h_open(h) < 0)
		return -1;
	rb_conn_priv_encode(priv, RB_OK, raw.connect_qd);
	if (h_connect_raw(h, priv, sizeof(priv), why, sizeof(why)) != CONN_OK) {
		raw_fail("connect failed: %s", why);
		h_close(h);
		return -1;
	}
	return 0;
}

/* rdma_connect with good private data, without waiting for the outcome. */
int
h_connect_nowait(struct hconn *h, uint16_t qd)
{
	uint8_t priv[sizeof(struct rb_conn_priv)];
	struct rdma_conn_param param;

	rb_conn_priv_encode(priv, RB_OK, qd);
	memset(&param, 0, sizeof(param));
	param.private_data = priv;
	param.private_data_len = sizeof(priv);
	param.responder_resources = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	return rdma_connect(h->id, &param);
}

/* One completion: frees a send slot, records a failure as the end of the
 * connection, or copies a received message into ev (returns 1). */
static int
h_handle_wc(struct hconn *h, const struct ibv_wc *wc, struct hev *ev)
{
	uint32_t kind = (uint32_t)(wc->wr_id >> 32), idx = (uint32_t)wc->wr_id;
	char why[160];

	if (kind == WR_KIND_SEND && idx < h->nsend)
		h->send_busy[idx] = 0;
	if (wc->status != IBV_WC_SUCCESS) {
		/* On error only wr_id, status, qp_num and vendor_err are valid. */
		snprintf(why, sizeof(why), "%s completion: %s",
			 kind == WR_KIND_SEND ? "send" : "receive",
			 ibv_wc_status_str(wc->status));
		debug("%s", why);
		h_mark_closed(h, why);
		return 0;
	}
	if (kind != WR_KIND_RECV || idx >= h->nrecv)
		return 0;
	ev->kind = EV_MSG;
	ev->len = wc->byte_len <= RB_MSG_BUF_SIZE ? wc->byte_len : RB_MSG_BUF_SIZE;
	memcpy(ev->buf, h->recv_mem + (size_t)idx * RB_MSG_BUF_SIZE, ev->len);
	if (!h->closed && !raw.starving)
		h_post_recv(h, idx);
	return 1;
}

/* Drain CM events; a disconnect marks the connection closed. */
static void
h_cm_drain(struct hconn *h)
{
	struct rdma_cm_event *e;

	while (rdma_get_cm_event(h->ec, &e) == 0) {
		debug("CM event %s", rdma_event_str(e->event));
		if (e->event == RDMA_CM_EVENT_DISCONNECTED ||
		    e->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    e->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
			h_mark_closed(h, rdma_event_str(e->event));
		rdma_ack_cm_event(e);
	}
}

/* Wait until deadline for the next received message or the end of the
 * connection.  Send completions are reaped on the way.  Messages that
 * arrived before the close are returned first. */
enum ev_kind
h_wait(struct hconn *h, uint64_t deadline, struct hev *ev)
{
	struct pollfd pfd[2];
	struct ibv_wc wc;
	uint64_t now;
	int n, armed = 0;

	for (;;) {
		while ((n = ibv_poll_cq(h->cq, 1, &wc)) == 1)
			if (h_handle_wc(h, &wc, ev))
				return ev->kind;
		if (n < 0) {
			ev->kind = EV_ERROR;
			return ev->kind;
		}
		if (h->closed) {
			ev->kind = EV_CLOSED;
			return ev->kind;
		}
		h_cm_drain(h);
		if (h->closed)
			continue;     /* drain what arrived before the close */
		/* Poll, re-arm, poll again before sleeping: nothing that
		 * completed before the re-arm is missed. */
		if (!armed) {
			if (ibv_req_notify_cq(h->cq, 0) != 0) {
				ev->kind = EV_ERROR;
				return ev->kind;
			}
			armed = 1;
			continue;
		}
		now = rb_now_ns();
		if (now >= deadline) {
			ev->kind = EV_TIMEOUT;
			return ev->kind;
		}
		pfd[0].fd = h->cc->fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = h->ec->fd;
		pfd[1].events = POLLIN;
		n = (int)((deadline - now) / 1000000 + 1);
		if (poll(pfd, 2, n > 100 ? 100 : n) < 0 && errno != EINTR) {
			ev->kind = EV_ERROR;
			return ev->kind;
		}
		if (pfd[0].revents & POLLIN) {
			struct ibv_cq *cq;
			void *ctx;

			if (ibv_get_cq_event(h->cc, &cq, &ctx) == 0) {
				ibv_ack_cq_events(cq, 1);
				armed = 0;
			}
		}
	}
}

/* Post one SEND of len bytes copied from msg.  Returns 0 or -1. */
int
h_send(struct hconn *h, const void *msg, size_t len)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	unsigned i, slot = h->nsend;
	int rc;

	if (len > H_SEND_SLOT)
		return -1;
	for (i = 0; i < h->nsend; i++) {
		unsigned s = (h->send_next + i) % h->nsend;

		if (!h->send_busy[s]) {
			slot = s;
			break;
		}
	}
	if (slot == h->nsend) {
		debug("every send slot is busy");
		return -1;
	}
	h->send_next = slot + 1;
	memcpy(h->send_mem + (size_t)slot * H_SEND_SLOT, msg, len);
	sge.addr = (uintptr_t)(h->send_mem + (size_t)slot * H_SEND_SLOT);
	sge.length = (uint32_t)len;
	sge.lkey = h->send_mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WRID(WR_KIND_SEND, slot);
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = len > 0 ? &sge : NULL;
	wr.num_sge = len > 0 ? 1 : 0;
	rc = ibv_post_send(h->qp, &wr, &bad);
	if (rc != 0) {
		debug("ibv_post_send: %s", strerror(rc));
		return -1;
	}
	h->send_busy[slot] = 1;
	return 0;
}

/* ---- message builders ---- */

size_t
hello_msg(void *buf, const char *name, uint16_t qd, uint32_t max_io)
{
	struct rb_hello_info hi;

	memset(&hi, 0, sizeof(hi));
	hi.queue_depth = qd;
	hi.max_io = max_io;
	memset(hi.nonce, 0xa5, sizeof(hi.nonce));
	snprintf(hi.export_name, sizeof(hi.export_name), "%s", name);
	return rb_hello_encode(buf, &hi);
}

size_t
req_msg(void *buf, uint8_t op, uint16_t flags, uint64_t tag, uint64_t off,
	uint32_t len, uint32_t rkey, uint64_t addr)
{
	struct rb_req_info r;

	memset(&r, 0, sizeof(r));
	r.opcode = op;
	r.flags = flags;
	r.tag = tag;
	r.offset = off;
	r.length = len;
	r.rkey = rkey;
	r.addr = addr;
	return rb_request_encode(buf, &r);
}

/* A READ or WRITE whose data lives at data + doff. */
size_t
data_req(struct hconn *h, void *buf, uint8_t op, uint64_t tag, uint64_t off,
	 uint32_t len, size_t doff)
{
	return req_msg(buf, op, 0, tag, off, len, h->data_mr->rkey,
		       (uintptr_t)(h->data + doff));
}
