/* rdmablk-hostile: a misbehaving initiator, for tests/test-hostile.sh and
 * tests/test-fault-initiator-kill.sh.
 *
 *   rdmablk-hostile -H HOST [-p PORT] -e EXPORT [-t TIMEOUT_S] [-S SEED] [-v]
 *                   SCENARIO... | all
 *   rdmablk-hostile -H HOST -e EXPORT [-q QD] flood OFF LEN SECONDS
 *   rdmablk-hostile -H HOST -e EXPORT [-q QD] starve SECONDS
 *   rdmablk-hostile -H HOST -e EXPORT [-q QD] [-t TIMEOUT_S] discard
 *   rdmablk-hostile -H HOST -e EXPORT [-t TIMEOUT_S] churn N
 *   rdmablk-hostile -H HOST [-B SRC] -e EXPORT [-t TIMEOUT_S] hold N SECONDS
 *   rdmablk-hostile list
 *
 * Written on librdmacm and libibverbs directly, not on the initiator
 * library, so that it can send what a correct initiator never would.  Each
 * scenario runs on its own connection(s) and checks that the target reacted
 * in one of the ways docs/protocol.md allows: an error reply with the right
 * code (and the connection still serving), a HELLO_REPLY refusal followed by
 * a disconnect, the connection being closed, or the connect being rejected
 * with the right reason.  Then it checks that the target still serves a
 * fresh, well-behaved connection.  It prints one line per scenario,
 * "ok: SCENARIO: what happened" or "FAIL: SCENARIO: why", and exits 0 when
 * every scenario passed, 1 otherwise, 2 on a usage error.
 *
 * flood is not a test: it keeps QD requests (64 KiB READs and WRITEs in
 * [OFF, OFF+LEN)) in flight for SECONDS, printing "flood: QD requests in
 * flight" once the first reply came back, so that a test can kill -9 it
 * while requests are certainly outstanding.
 *
 * starve is not a test either but the pool-starvation attack (issue 13):
 * it connects asking for infinite RNR retry (rnr_retry_count 7), posts one
 * receive (for HELLO_REPLY) and none after it, then sends QD READs of
 * max_io (at most 1 MiB), whose replies the target can never deliver.  It
 * waits until the target closes the connection, then does it again, for
 * SECONDS, and prints one line: "starve: N connections, the target closed
 * C of them, the longest held S s".
 *
 * discard checks the TRIM/WRITE_ZEROES cap (RB_DISCARD_MAX): one byte block
 * more gets EINVAL, and QD - 1 WRITE_ZEROES of the maximum at once plus a TRIM
 * of it all succeed; the export must be larger than RB_DISCARD_MAX.
 *
 * churn opens N short connections, 8 at a time, each ending badly (see
 * churn()), and prints "churn: N connections tried, E established, R
 * rejected, F failed": the 1,000-connection flood of make check-long.
 *
 * hold is the handshake flood (issue 13): it opens N connections, one
 * after the other, and leaves each un-authenticated for SECONDS: the even
 * ones send nothing after the connect (the target waits for HELLO), the odd
 * ones send HELLO and never answer the CHALLENGE (the export should have a
 * secret-file; without one the target completes the HELLO and that
 * connection is no handshake any more).  Each asks for queue depth 128 in
 * the connect, so that a target that pins its full receive ring before any
 * proof shows it.  Refused connects are closed at once; the rest stay open
 * until SECONDS have passed.  Prints "hold: N connections tried, E
 * established, R refused (busy B), F failed; the target closed C" once
 * every connect was tried ("hold: ... holding" first, then at the end the
 * same line with "done").  -B binds the connections to source address SRC.
 *
 * Every wait is bounded by -t (default 10 s): nothing here waits forever.
 * The export must be at least 16 MiB; scenarios write to its first 16 MiB.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "pattern.h"
#include "protocol.h"
#include "util.h"

#define H_NRECV       16            /* receives we keep posted */
#define H_NSEND       64            /* send slots */
#define H_SEND_SLOT   8192          /* > RB_RECV_BUF_SIZE: room for oversized messages */
#define H_DATA_SIZE   (2u << 20)    /* registered for remote read and write */
#define H_MAX_IO      (1u << 20)    /* what HELLO asks for */
#define H_CM_QD       8             /* queue depth asked for in the CM connect */
#define H_FLOOD_IO    (64u * 1024)
#define H_RESOLVE_MS  5000

#define H_STARVE_IO   (1u << 20)
#define H_HOLD_CM_QD  128
#define H_LEAN_DATA   4096          /* hold: a data buffer nothing uses */
#define H_LEAN_RECV   2             /* hold: CHALLENGE, and one spare */
#define H_LEAN_SEND   1             /* hold: the HELLO */

#define WR_KIND_RECV  1u
#define WR_KIND_SEND  2u
#define WRID(kind, i) (((uint64_t)(kind) << 32) | (uint32_t)(i))

/* ---- options and reporting ---- */

static struct {
	const char *host;
	uint16_t port;
	const char *export_name;
	const char *src;                /* -B: source address, or NULL */
	unsigned timeout_s;
	unsigned qd;
	uint64_t seed;
	int verbose;
} opt = { .port = RB_DEFAULT_PORT, .timeout_s = 10, .qd = 16, .seed = 1 };

static struct sockaddr_storage dst, src;
static const char *cur = "?";      /* the running scenario */
static int starving;               /* starve: no receive after HELLO_REPLY */
static int lean;                   /* hold: many connections, small buffers */
static unsigned nfailed;

static void __attribute__((format(printf, 1, 2)))
debug(const char *fmt, ...)
{
	va_list ap;

	if (!opt.verbose)
		return;
	fprintf(stderr, "rdmablk-hostile: %s: ", cur);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* One verdict line per scenario.  Returns 0 for ok, 1 for a failure. */
static int __attribute__((format(printf, 2, 3)))
verdict(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: %s: ", ok ? "ok" : "FAIL", cur);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		nfailed++;
	return ok ? 0 : 1;
}

static uint64_t
deadline_after_s(unsigned s)
{
	return rb_now_ns() + (uint64_t)s * 1000000000ull;
}

static uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- one connection ---- */

struct hconn {
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char *recv_mem, *send_mem, *data;
	struct ibv_mr *recv_mr, *send_mr, *data_mr;
	struct ibv_mr *extra_mr;       /* a scenario's oddly registered buffer */
	char *extra;
	uint8_t send_busy[H_NSEND];
	unsigned send_next;
	unsigned nsend, nrecv;         /* send slots and receive buffers allocated */
	int connected;                 /* ESTABLISHED seen */
	int closed;                    /* DISCONNECTED or a failed completion */
	char closed_why[160];
	uint16_t cm_qd;                /* granted in the accept */
	struct rb_export_info exp;     /* after a successful HELLO */
	uint64_t next_tag;
};

/* What the next wait saw. */
enum ev_kind { EV_MSG, EV_CLOSED, EV_TIMEOUT, EV_ERROR };

struct hev {
	enum ev_kind kind;
	uint32_t len;
	char buf[RB_RECV_BUF_SIZE];
};

static void
h_mark_closed(struct hconn *h, const char *why)
{
	if (h->closed)
		return;
	h->closed = 1;
	snprintf(h->closed_why, sizeof(h->closed_why), "%s", why);
}

static int
set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* Wait up to deadline for the next CM event; copies what is needed and
 * acks it.  Returns the event type, or -1 on timeout/error. */
static int
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

static void
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

static int
h_post_recv(struct hconn *h, unsigned i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(h->recv_mem + (size_t)i * RB_RECV_BUF_SIZE),
		.length = RB_RECV_BUF_SIZE,
		.lkey = h->recv_mr->lkey,
	};
	struct ibv_recv_wr wr, *bad = NULL;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WRID(WR_KIND_RECV, i);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	rc = ibv_post_recv(h->qp, &wr, &bad);
	if (rc != 0)
		debug("ibv_post_recv: %s", strerror(rc));
	return rc == 0 ? 0 : -1;
}

/* Resolve the target and set up PD, CQ, QP and buffers, with receives
 * posted: everything up to rdma_connect.  Returns 0 or -1 (reported). */
static int
h_open(struct hconn *h)
{
	uint64_t deadline = rb_now_ns() + H_RESOLVE_MS * 1000000ull;
	struct ibv_qp_init_attr qa;
	int type, status = 0;
	size_t data_size;
	unsigned i;

	memset(h, 0, sizeof(*h));
	h->next_tag = 1;
	h->ec = rdma_create_event_channel();
	if (h->ec == NULL || set_nonblock(h->ec->fd) < 0) {
		verdict(0, "rdma_create_event_channel: %s", strerror(errno));
		goto out_close;
	}
	if (rdma_create_id(h->ec, &h->id, h, RDMA_PS_TCP) != 0) {
		verdict(0, "rdma_create_id: %s", strerror(errno));
		goto out_close;
	}
	if (rdma_resolve_addr(h->id, opt.src != NULL ? (struct sockaddr *)&src : NULL,
			      (struct sockaddr *)&dst, H_RESOLVE_MS) != 0) {
		verdict(0, "rdma_resolve_addr: %s", strerror(errno));
		goto out_close;
	}
	type = h_cm_event(h, deadline, &status, NULL, NULL);
	if (type != RDMA_CM_EVENT_ADDR_RESOLVED) {
		verdict(0, "address resolution failed (event %d, status %d)", type, status);
		goto out_close;
	}
	if (rdma_resolve_route(h->id, H_RESOLVE_MS) != 0) {
		verdict(0, "rdma_resolve_route: %s", strerror(errno));
		goto out_close;
	}
	type = h_cm_event(h, deadline, &status, NULL, NULL);
	if (type != RDMA_CM_EVENT_ROUTE_RESOLVED) {
		verdict(0, "route resolution failed (event %d, status %d)", type, status);
		goto out_close;
	}
	h->pd = ibv_alloc_pd(h->id->verbs);
	h->cc = h->pd != NULL ? ibv_create_comp_channel(h->id->verbs) : NULL;
	if (h->cc == NULL || set_nonblock(h->cc->fd) < 0) {
		verdict(0, "ibv_alloc_pd/ibv_create_comp_channel: %s", strerror(errno));
		goto out_close;
	}
	h->cq = ibv_create_cq(h->id->verbs, H_NRECV + H_NSEND, NULL, h->cc, 0);
	if (h->cq == NULL || ibv_req_notify_cq(h->cq, 0) != 0) {
		verdict(0, "ibv_create_cq: %s", strerror(errno));
		goto out_close;
	}
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = h->cq;
	qa.recv_cq = h->cq;
	qa.cap.max_send_wr = H_NSEND;
	qa.cap.max_recv_wr = H_NRECV;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(h->id, h->pd, &qa) != 0) {
		verdict(0, "rdma_create_qp: %s", strerror(errno));
		goto out_close;
	}
	h->qp = h->id->qp;
	h->nrecv = lean ? H_LEAN_RECV : H_NRECV;
	h->nsend = lean ? H_LEAN_SEND : H_NSEND;
	data_size = lean ? H_LEAN_DATA : H_DATA_SIZE;
	h->recv_mem = calloc(h->nrecv, RB_RECV_BUF_SIZE);
	h->send_mem = calloc(h->nsend, H_SEND_SLOT);
	h->data = calloc(1, data_size);
	if (h->recv_mem == NULL || h->send_mem == NULL || h->data == NULL) {
		verdict(0, "out of memory");
		goto out_close;
	}
	h->recv_mr = ibv_reg_mr(h->pd, h->recv_mem, (size_t)h->nrecv * RB_RECV_BUF_SIZE,
				IBV_ACCESS_LOCAL_WRITE);
	h->send_mr = ibv_reg_mr(h->pd, h->send_mem, (size_t)h->nsend * H_SEND_SLOT, 0);
	h->data_mr = ibv_reg_mr(h->pd, h->data, data_size, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	if (h->recv_mr == NULL || h->send_mr == NULL || h->data_mr == NULL) {
		verdict(0, "ibv_reg_mr: %s", strerror(errno));
		goto out_close;
	}
	for (i = 0; i < (starving ? 1u : h->nrecv); i++)
		if (h_post_recv(h, i) < 0) {
			verdict(0, "cannot post receives");
			goto out_close;
		}
	return 0;

out_close:
	h_close(h);
	return -1;
}

enum conn_result { CONN_OK, CONN_REJECTED, CONN_FAILED };

/* rdma_connect with the given private data (NULL: none) and wait for the
 * outcome.  On CONN_REJECTED, *why says what the reject carried. */
static enum conn_result
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
	type = h_cm_event(h, deadline_after_s(opt.timeout_s), &status, rpriv, &rlen);
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
		snprintf(why, wsize, "no CM event within %u s", opt.timeout_s);
		return CONN_FAILED;
	default:
		snprintf(why, wsize, "%s (status %d)",
			 rdma_event_str((enum rdma_cm_event_type)type), status);
		return CONN_FAILED;
	}
}

/* A well-formed connect.  Returns 0 or -1 (reported as a failure). */
static int
h_connect(struct hconn *h)
{
	uint8_t priv[sizeof(struct rb_conn_priv)];
	char why[128];

	if (h_open(h) < 0)
		return -1;
	rb_conn_priv_encode(priv, RB_OK, (uint16_t)(opt.qd > H_CM_QD ? opt.qd : H_CM_QD));
	if (h_connect_raw(h, priv, sizeof(priv), why, sizeof(why)) != CONN_OK) {
		verdict(0, "connect failed: %s", why);
		h_close(h);
		return -1;
	}
	return 0;
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
	ev->len = wc->byte_len <= RB_RECV_BUF_SIZE ? wc->byte_len : RB_RECV_BUF_SIZE;
	memcpy(ev->buf, h->recv_mem + (size_t)idx * RB_RECV_BUF_SIZE, ev->len);
	if (!h->closed && !starving)
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
static enum ev_kind
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
static int
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

static size_t
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

static size_t
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
static size_t
data_req(struct hconn *h, void *buf, uint8_t op, uint64_t tag, uint64_t off,
	 uint32_t len, size_t doff)
{
	return req_msg(buf, op, 0, tag, off, len, h->data_mr->rkey,
		       (uintptr_t)(h->data + doff));
}

/* ---- what the target did ---- */

enum out_kind { OUT_REPLY, OUT_HELLO_REPLY, OUT_MSG, OUT_CLOSED, OUT_TIMEOUT, OUT_ERROR };

struct outcome {
	enum out_kind kind;
	uint16_t error;       /* REPLY error or HELLO_REPLY status */
	uint8_t flags;
	uint64_t tag;
	char what[256];       /* for the verdict line */
};

static void
h_outcome(struct hconn *h, uint64_t deadline, struct outcome *o)
{
	static struct hev ev;
	struct rb_rep_info rep;
	struct rb_export_info ei;
	const char *why = "?";
	uint8_t type;

	memset(o, 0, sizeof(*o));
	switch (h_wait(h, deadline, &ev)) {
	case EV_CLOSED:
		o->kind = OUT_CLOSED;
		snprintf(o->what, sizeof(o->what), "connection closed (%s)", h->closed_why);
		return;
	case EV_TIMEOUT:
		o->kind = OUT_TIMEOUT;
		snprintf(o->what, sizeof(o->what), "no reaction within %u s", opt.timeout_s);
		return;
	case EV_ERROR:
		o->kind = OUT_ERROR;
		snprintf(o->what, sizeof(o->what), "polling failed");
		return;
	case EV_MSG:
		break;
	}
	o->kind = OUT_MSG;
	if (rb_msg_peek(ev.buf, ev.len, &type, &why) < 0) {
		snprintf(o->what, sizeof(o->what), "a malformed message from the target (%s)", why);
		return;
	}
	if (type == RB_MSG_REPLY) {
		if (rb_reply_decode(ev.buf, ev.len, &rep, &why) < 0) {
			snprintf(o->what, sizeof(o->what), "a malformed REPLY (%s)", why);
			return;
		}
		o->kind = OUT_REPLY;
		o->error = rep.error;
		o->flags = rep.flags;
		o->tag = rep.tag;
		snprintf(o->what, sizeof(o->what), "REPLY %s to tag %" PRIu64,
			 rb_error_name(rep.error), rep.tag);
		return;
	}
	if (type == RB_MSG_HELLO_REPLY) {
		if (rb_hello_reply_decode(ev.buf, ev.len, &ei, &why) < 0) {
			snprintf(o->what, sizeof(o->what), "a malformed HELLO_REPLY (%s)", why);
			return;
		}
		o->kind = OUT_HELLO_REPLY;
		o->error = ei.status;
		if (ei.status == RB_OK)
			h->exp = ei;
		snprintf(o->what, sizeof(o->what), "HELLO_REPLY %s", rb_error_name(ei.status));
		return;
	}
	snprintf(o->what, sizeof(o->what), "an unexpected message of type %u", type);
}

static uint64_t
wait_deadline(void)
{
	return deadline_after_s(opt.timeout_s);
}

/* HELLO with the given depth; 0 on HELLO_REPLY OK (h->exp filled), else -1
 * with the outcome in *o. */
static int
h_hello_qd(struct hconn *h, uint16_t qd, struct outcome *o)
{
	char msg[sizeof(struct rb_hello)];
	size_t len = hello_msg(msg, opt.export_name, qd, H_MAX_IO);

	if (h_send(h, msg, len) < 0) {
		snprintf(o->what, sizeof(o->what), "cannot post HELLO");
		o->kind = OUT_ERROR;
		return -1;
	}
	h_outcome(h, wait_deadline(), o);
	if (o->kind == OUT_HELLO_REPLY && o->error == RB_OK)
		return 0;
	return -1;
}

/* Connect and HELLO; reports a failure and returns -1 when that fails. */
static int
h_session(struct hconn *h, uint16_t qd)
{
	struct outcome o;

	if (h_connect(h) < 0)
		return -1;
	if (h_hello_qd(h, qd, &o) < 0) {
		verdict(0, "HELLO to export '%s' failed: %s", opt.export_name, o.what);
		h_close(h);
		return -1;
	}
	if (h->exp.size < (16u << 20) || h->exp.max_io < 8192) {
		verdict(0, "export '%s' too small for these tests (size %" PRIu64 ", max_io %u)",
			opt.export_name, h->exp.size, h->exp.max_io);
		h_close(h);
		return -1;
	}
	return 0;
}

/* Send one request message and wait for its reply.  Returns the outcome. */
static void
h_roundtrip(struct hconn *h, const void *msg, size_t len, struct outcome *o)
{
	if (h_send(h, msg, len) < 0) {
		memset(o, 0, sizeof(*o));
		o->kind = h->closed ? OUT_CLOSED : OUT_ERROR;
		snprintf(o->what, sizeof(o->what), "cannot post the message%s",
			 h->closed ? " (connection closed)" : "");
		return;
	}
	h_outcome(h, wait_deadline(), o);
}

/* A NOP must come back OK: the connection still serves. */
static int
h_nop_ok(struct hconn *h, char *why, size_t wsize)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	uint64_t tag = h->next_tag++;

	h_roundtrip(h, msg, req_msg(msg, RB_OP_NOP, 0, tag, 0, 0, 0, 0), &o);
	if (o.kind == OUT_REPLY && o.error == RB_OK && o.tag == tag)
		return 0;
	snprintf(why, wsize, "NOP afterwards got %.200s", o.what);
	return -1;
}

/* ---- verdict helpers ---- */

/* The target must close the connection (and send nothing but, optionally,
 * a HELLO_REPLY refusal first). */
static int
expect_closed(struct hconn *h, const char *did)
{
	struct outcome o;
	int rc;

	h_outcome(h, wait_deadline(), &o);
	if (o.kind == OUT_HELLO_REPLY && o.error != RB_OK) {
		char first[256];

		snprintf(first, sizeof(first), "%s", o.what);
		h_outcome(h, wait_deadline(), &o);
		rc = verdict(o.kind == OUT_CLOSED, "%s: %s, then %s", did, first, o.what);
	} else if (o.kind == OUT_CLOSED) {
		rc = verdict(1, "%s: %s", did, o.what);
	} else {
		rc = verdict(0, "%s: expected the connection to be closed, got %s", did, o.what);
	}
	h_close(h);
	return rc;
}

/* The target must answer with a HELLO_REPLY carrying `status`, or one of
 * `alt` (0: none), then disconnect; closing without the reply is accepted
 * when lenient. */
static int
expect_hello_refused(struct hconn *h, const char *did, uint16_t status, uint16_t alt,
		     int lenient)
{
	struct outcome o;
	char first[256];
	int rc;

	h_outcome(h, wait_deadline(), &o);
	if (o.kind == OUT_CLOSED && lenient) {
		rc = verdict(1, "%s: %s", did, o.what);
	} else if (o.kind == OUT_HELLO_REPLY && (o.error == status || (alt && o.error == alt))) {
		snprintf(first, sizeof(first), "%s", o.what);
		h_outcome(h, wait_deadline(), &o);
		rc = verdict(o.kind == OUT_CLOSED, "%s: %s, then %s", did, first, o.what);
	} else {
		rc = verdict(0, "%s: expected HELLO_REPLY %s%s, got %s", did,
			     rb_error_name(status), lenient ? " or a close" : "", o.what);
	}
	h_close(h);
	return rc;
}

/* The target must reply `err` to `tag` and keep serving the connection, or
 * (when lenient) close it. */
static int
expect_error(struct hconn *h, const char *did, uint64_t tag, uint16_t err, int lenient)
{
	struct outcome o;
	char why[256];
	int rc;

	h_outcome(h, wait_deadline(), &o);
	if (o.kind == OUT_REPLY && o.tag == tag && o.error == err) {
		if (h_nop_ok(h, why, sizeof(why)) == 0)
			rc = verdict(1, "%s: %s; the connection still serves", did, o.what);
		else
			rc = verdict(0, "%s: %s, but then %s", did, o.what, why);
	} else if (o.kind == OUT_CLOSED && lenient) {
		rc = verdict(1, "%s: %s", did, o.what);
	} else {
		rc = verdict(0, "%s: expected REPLY %s to tag %" PRIu64 "%s, got %s", did,
			     rb_error_name(err), tag, lenient ? " or a close" : "", o.what);
	}
	h_close(h);
	return rc;
}

/* Send a request message on a fresh session and expect err (see expect_error). */
static int
request_expect_error(const char *did, const void *msg, size_t len, uint64_t tag,
		     uint16_t err, int lenient)
{
	struct hconn h;

	if (h_session(&h, 4) < 0)
		return 1;
	if (h_send(&h, msg, len) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the request");
	}
	return expect_error(&h, did, tag, err, lenient);
}

/* Send a message on a fresh session (after HELLO when hello is set) and
 * expect the connection closed. */
static int
message_expect_closed(const char *did, const void *msg, size_t len, int hello)
{
	struct hconn h;

	if (hello ? h_session(&h, 4) < 0 : h_connect(&h) < 0)
		return 1;
	if (h_send(&h, msg, len) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the message");
	}
	return expect_closed(&h, did);
}

/* ---- the target still serves: a fresh, well-behaved session ---- */

static int
health_check(void)
{
	char msg[sizeof(struct rb_request)], why[256];
	struct outcome o;
	struct hconn h;
	const char *saved = cur;
	int rc = 0;

	cur = "health";
	if (h_session(&h, 4) < 0) {
		cur = saved;
		return verdict(0, "the target no longer accepts a well-behaved session");
	}
	if (h_nop_ok(&h, why, sizeof(why)) < 0) {
		rc = verdict(0, "after %s: %s", saved, why);
	} else {
		h_roundtrip(&h, msg, data_req(&h, msg, RB_OP_READ, 99, 0, 4096, 0), &o);
		if (o.kind != OUT_REPLY || o.error != RB_OK || o.tag != 99)
			rc = verdict(0, "after %s: READ got %s", saved, o.what);
	}
	h_close(&h);
	debug("still serves");
	cur = saved;
	return rc;
}

/* ---- scenarios ---- */

/* Positive control: a well-behaved session through this tool works, so the
 * closes seen elsewhere are the target's doing, not the tool's. */
static int
sc_good(void)
{
	char msg[sizeof(struct rb_request)], why[256];
	struct outcome o;
	struct hconn h;
	const uint64_t off = 4u << 20;
	const uint32_t len = 64 * 1024;

	if (h_session(&h, 4) < 0)
		return 1;
	pattern_fill(h.data, off, len, opt.seed);
	h_roundtrip(&h, msg, data_req(&h, msg, RB_OP_WRITE, 1, off, len, 0), &o);
	if (o.kind != OUT_REPLY || o.error != RB_OK) {
		h_close(&h);
		return verdict(0, "WRITE got %s", o.what);
	}
	memset(h.data + len, 0, len);
	h_roundtrip(&h, msg, data_req(&h, msg, RB_OP_READ, 2, off, len, len), &o);
	if (o.kind != OUT_REPLY || o.error != RB_OK) {
		h_close(&h);
		return verdict(0, "READ got %s", o.what);
	}
	if (memcmp(h.data, h.data + len, len) != 0) {
		h_close(&h);
		return verdict(0, "READ returned other data than was written");
	}
	h_roundtrip(&h, msg, req_msg(msg, RB_OP_FLUSH, 0, 3, 0, 0, 0, 0), &o);
	if (o.kind != OUT_REPLY || o.error != RB_OK || !(o.flags & RB_REP_DURABLE)) {
		h_close(&h);
		return verdict(0, "FLUSH got %s (flags 0x%x)", o.what, o.flags);
	}
	if (h_nop_ok(&h, why, sizeof(why)) < 0) {
		h_close(&h);
		return verdict(0, "%s", why);
	}
	h_close(&h);
	return verdict(1, "WRITE, READ (data verified), FLUSH (durable) and NOP all OK");
}

/* Exactly the granted depth in flight at once: all must succeed. */
static int
sc_credits_full(void)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	unsigned i, qd, nok = 0;

	if (h_session(&h, 8) < 0)
		return 1;
	qd = h.exp.queue_depth;
	for (i = 0; i < qd; i++)
		if (h_send(&h, msg, data_req(&h, msg, RB_OP_READ, 100 + i, (uint64_t)i * 8192,
					     8192, (size_t)i * 8192)) < 0) {
			h_close(&h);
			return verdict(0, "cannot post request %u", i);
		}
	for (i = 0; i < qd; i++) {
		h_outcome(&h, wait_deadline(), &o);
		if (o.kind != OUT_REPLY || o.error != RB_OK)
			break;
		nok++;
	}
	h_close(&h);
	if (nok != qd)
		return verdict(0, "%u of %u requests in flight at once succeeded; then %s",
			       nok, qd, o.what);
	return verdict(1, "all %u requests in flight at once (the granted depth) succeeded", qd);
}

/* More requests in flight than granted: HELLO asks for depth 1, then 8
 * READs of max-io go out at once. */
static int
sc_too_many_requests(void)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	unsigned i, nreplies = 0, n = 8;
	uint32_t len;

	if (h_session(&h, 1) < 0)
		return 1;
	if (h.exp.queue_depth != 1) {
		h_close(&h);
		return verdict(0, "asked for depth 1, granted %u", h.exp.queue_depth);
	}
	len = h.exp.max_io < H_DATA_SIZE / n ? h.exp.max_io : H_DATA_SIZE / n;
	for (i = 0; i < n; i++)
		if (h_send(&h, msg, data_req(&h, msg, RB_OP_READ, 200 + i, (uint64_t)i * len,
					     len, (size_t)i * len)) < 0)
			break;
	for (;;) {
		h_outcome(&h, wait_deadline(), &o);
		if (o.kind != OUT_REPLY)
			break;
		nreplies++;
	}
	h_close(&h);
	if (o.kind == OUT_CLOSED)
		return verdict(1, "%u requests on 1 credit: %u replies, then %s", n, nreplies,
			       o.what);
	if (nreplies == n)
		return verdict(0, "%u requests on 1 credit all served: the credit limit is "
			       "not enforced", n);
	return verdict(0, "%u requests on 1 credit: %u replies, then %s", n, nreplies, o.what);
}

/* ---- handshake: private data ---- */

static int
connect_expect_rejected(const char *did, const void *priv, uint8_t len)
{
	struct hconn h;
	char why[128];
	enum conn_result r;

	if (h_open(&h) < 0)
		return 1;
	r = h_connect_raw(&h, priv, len, why, sizeof(why));
	h_close(&h);
	if (r == CONN_REJECTED && strcmp(why, rb_error_name(RB_EPROTO)) == 0)
		return verdict(1, "%s: rejected with %s", did, why);
	return verdict(0, "%s: expected a reject with EPROTO, got %s%s", did,
		       r == CONN_OK ? "accepted: " : r == CONN_REJECTED ? "a reject: " : "",
		       why);
}

static int
sc_bad_magic(void)
{
	struct rb_conn_priv p;

	rb_conn_priv_encode(&p, RB_OK, H_CM_QD);
	p.magic ^= 0x01010101u;
	return connect_expect_rejected("private data with a bad magic", &p, sizeof(p));
}

static int
sc_bad_version(void)
{
	struct rb_conn_priv p;

	rb_conn_priv_encode(&p, RB_OK, H_CM_QD);
	p.version = htole16(RB_PROTO_VERSION + 1);
	return connect_expect_rejected("private data with version 2", &p, sizeof(p));
}

static int
sc_no_private_data(void)
{
	return connect_expect_rejected("connect without private data", NULL, 0);
}

static int
sc_short_private_data(void)
{
	struct rb_conn_priv p;

	/* The CM pads to 56 bytes with zeros: the target sees a magic and
	 * then a version of 0. */
	rb_conn_priv_encode(&p, RB_OK, H_CM_QD);
	return connect_expect_rejected("4 bytes of private data", &p, 4);
}

static int
sc_priv_status(void)
{
	struct rb_conn_priv p;

	rb_conn_priv_encode(&p, RB_EACCES, H_CM_QD);
	return connect_expect_rejected("connect private data with a status", &p, sizeof(p));
}

static int
sc_priv_reserved(void)
{
	struct rb_conn_priv p;

	rb_conn_priv_encode(&p, RB_OK, H_CM_QD);
	p.reserved1 = htole32(1);
	return connect_expect_rejected("connect private data with a reserved field set", &p,
				       sizeof(p));
}

static int
sc_zero_queue_depth(void)
{
	struct rb_conn_priv p;

	rb_conn_priv_encode(&p, RB_OK, 0);
	return connect_expect_rejected("private data asking for depth 0", &p, sizeof(p));
}

/* ---- disconnects mid-handshake: the target must clean up and serve on ---- */

/* rdma_connect with good private data, without waiting for the outcome. */
static int
h_connect_nowait(struct hconn *h)
{
	uint8_t priv[sizeof(struct rb_conn_priv)];
	struct rdma_conn_param param;

	rb_conn_priv_encode(priv, RB_OK, H_CM_QD);
	memset(&param, 0, sizeof(param));
	param.private_data = priv;
	param.private_data_len = sizeof(priv);
	param.responder_resources = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	return rdma_connect(h->id, &param);
}

static int
sc_connect_destroy(void)
{
	struct hconn h;

	if (h_open(&h) < 0)
		return 1;
	if (h_connect_nowait(&h) != 0) {
		h_close(&h);
		return verdict(0, "rdma_connect: %s", strerror(errno));
	}
	h_close(&h);     /* at once, without waiting for the accept */
	return verdict(1, "connected and destroyed the id at once");
}

static int
sc_established_disconnect(void)
{
	struct hconn h;

	if (h_connect(&h) < 0)
		return 1;
	h_close(&h);
	return verdict(1, "established, then disconnected without a HELLO");
}

/* Connected, then nothing: the target must give up on the handshake
 * (handshake-timeout) and close the connection. */
static int
sc_silent(void)
{
	struct hconn h;

	if (h_connect(&h) < 0)
		return 1;
	return expect_closed(&h, "connected and sent nothing");
}

static int
sc_half_hello(void)
{
	char msg[sizeof(struct rb_hello)];
	struct hconn h;

	if (h_connect(&h) < 0)
		return 1;
	hello_msg(msg, opt.export_name, 4, H_MAX_IO);
	if (h_send(&h, msg, sizeof(msg) / 2) < 0) {
		h_close(&h);
		return verdict(0, "cannot post half a HELLO");
	}
	h_close(&h);     /* without waiting for the target's reaction */
	return verdict(1, "sent half a HELLO and disconnected at once");
}

/* ---- garbage handshakes ---- */

static int
hello_variant_refused(const char *did, void *msg, size_t len, uint16_t status,
		      uint16_t alt)
{
	struct hconn h;

	if (h_connect(&h) < 0)
		return 1;
	if (h_send(&h, msg, len) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the HELLO");
	}
	return expect_hello_refused(&h, did, status, alt, 1);
}

static int
sc_garbage_hello(void)
{
	char msg[sizeof(struct rb_hello)];
	struct rb_hello *m = (struct rb_hello *)msg;
	uint64_t s = opt.seed | 1;
	size_t i;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (char)xorshift(&s);
	m->hdr.type = RB_MSG_HELLO;
	m->hdr.reserved = 0;
	m->hdr.length = htole16(sizeof(msg));
	return hello_variant_refused("a HELLO of random bytes", msg, sizeof(msg), RB_EPROTO,
				     RB_EINVAL);
}

static int
sc_truncated_hello(void)
{
	char msg[sizeof(struct rb_hello)];
	struct rb_hello *m = (struct rb_hello *)msg;

	hello_msg(msg, opt.export_name, 4, H_MAX_IO);
	m->hdr.length = htole16(sizeof(msg) / 2);
	return hello_variant_refused("a truncated HELLO", msg, sizeof(msg) / 2, RB_EPROTO, 0);
}

static int
sc_hello_bad_version(void)
{
	char msg[sizeof(struct rb_hello)];
	struct rb_hello *m = (struct rb_hello *)msg;

	hello_msg(msg, opt.export_name, 4, H_MAX_IO);
	m->version = htole16(RB_PROTO_VERSION + 1);
	return hello_variant_refused("a HELLO with version 2", msg, sizeof(msg), RB_EPROTO, 0);
}

static int
sc_hello_reserved(void)
{
	char msg[sizeof(struct rb_hello)];
	struct rb_hello *m = (struct rb_hello *)msg;

	hello_msg(msg, opt.export_name, 4, H_MAX_IO);
	m->reserved1 = htole32(1);
	return hello_variant_refused("a HELLO with a non-zero reserved field", msg, sizeof(msg),
				     RB_EPROTO, 0);
}

static int
sc_hello_bad_flags(void)
{
	char msg[sizeof(struct rb_hello)];
	struct rb_hello *m = (struct rb_hello *)msg;

	hello_msg(msg, opt.export_name, 4, H_MAX_IO);
	m->flags = htole16(0x8000);
	return hello_variant_refused("a HELLO with unknown flags", msg, sizeof(msg), RB_EPROTO,
				     RB_EINVAL);
}

static int
sc_hello_zero_depth(void)
{
	char msg[sizeof(struct rb_hello)];

	hello_msg(msg, opt.export_name, 0, H_MAX_IO);
	return hello_variant_refused("a HELLO asking for depth 0", msg, sizeof(msg), RB_EPROTO,
				     RB_EINVAL);
}

static int
sc_hello_unterminated(void)
{
	char msg[sizeof(struct rb_hello)];
	struct rb_hello *m = (struct rb_hello *)msg;

	hello_msg(msg, opt.export_name, 4, H_MAX_IO);
	memset(m->export_name, 'x', sizeof(m->export_name));
	return hello_variant_refused("a HELLO whose export name has no NUL", msg, sizeof(msg),
				     RB_EPROTO, RB_EINVAL);
}

static int
sc_hello_control_name(void)
{
	char msg[sizeof(struct rb_hello)];

	/* An escape sequence must never reach the target's log. */
	hello_msg(msg, "x\x1b[2J\ny", 4, H_MAX_IO);
	return hello_variant_refused("a HELLO whose export name has control characters", msg,
				     sizeof(msg), RB_EPROTO, RB_EINVAL);
}

static int
sc_hello_tiny_max_io(void)
{
	char msg[sizeof(struct rb_hello)];

	hello_msg(msg, opt.export_name, 4, 100);
	return hello_variant_refused("a HELLO with max_io 100", msg, sizeof(msg), RB_EPROTO,
				     RB_EINVAL);
}

static int
sc_hello_unknown_export(void)
{
	char msg[sizeof(struct rb_hello)];
	struct hconn h;

	if (h_connect(&h) < 0)
		return 1;
	hello_msg(msg, "no-such-export-here", 4, H_MAX_IO);
	if (h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the HELLO");
	}
	return expect_hello_refused(&h, "HELLO for an unknown export", RB_ENOENT, 0, 0);
}

/* A refused HELLO, with requests sent right behind it: they are dropped. */
static int
sc_requests_after_refusal(void)
{
	char msg[sizeof(struct rb_hello)], req[sizeof(struct rb_request)];
	struct hconn h;
	unsigned i;

	if (h_connect(&h) < 0)
		return 1;
	hello_msg(msg, "no-such-export-here", 4, H_MAX_IO);
	if (h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the HELLO");
	}
	for (i = 0; i < 4; i++)
		h_send(&h, req, data_req(&h, req, RB_OP_READ, 300 + i, 0, 4096, 0));
	return expect_hello_refused(&h, "HELLO for an unknown export, then 4 READs",
				    RB_ENOENT, 0, 0);
}

static int
sc_second_hello(void)
{
	char msg[sizeof(struct rb_hello)];
	struct hconn h;

	if (h_session(&h, 4) < 0)
		return 1;
	if (h_send(&h, msg, hello_msg(msg, opt.export_name, 4, H_MAX_IO)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the second HELLO");
	}
	return expect_closed(&h, "a second HELLO");
}

static int
sc_request_before_hello(void)
{
	char msg[sizeof(struct rb_request)];

	return message_expect_closed("a NOP before HELLO", msg,
				     req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0), 0);
}

static int
sc_list_after_hello(void)
{
	char msg[sizeof(struct rb_list)];

	return message_expect_closed("LIST after HELLO", msg, rb_list_encode(msg), 1);
}

static int
sc_list_reserved(void)
{
	char msg[sizeof(struct rb_list)];
	struct rb_list *m = (struct rb_list *)msg;

	rb_list_encode(msg);
	m->reserved = htole16(7);
	return message_expect_closed("LIST with a non-zero reserved field", msg, sizeof(msg), 0);
}

/* ---- malformed messages ---- */

static int
sc_empty_message(void)
{
	return message_expect_closed("an empty SEND", "", 0, 1);
}

static int
sc_short_header(void)
{
	const char msg[2] = { RB_MSG_REQUEST, 0 };

	return message_expect_closed("a 2-byte message", msg, sizeof(msg), 1);
}

static int
sc_length_mismatch(void)
{
	char msg[sizeof(struct rb_request) + 8];

	memset(msg, 0, sizeof(msg));
	req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0);   /* header says 40 */
	return message_expect_closed("a NOP whose header length disagrees with its size", msg,
				     sizeof(msg), 1);
}

static int
sc_trailing_bytes(void)
{
	char msg[sizeof(struct rb_request) + 8];
	struct rb_request *m = (struct rb_request *)msg;

	memset(msg, 0, sizeof(msg));
	req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0);
	m->hdr.length = htole16(sizeof(msg));
	return message_expect_closed("a NOP with 8 trailing bytes", msg, sizeof(msg), 1);
}

static int
sc_oversized_message(void)
{
	static char msg[H_SEND_SLOT];
	struct hconn h;

	memset(msg, 0, sizeof(msg));
	req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0);
	if (h_session(&h, 4) < 0)
		return 1;
	/* Larger than any receive buffer: the target's receive fails. */
	if (h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the message");
	}
	return expect_closed(&h, "an 8 KiB message (receive buffers are 4160 bytes)");
}

static int
sc_unknown_type(void)
{
	char msg[sizeof(struct rb_request)];
	struct rb_request *m = (struct rb_request *)msg;

	req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0);
	m->hdr.type = 99;
	return message_expect_closed("a message of type 99", msg, sizeof(msg), 1);
}

static int
sc_wrong_type(void)
{
	char msg[sizeof(struct rb_reply)];
	struct rb_rep_info r = { .flags = 0, .error = RB_OK, .tag = 1 };

	return message_expect_closed("a REPLY sent to the target", msg,
				     rb_reply_encode(msg, &r), 1);
}

static int
sc_reserved_header(void)
{
	char msg[sizeof(struct rb_request)];
	struct rb_request *m = (struct rb_request *)msg;

	req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0);
	m->hdr.reserved = 1;
	return message_expect_closed("a NOP with a non-zero header reserved byte", msg,
				     sizeof(msg), 1);
}

static int
sc_reserved_request(void)
{
	char msg[sizeof(struct rb_request)];
	struct rb_request *m = (struct rb_request *)msg;

	req_msg(msg, RB_OP_READ, 0, 1, 0, 4096, 0, 0);
	m->reserved0 = 0x80;
	return message_expect_closed("a READ with a non-zero reserved field", msg, sizeof(msg),
				     1);
}

static int
sc_truncated_request(void)
{
	char msg[sizeof(struct rb_request)];
	struct rb_request *m = (struct rb_request *)msg;

	req_msg(msg, RB_OP_READ, 0, 1, 0, 4096, 0, 0);
	m->hdr.length = htole16(24);
	return message_expect_closed("a 24-byte REQUEST", msg, 24, 1);
}

static int
sc_inline_mismatch(void)
{
	char msg[sizeof(struct rb_request) + 512];

	memset(msg, 0, sizeof(msg));
	req_msg(msg, RB_OP_WRITE, RB_REQ_INLINE, 1, 0, 1024, 0, 0);
	((struct rb_request *)msg)->hdr.length = htole16(sizeof(msg));
	return message_expect_closed("an inline WRITE of 1024 bytes carrying 512", msg,
				     sizeof(msg), 1);
}

/* ---- requests the target must refuse with an error code ---- */

static int
sc_unknown_opcode(void)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error("opcode 42", msg,
				    req_msg(msg, 42, 0, 7, 0, 4096, 0, 0), 7, RB_EINVAL, 1);
}

static int
sc_unknown_flag(void)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error("a WRITE with flag 0x100", msg,
				    req_msg(msg, RB_OP_WRITE, 0x100, 7, 0, 4096, 1, 4096),
				    7, RB_EINVAL, 1);
}

static int
sc_inline_not_write(void)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error("INLINE on a READ of 0 bytes", msg,
				    req_msg(msg, RB_OP_READ, RB_REQ_INLINE, 7, 0, 0, 0, 0),
				    7, RB_EINVAL, 1);
}

static int
sc_wrong_flags(void)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error("a READ with FUA", msg,
				    req_msg(msg, RB_OP_READ, RB_REQ_FUA, 7, 0, 4096, 1, 4096),
				    7, RB_EINVAL, 0);
}

static int
sc_write_no_hole(void)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error("a WRITE with NO_HOLE", msg,
				    req_msg(msg, RB_OP_WRITE, RB_REQ_NO_HOLE, 7, 0, 4096, 1, 4096),
				    7, RB_EINVAL, 0);
}

static int
sc_nop_with_offset(void)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error("a NOP with an offset", msg,
				    req_msg(msg, RB_OP_NOP, 0, 7, 4096, 0, 0, 0), 7, RB_EINVAL, 0);
}

static int
sc_flush_with_length(void)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error("a FLUSH with a length", msg,
				    req_msg(msg, RB_OP_FLUSH, 0, 7, 0, 4096, 0, 0), 7, RB_EINVAL, 0);
}

static int
sc_nop_with_rkey(void)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error("a NOP with an rkey", msg,
				    req_msg(msg, RB_OP_NOP, 0, 7, 0, 0, 0x1234, 0), 7, RB_EINVAL, 0);
}

static int
sc_flush_with_addr(void)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error("a FLUSH with an addr", msg,
				    req_msg(msg, RB_OP_FLUSH, 0, 7, 0, 0, 0, 4096), 7, RB_EINVAL, 0);
}

static int
sc_inline_with_rkey(void)
{
	char msg[sizeof(struct rb_request) + 512];

	memset(msg, 0, sizeof(msg));
	return request_expect_error("an inline WRITE with an rkey and addr", msg,
				    req_msg(msg, RB_OP_WRITE, RB_REQ_INLINE, 7, 0, 512, 0x1234,
					    4096), 7, RB_EINVAL, 0);
}

static int
sc_trim_no_hole(void)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error("a TRIM with NO_HOLE", msg,
				    req_msg(msg, RB_OP_TRIM, RB_REQ_NO_HOLE, 7, 0, 4096, 0, 0), 7,
				    RB_EINVAL, 0);
}

static int
sc_zero_length(void)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error("a READ of 0 bytes", msg,
				    req_msg(msg, RB_OP_READ, 0, 7, 0, 0, 1, 4096), 7, RB_EINVAL, 0);
}

/* Requests that need the granted limits: built on the session itself. */
static int
session_request_error(const char *did, uint8_t op, uint16_t flags, uint64_t off,
		      uint32_t len, uint16_t err)
{
	char msg[sizeof(struct rb_request)];
	struct hconn h;

	if (h_session(&h, 4) < 0)
		return 1;
	req_msg(msg, op, flags, 7, off, len, h.data_mr->rkey, (uintptr_t)h.data);
	if (h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the request");
	}
	return expect_error(&h, did, 7, err, 0);
}

/* Limits come from a HELLO_REPLY: ask once. */
static struct rb_export_info limits;

static int
get_limits(void)
{
	struct hconn h;
	const char *saved = cur;

	if (limits.size != 0)
		return 0;
	cur = "limits";
	if (h_session(&h, 4) < 0) {
		cur = saved;
		return -1;
	}
	limits = h.exp;
	h_close(&h);
	cur = saved;
	debug("export size %" PRIu64 ", max_io %u, inline_max %u", limits.size, limits.max_io,
	      limits.inline_max);
	return 0;
}

static int
sc_too_long(void)
{
	char did[80];

	if (get_limits() < 0)
		return 1;
	snprintf(did, sizeof(did), "a READ of max_io + 512 (%u bytes)", limits.max_io + 512);
	return session_request_error(did, RB_OP_READ, 0, 0, limits.max_io + 512, RB_EINVAL);
}

static int
sc_misaligned_offset(void)
{
	return session_request_error("a READ at offset 100", RB_OP_READ, 0, 100, 4096, RB_EINVAL);
}

static int
sc_misaligned_length(void)
{
	return session_request_error("a WRITE of 1000 bytes", RB_OP_WRITE, 0, 0, 1000, RB_EINVAL);
}

static int
sc_out_of_range(void)
{
	if (get_limits() < 0)
		return 1;
	return session_request_error("a READ at the export size", RB_OP_READ, 0, limits.size,
				     4096, RB_EOVERFLOW);
}

static int
sc_far_out_of_range(void)
{
	return session_request_error("a READ at offset 2^62", RB_OP_READ, 0, 1ull << 62, 4096,
				     RB_EOVERFLOW);
}

static int
sc_past_end(void)
{
	if (get_limits() < 0)
		return 1;
	return session_request_error("a WRITE of 1 KiB at size - 512", RB_OP_WRITE, 0,
				     limits.size - 512, 1024, RB_EOVERFLOW);
}

static int
sc_offset_overflow(void)
{
	return session_request_error("a READ of 1 KiB at 2^64 - 512", RB_OP_READ, 0,
				     UINT64_MAX - 511, 1024, RB_EOVERFLOW);
}

static int
sc_trim_overflow(void)
{
	return session_request_error("a TRIM of 4 GiB - 512 at 2^64 - 512", RB_OP_TRIM, 0,
				     UINT64_MAX - 511, UINT32_MAX - 511, RB_EOVERFLOW);
}

static int
sc_zeroes_past_end(void)
{
	if (get_limits() < 0)
		return 1;
	return session_request_error("a WRITE_ZEROES of 4 GiB - 512 at size - 512",
				     RB_OP_WRITE_ZEROES, 0, limits.size - 512, UINT32_MAX - 511,
				     RB_EOVERFLOW);
}

static int
sc_inline_too_long(void)
{
	static char msg[H_SEND_SLOT];
	uint32_t len;
	struct hconn h;

	if (get_limits() < 0)
		return 1;
	len = limits.inline_max + 512;
	memset(msg, 0, sizeof(msg));
	if (sizeof(struct rb_request) + len > RB_RECV_BUF_SIZE) {
		/* Cannot fit a receive buffer: the receive itself fails. */
		req_msg(msg, RB_OP_WRITE, RB_REQ_INLINE, 7, 0, len, 0, 0);
		if (h_session(&h, 4) < 0)
			return 1;
		h_send(&h, msg, sizeof(struct rb_request) + len);
		return expect_closed(&h, "an inline WRITE larger than a receive buffer");
	}
	return request_expect_error("an inline WRITE of inline_max + 512 bytes", msg,
				    req_msg(msg, RB_OP_WRITE, RB_REQ_INLINE, 7, 0, len, 0, 0), 7,
				    RB_EINVAL, 0);
}

/* ---- bogus keys and addresses ---- */

/* A READ whose data the target cannot place.  Its RDMA WRITE must fail
 * (remote access error) and the connection close; never a successful
 * reply. */
static int
read_bad_target(const char *did, int how)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	uint32_t rkey;
	uint64_t addr;
	int rc;

	if (h_session(&h, 4) < 0)
		return 1;
	rkey = h.data_mr->rkey;
	addr = (uintptr_t)h.data;
	switch (how) {
	case 0:      /* a key never registered */
		rkey ^= 0x5a5a5a00u;
		break;
	case 1:      /* a real key, an address past its region */
		addr += 64ull << 20;
		break;
	case 2:      /* a key of memory registered without REMOTE_WRITE */
		h.extra = calloc(1, 65536);
		h.extra_mr = h.extra != NULL ? ibv_reg_mr(h.pd, h.extra, 65536,
							  IBV_ACCESS_REMOTE_READ) : NULL;
		if (h.extra_mr == NULL) {
			h_close(&h);
			return verdict(0, "ibv_reg_mr (REMOTE_READ only): %s", strerror(errno));
		}
		rkey = h.extra_mr->rkey;
		addr = (uintptr_t)h.extra;
		break;
	}
	h_roundtrip(&h, msg, req_msg(msg, RB_OP_READ, 0, 7, 0, 4096, rkey, addr), &o);
	if (o.kind == OUT_CLOSED)
		rc = verdict(1, "%s: %s", did, o.what);
	else if (o.kind == OUT_REPLY && o.error == RB_EIO)
		rc = verdict(1, "%s: %s", did, o.what);
	else
		rc = verdict(0, "%s: expected the connection closed (or EIO), got %s", did, o.what);
	h_close(&h);
	return rc;
}

static int
sc_read_bad_rkey(void)
{
	return read_bad_target("a READ into an rkey never registered", 0);
}

static int
sc_read_bad_addr(void)
{
	return read_bad_target("a READ into an address 64 MiB past the region", 1);
}

static int
sc_read_no_remote_write(void)
{
	return read_bad_target("a READ into memory registered without REMOTE_WRITE", 2);
}

/* A WRITE whose data the target cannot fetch.  Its RDMA READ must fail:
 * an EIO reply or a close, and the export's data must be unchanged. */
static int
write_bad_source(const char *did, int how)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	const uint64_t off = 8u << 20;
	const uint32_t len = 16384;
	uint32_t rkey;
	uint64_t addr;
	int ok;

	/* Known content first. */
	if (h_session(&h, 4) < 0)
		return 1;
	pattern_fill(h.data, off, len, opt.seed + 1000);
	h_roundtrip(&h, msg, data_req(&h, msg, RB_OP_WRITE, 1, off, len, 0), &o);
	if (o.kind != OUT_REPLY || o.error != RB_OK) {
		h_close(&h);
		return verdict(0, "the preparing WRITE got %s", o.what);
	}
	/* Something else in our buffer: if the target wrote whatever it got,
	 * the check below would see it. */
	pattern_fill(h.data, off, len, opt.seed + 2000);
	rkey = h.data_mr->rkey;
	addr = (uintptr_t)h.data;
	switch (how) {
	case 0:
		rkey ^= 0x00a5a500u;
		break;
	case 1:
		addr = (uintptr_t)h.data + H_DATA_SIZE - 4096;   /* runs off the end */
		break;
	case 2:      /* registered without REMOTE_READ */
		h.extra = calloc(1, 65536);
		h.extra_mr = h.extra != NULL ? ibv_reg_mr(h.pd, h.extra, 65536,
							  IBV_ACCESS_LOCAL_WRITE |
							  IBV_ACCESS_REMOTE_WRITE) : NULL;
		if (h.extra_mr == NULL) {
			h_close(&h);
			return verdict(0, "ibv_reg_mr (REMOTE_WRITE only): %s", strerror(errno));
		}
		rkey = h.extra_mr->rkey;
		addr = (uintptr_t)h.extra;
		break;
	}
	h_roundtrip(&h, msg, req_msg(msg, RB_OP_WRITE, 0, 7, off, len, rkey, addr), &o);
	ok = o.kind == OUT_CLOSED || (o.kind == OUT_REPLY && o.error == RB_EIO);
	h_close(&h);
	if (!ok)
		return verdict(0, "%s: expected EIO or a close, got %s", did, o.what);

	/* The export still holds the known content. */
	char what[256];

	snprintf(what, sizeof(what), "%s", o.what);
	if (h_session(&h, 4) < 0)
		return 1;
	memset(h.data, 0, len);
	h_roundtrip(&h, msg, data_req(&h, msg, RB_OP_READ, 2, off, len, 0), &o);
	if (o.kind != OUT_REPLY || o.error != RB_OK) {
		h_close(&h);
		return verdict(0, "%s: %s, but reading back got %s", did, what, o.what);
	}
	long long bad = pattern_check(h.data, off, len, opt.seed + 1000);

	h_close(&h);
	if (bad >= 0)
		return verdict(0, "%s: %s, but the export changed at offset %" PRIu64, did, what,
			       off + (uint64_t)bad);
	return verdict(1, "%s: %s; the export's data is unchanged", did, what);
}

static int
sc_write_bad_rkey(void)
{
	return write_bad_source("a WRITE from an rkey never registered", 0);
}

static int
sc_write_bad_addr(void)
{
	return write_bad_source("a WRITE from a range running past the region", 1);
}

static int
sc_write_no_remote_read(void)
{
	return write_bad_source("a WRITE from memory registered without REMOTE_READ", 2);
}

/* ---- the table ---- */

struct scenario {
	const char *name;
	int (*fn)(void);
};

static const struct scenario scenarios[] = {
	{ "good", sc_good },
	{ "credits-full", sc_credits_full },
	/* handshake: private data */
	{ "bad-magic", sc_bad_magic },
	{ "bad-version", sc_bad_version },
	{ "no-private-data", sc_no_private_data },
	{ "short-private-data", sc_short_private_data },
	{ "zero-queue-depth", sc_zero_queue_depth },
	{ "priv-status", sc_priv_status },
	{ "priv-reserved", sc_priv_reserved },
	/* disconnects mid-handshake */
	{ "connect-destroy", sc_connect_destroy },
	{ "established-disconnect", sc_established_disconnect },
	{ "half-hello", sc_half_hello },
	{ "silent", sc_silent },
	/* garbage HELLOs */
	{ "garbage-hello", sc_garbage_hello },
	{ "truncated-hello", sc_truncated_hello },
	{ "hello-bad-version", sc_hello_bad_version },
	{ "hello-reserved", sc_hello_reserved },
	{ "hello-bad-flags", sc_hello_bad_flags },
	{ "hello-zero-depth", sc_hello_zero_depth },
	{ "hello-unterminated-name", sc_hello_unterminated },
	{ "hello-tiny-max-io", sc_hello_tiny_max_io },
	{ "hello-control-name", sc_hello_control_name },
	{ "hello-unknown-export", sc_hello_unknown_export },
	{ "requests-after-refusal", sc_requests_after_refusal },
	/* sequence violations */
	{ "second-hello", sc_second_hello },
	{ "request-before-hello", sc_request_before_hello },
	{ "list-after-hello", sc_list_after_hello },
	{ "list-reserved", sc_list_reserved },
	/* malformed messages */
	{ "empty-message", sc_empty_message },
	{ "short-header", sc_short_header },
	{ "length-mismatch", sc_length_mismatch },
	{ "trailing-bytes", sc_trailing_bytes },
	{ "oversized-message", sc_oversized_message },
	{ "unknown-type", sc_unknown_type },
	{ "wrong-type", sc_wrong_type },
	{ "reserved-header", sc_reserved_header },
	{ "reserved-request", sc_reserved_request },
	{ "truncated-request", sc_truncated_request },
	{ "inline-mismatch", sc_inline_mismatch },
	/* invalid requests: error replies */
	{ "unknown-opcode", sc_unknown_opcode },
	{ "unknown-flag", sc_unknown_flag },
	{ "inline-not-write", sc_inline_not_write },
	{ "wrong-flags", sc_wrong_flags },
	{ "write-no-hole", sc_write_no_hole },
	{ "nop-with-offset", sc_nop_with_offset },
	{ "flush-with-length", sc_flush_with_length },
	{ "zero-length", sc_zero_length },
	{ "nop-with-rkey", sc_nop_with_rkey },
	{ "flush-with-addr", sc_flush_with_addr },
	{ "inline-with-rkey", sc_inline_with_rkey },
	{ "trim-no-hole", sc_trim_no_hole },
	{ "too-long", sc_too_long },
	{ "misaligned-offset", sc_misaligned_offset },
	{ "misaligned-length", sc_misaligned_length },
	{ "inline-too-long", sc_inline_too_long },
	{ "out-of-range", sc_out_of_range },
	{ "far-out-of-range", sc_far_out_of_range },
	{ "past-end", sc_past_end },
	{ "offset-overflow", sc_offset_overflow },
	{ "trim-overflow", sc_trim_overflow },
	{ "zeroes-past-end", sc_zeroes_past_end },
	/* bogus keys and addresses */
	{ "read-bad-rkey", sc_read_bad_rkey },
	{ "read-bad-addr", sc_read_bad_addr },
	{ "read-no-remote-write", sc_read_no_remote_write },
	{ "write-bad-rkey", sc_write_bad_rkey },
	{ "write-bad-addr", sc_write_bad_addr },
	{ "write-no-remote-read", sc_write_no_remote_read },
	/* credits */
	{ "too-many-requests", sc_too_many_requests },
};

#define NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static int
run_scenario(const struct scenario *s)
{
	unsigned before = nfailed;

	cur = s->name;
	debug("start");
	if (s->fn() == 0 && nfailed == before)
		health_check();
	cur = "?";
	return nfailed == before ? 0 : 1;
}

/* ---- flood: keep the pipe full until killed ---- */

static int
flood(uint64_t off, uint64_t len, unsigned seconds)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	uint64_t end = deadline_after_s(seconds), rng = opt.seed | 1, ops = 0;
	uint32_t io;
	unsigned i, qd;
	int announced = 0;

	cur = "flood";
	if (h_session(&h, (uint16_t)opt.qd) < 0)
		return 1;
	io = h.exp.max_io < H_FLOOD_IO ? h.exp.max_io : H_FLOOD_IO;
	qd = h.exp.queue_depth;
	if (qd > H_DATA_SIZE / io)
		qd = H_DATA_SIZE / io;
	if (len < io || off % 512 != 0 || off + len > h.exp.size) {
		h_close(&h);
		return verdict(0, "range %" PRIu64 "+%" PRIu64 " does not fit the export", off, len);
	}
	/* Slot i uses tag i and data + i * io; a reply frees its slot. */
	for (i = 0; i < qd; i++) {
		uint64_t at = off + (xorshift(&rng) % ((len - io) / 512 + 1)) * 512;

		data_req(&h, msg, (i & 1) ? RB_OP_READ : RB_OP_WRITE, i, at, io, (size_t)i * io);
		if (h_send(&h, msg, sizeof(msg)) < 0) {
			h_close(&h);
			return verdict(0, "cannot post request %u", i);
		}
	}
	while (rb_now_ns() < end) {
		h_outcome(&h, wait_deadline(), &o);
		if (o.kind != OUT_REPLY || o.error != RB_OK || o.tag >= qd) {
			h_close(&h);
			return verdict(0, "after %" PRIu64 " replies: %s", ops, o.what);
		}
		ops++;
		if (!announced) {
			printf("flood: %u requests in flight\n", qd);
			fflush(stdout);
			announced = 1;
		}
		i = (unsigned)o.tag;
		uint64_t at = off + (xorshift(&rng) % ((len - io) / 512 + 1)) * 512;

		data_req(&h, msg, (ops & 1) ? RB_OP_READ : RB_OP_WRITE, i, at, io, (size_t)i * io);
		if (h_send(&h, msg, sizeof(msg)) < 0) {
			h_close(&h);
			return verdict(0, "cannot post a request after %" PRIu64 " replies", ops);
		}
	}
	h_close(&h);
	return verdict(1, "%" PRIu64 " requests served at depth %u", ops, qd);
}

/* ---- starve: hold pool buffers with replies that cannot be delivered ---- */

/* One attacking connection: returns 1 when the target closed it before
 * end, 0 when end came first, -1 when it could not be set up. */
static int
starve_once(uint64_t end, uint64_t *held_ns)
{
	char msg[sizeof(struct rb_request)];
	struct hev ev;
	struct hconn h;
	uint64_t start;
	uint32_t io;
	unsigned i, qd;
	int closed;

	if (h_session(&h, (uint16_t)opt.qd) < 0)
		return -1;
	io = h.exp.max_io < H_STARVE_IO ? h.exp.max_io : H_STARVE_IO;
	qd = h.exp.queue_depth;
	/* The HELLO_REPLY took the only receive: every reply is RNR-NAKed. */
	for (i = 0; i < qd; i++) {
		data_req(&h, msg, RB_OP_READ, i, (uint64_t)i * io % (h.exp.size - io), io, 0);
		if (h_send(&h, msg, sizeof(msg)) < 0)
			break;
	}
	debug("%u READs of %u bytes posted", i, io);
	start = rb_now_ns();
	while (!h.closed && rb_now_ns() < end)
		if (h_wait(&h, end, &ev) == EV_ERROR)
			break;
	closed = h.closed;
	*held_ns = rb_now_ns() - start;
	h_close(&h);
	return closed;
}

static int
starve(unsigned seconds)
{
	uint64_t end = deadline_after_s(seconds), held, longest = 0;
	unsigned n = 0, nclosed = 0;
	int r;

	cur = "starve";
	starving = 1;
	while (rb_now_ns() < end) {
		r = starve_once(end, &held);
		if (r < 0)
			return 1;
		n++;
		nclosed += (unsigned)r;
		if (held > longest)
			longest = held;
	}
	printf("starve: %u connections, the target closed %u of them, the longest held %.1f s\n",
	       n, nclosed, (double)longest / 1e9);
	return 0;
}

/* ---- churn: many short hostile connections ---- */

#define H_CHURN_BATCH 8

/* N connections, H_CHURN_BATCH open at a time, each ending one of four
 * ways: destroyed before the accept, disconnected without a HELLO, a
 * garbage HELLO, or a HELLO and a disconnect before its reply is read.
 * Refusals are fine (a target may limit connections); only a local
 * failure to set one up makes it exit 1. */
static int
churn(unsigned n)
{
	static struct hconn hs[H_CHURN_BATCH];
	uint8_t priv[sizeof(struct rb_conn_priv)];
	char msg[sizeof(struct rb_hello)], why[128];
	unsigned tried = 0, est = 0, rej = 0, failed = 0, i, k;
	enum conn_result cr;

	cur = "churn";
	rb_conn_priv_encode(priv, RB_OK, H_CM_QD);
	while (tried < n) {
		for (k = 0; k < H_CHURN_BATCH && tried < n; k++, tried++) {
			struct hconn *h = &hs[k];

			if (h_open(h) < 0)
				return 1;
			if (tried % 4 == 0) {
				if (h_connect_nowait(h) != 0)
					failed++;
				continue;   /* destroyed below, without waiting */
			}
			cr = h_connect_raw(h, priv, sizeof(priv), why, sizeof(why));
			if (cr == CONN_OK)
				est++;
			else if (cr == CONN_REJECTED)
				rej++;
			else
				failed++;
			if (cr != CONN_OK)
				continue;
			if (tried % 4 == 2) {
				memset(msg, 0x5a, sizeof(msg));
				h_send(h, msg, sizeof(msg));
			} else if (tried % 4 == 3) {
				h_send(h, msg, hello_msg(msg, opt.export_name, 8, H_MAX_IO));
			}
		}
		for (i = 0; i < k; i++)
			h_close(&hs[i]);
	}
	printf("churn: %u connections tried, %u established, %u rejected, %u failed\n",
	       tried, est, rej, failed);
	return 0;
}

/* ---- hold: connections held open before authentication ---- */

struct hold_counts {
	unsigned tried, est, rej, busy, failed, closed;
};

static void
hold_print(const struct hold_counts *n, const char *phase)
{
	printf("hold: %u connections tried, %u established, %u refused (busy %u), "
	       "%u failed; the target closed %u; %s\n", n->tried, n->est, n->rej, n->busy,
	       n->failed, n->closed, phase);
}

/* Poll every held connection once (no waiting): count the ones the target
 * closed, and close them here too. */
static void
hold_reap(struct hconn *hs, unsigned count, struct hold_counts *n)
{
	struct hev ev;
	unsigned i;

	for (i = 0; i < count; i++) {
		struct hconn *h = &hs[i];

		if (h->id == NULL)
			continue;
		while (h_wait(h, 0, &ev) == EV_MSG)
			;   /* a CHALLENGE: never answered */
		if (h->closed) {
			n->closed++;
			h_close(h);
		}
	}
}

/* A HELLO as a current initiator sends it to an export with a secret
 * (RB_HELLO_AUTH_BIND: the target then answers with CHALLENGE, not EPROTO). */
static size_t
hold_hello_msg(void *buf)
{
	struct rb_hello_info hi;

	memset(&hi, 0, sizeof(hi));
	hi.flags = RB_HELLO_AUTH_BIND;
	hi.queue_depth = 8;
	hi.max_io = H_MAX_IO;
	memset(hi.nonce, 0xa5, sizeof(hi.nonce));
	snprintf(hi.export_name, sizeof(hi.export_name), "%s", opt.export_name);
	return rb_hello_encode(buf, &hi);
}

static int
hold(unsigned count, unsigned seconds)
{
	uint8_t priv[sizeof(struct rb_conn_priv)];
	char msg[sizeof(struct rb_hello)], why[128];
	struct hold_counts n;
	struct hconn *hs;
	uint64_t end;
	unsigned i;
	int rc = 0;

	cur = "hold";
	lean = 1;
	memset(&n, 0, sizeof(n));
	hs = calloc(count, sizeof(*hs));
	if (hs == NULL)
		return verdict(0, "out of memory for %u connections", count);
	rb_conn_priv_encode(priv, RB_OK, H_HOLD_CM_QD);
	end = deadline_after_s(seconds);
	for (i = 0; i < count; i++) {
		struct hconn *h = &hs[i];
		enum conn_result cr;

		n.tried++;
		if (h_open(h) < 0) {
			rc = 1;
			break;
		}
		cr = h_connect_raw(h, priv, sizeof(priv), why, sizeof(why));
		if (cr == CONN_OK) {
			n.est++;
			if (i % 2 == 1 && h_send(h, msg, hold_hello_msg(msg)) < 0)
				debug("connection %u: cannot post the HELLO", i);
			continue;
		}
		if (cr == CONN_REJECTED) {
			n.rej++;
			n.busy += strcmp(why, rb_error_name(RB_EBUSY)) == 0;
		} else {
			n.failed++;
		}
		debug("connection %u: %s", i, why);
		h_close(h);
	}
	hold_reap(hs, count, &n);
	hold_print(&n, "holding");
	while (rb_now_ns() < end) {
		struct pollfd pfd = { .fd = -1 };

		hold_reap(hs, count, &n);
		poll(&pfd, 0, 100);
	}
	hold_reap(hs, count, &n);
	for (i = 0; i < count; i++)
		if (hs[i].id != NULL)
			h_close(&hs[i]);
	free(hs);
	hold_print(&n, "done");
	return rc;
}

/* ---- discard: the TRIM/WRITE_ZEROES cap and the per-connection slots ---- */

/* A TRIM one byte block past RB_DISCARD_MAX must get EINVAL; then QD - 1
 * WRITE_ZEROES of RB_DISCARD_MAX at once on one connection, and a TRIM of
 * RB_DISCARD_MAX, must all succeed (the target runs them in pieces, a few
 * at a time).  The export must hold RB_DISCARD_MAX + 512 bytes. */
static int
discard(void)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	unsigned i, qd, nok = 0;
	int rc;

	cur = "discard-too-long";
	if (h_session(&h, (uint16_t)opt.qd) < 0)
		return 1;
	if (h.exp.size < (uint64_t)RB_DISCARD_MAX + 512) {
		h_close(&h);
		return verdict(0, "the export holds %" PRIu64 " bytes, fewer than %u + 512",
			       h.exp.size, RB_DISCARD_MAX);
	}
	req_msg(msg, RB_OP_TRIM, 0, 1, 0, RB_DISCARD_MAX + 512, 0, 0);
	if (h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the TRIM");
	}
	h_outcome(&h, wait_deadline(), &o);
	rc = verdict(o.kind == OUT_REPLY && o.tag == 1 && o.error == RB_EINVAL,
		     "a TRIM of %u + 512 bytes: %s (want EINVAL)", RB_DISCARD_MAX, o.what);

	cur = "discard-max";
	/* Every credit: QD - 1 WRITE_ZEROES and a TRIM. */
	qd = h.exp.queue_depth;
	for (i = 0; i + 1 < qd; i++) {
		req_msg(msg, RB_OP_WRITE_ZEROES, 0, 100 + i, 0, RB_DISCARD_MAX, 0, 0);
		if (h_send(&h, msg, sizeof(msg)) < 0)
			break;
	}
	req_msg(msg, RB_OP_TRIM, 0, 99, 0, RB_DISCARD_MAX, 0, 0);
	if (i + 1 < qd || h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post %u WRITE_ZEROES and a TRIM", qd - 1);
	}
	for (i = 0; i < qd; i++) {
		h_outcome(&h, wait_deadline(), &o);
		if (o.kind != OUT_REPLY || o.error != RB_OK)
			break;
		nok++;
	}
	h_close(&h);
	rc |= verdict(nok == qd, "%u WRITE_ZEROES of %u bytes at once and a TRIM of as "
		      "many: %u replies OK%s%s", qd - 1, RB_DISCARD_MAX, nok,
		      nok == qd ? "" : ", then ", nok == qd ? "" : o.what);
	return rc;
}

/* ---- main ---- */

static void
usage(void)
{
	fprintf(stderr,
		"usage: rdmablk-hostile -H HOST [-p PORT] -e EXPORT [-t TIMEOUT_S] [-S SEED] [-v]\n"
		"                       SCENARIO... | all\n"
		"       rdmablk-hostile -H HOST -e EXPORT [-q QD] flood OFF LEN SECONDS\n"
		"       rdmablk-hostile -H HOST -e EXPORT [-q QD] starve SECONDS\n"
		"       rdmablk-hostile -H HOST -e EXPORT [-q QD] [-t TIMEOUT_S] discard\n"
		"       rdmablk-hostile -H HOST -e EXPORT [-t TIMEOUT_S] churn N\n"
		"       rdmablk-hostile -H HOST [-B SRC] -e EXPORT [-t TIMEOUT_S] hold N SECONDS\n"
		"       rdmablk-hostile list\n");
	exit(2);
}

static uint64_t
size_arg(const char *s)
{
	uint64_t v;

	if (rb_parse_size(s, &v) < 0) {
		fprintf(stderr, "rdmablk-hostile: '%s' is not a size\n", s);
		exit(2);
	}
	return v;
}

int
main(int argc, char **argv)
{
	socklen_t alen;
	uint64_t v;
	unsigned i, nrun = 0;
	int c, j;

	while ((c = getopt(argc, argv, "+H:B:p:e:t:q:S:vh")) != -1) {
		switch (c) {
		case 'H': opt.host = optarg; break;
		case 'B': opt.src = optarg; break;
		case 'e': opt.export_name = optarg; break;
		case 'p':
			if (rb_parse_uint(optarg, 1, 65535, &v) < 0)
				usage();
			opt.port = (uint16_t)v;
			break;
		case 't':
			if (rb_parse_uint(optarg, 1, 3600, &v) < 0)
				usage();
			opt.timeout_s = (unsigned)v;
			break;
		case 'q':
			if (rb_parse_uint(optarg, 1, 64, &v) < 0)
				usage();
			opt.qd = (unsigned)v;
			break;
		case 'S':
			if (rb_parse_uint(optarg, 1, UINT64_MAX, &v) < 0)
				usage();
			opt.seed = v;
			break;
		case 'v': opt.verbose = 1; break;
		default: usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	if (strcmp(argv[0], "list") == 0) {
		for (i = 0; i < NSCENARIOS; i++)
			printf("%s\n", scenarios[i].name);
		return 0;
	}
	if (opt.host == NULL || opt.export_name == NULL)
		usage();
	if (rb_sockaddr_parse(opt.host, opt.port, &dst, &alen) < 0) {
		fprintf(stderr, "rdmablk-hostile: '%s' is not a numeric address\n", opt.host);
		return 2;
	}
	if (opt.src != NULL && rb_sockaddr_parse(opt.src, 0, &src, &alen) < 0) {
		fprintf(stderr, "rdmablk-hostile: -B '%s' is not a numeric address\n", opt.src);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(argv[0], "flood") == 0) {
		if (argc != 4 || rb_parse_uint(argv[3], 1, 86400, &v) < 0)
			usage();
		return flood(size_arg(argv[1]), size_arg(argv[2]), (unsigned)v) ? 1 : 0;
	}
	if (strcmp(argv[0], "churn") == 0) {
		if (argc != 2 || rb_parse_uint(argv[1], 1, 1000000, &v) < 0)
			usage();
		return churn((unsigned)v) ? 1 : 0;
	}
	if (strcmp(argv[0], "hold") == 0) {
		uint64_t secs;

		if (argc != 3 || rb_parse_uint(argv[1], 1, 100000, &v) < 0 ||
		    rb_parse_uint(argv[2], 1, 86400, &secs) < 0)
			usage();
		return hold((unsigned)v, (unsigned)secs) ? 1 : 0;
	}
	if (strcmp(argv[0], "discard") == 0) {
		if (argc != 1)
			usage();
		return discard() ? 1 : 0;
	}
	if (strcmp(argv[0], "starve") == 0) {
		if (argc != 2 || rb_parse_uint(argv[1], 1, 86400, &v) < 0)
			usage();
		return starve((unsigned)v);
	}
	for (j = 0; j < argc; j++) {
		int found = 0;

		for (i = 0; i < NSCENARIOS; i++) {
			if (strcmp(argv[j], "all") != 0 && strcmp(argv[j], scenarios[i].name) != 0)
				continue;
			found = 1;
			run_scenario(&scenarios[i]);
			nrun++;
		}
		if (!found) {
			fprintf(stderr, "rdmablk-hostile: unknown scenario '%s' (see 'list')\n",
				argv[j]);
			return 2;
		}
	}
	printf("%u scenario%s, %u failed\n", nrun, nrun == 1 ? "" : "s", nfailed);
	return nfailed == 0 ? 0 : 1;
}
