/* raw-client: an rdmablk connection on librdmacm and libibverbs directly,
 * not on the initiator library, for test tools that must send what a
 * correct initiator never would (rdmablk-hostile) or play a fake target
 * (rdmablk-relay, rdmablk-mw-check).
 *
 * Two layers:
 *   - raw_qp_create, raw_post_recv, raw_poll_one: the verbs setup of one
 *     RC connection on an rdma_cm_id, active or passive;
 *   - struct hconn: one active connection of the client, with its own
 *     event channel, send slots, receive buffers and a data buffer
 *     registered for remote read and write (h_open ... h_close), and the
 *     message builders for it.
 * Settings shared by every hconn live in `raw` (set before the first
 * h_open).  Every wait is bounded. */
#ifndef RDMABLK_TESTS_RAW_CLIENT_H
#define RDMABLK_TESTS_RAW_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "protocol.h"

#define H_NRECV       16            /* receives we keep posted */
#define H_NSEND       64            /* send slots */
#define H_SEND_SLOT   8192          /* > RB_MSG_BUF_SIZE: room for oversized messages */
#define H_DATA_SIZE   (2u << 20)    /* registered for remote read and write */
#define H_RESOLVE_MS  5000
#define H_LEAN_DATA   4096          /* lean: a data buffer nothing uses */
#define H_LEAN_RECV   2             /* lean: CHALLENGE, and one spare */
#define H_LEAN_SEND   1             /* lean: the HELLO */

#define WR_KIND_RECV  1u
#define WR_KIND_SEND  2u
#define WRID(kind, i) (((uint64_t)(kind) << 32) | (uint32_t)(i))

/* ---- verbs setup of one connection ---- */

/* A CQ for send_wr + recv_wr completions (on cc when not NULL, armed) and
 * an RC QP with one SGE per WR on id, in pd.  Checks that the QP got the
 * capacities asked for.  Returns 0, or -1 with *what naming the failed
 * call (errno set). */
int raw_qp_create(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_comp_channel *cc,
		  unsigned send_wr, unsigned recv_wr, unsigned max_inline,
		  struct ibv_cq **cq, const char **what);
/* Post one receive of len bytes at buf.  Returns ibv_post_recv's code. */
int raw_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *buf, uint32_t len, uint32_t lkey);
/* Poll until one completion arrives (sleeping 1 ms between polls) or
 * deadline_ns passes; polls once even when it has passed.  0, or -1
 * (errno ETIMEDOUT on the deadline). */
int raw_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, uint64_t deadline_ns);

/* Successful completions that arrived while a wait looked for the other
 * kind.  On one CQ a receive can complete before the send that came
 * first: the ACK and the peer's next message go to different rxe tasks. */
#define RAW_STASH 8
struct raw_stash {
	struct ibv_wc wc[RAW_STASH];
	unsigned n;
};
/* The next receive (want_recv) or send completion, from st first, else
 * polled until deadline_ns (0: what is there now), keeping the other kind in st.  A failed
 * completion is returned at once: its opcode is not valid.  0, or -1
 * (ETIMEDOUT, or EOVERFLOW when st is full). */
int raw_poll_kind(struct ibv_cq *cq, struct raw_stash *st, int want_recv, struct ibv_wc *wc,
		  uint64_t deadline_ns);
uint64_t deadline_after_s(unsigned s);

/* ---- the client's connections ---- */

struct raw_cfg {
	struct sockaddr_storage dst;    /* the target */
	struct sockaddr_storage src;    /* the source address, when has_src */
	int has_src;
	unsigned timeout_s;             /* bounds every wait for the target */
	uint16_t connect_qd;            /* queue depth asked for by h_connect */
	int verbose;                    /* debug lines on stderr */
	int starving;                   /* no receive after the first */
	int lean;                       /* small buffers: many connections */
	const char *prog;               /* prefix of debug lines */
	const char *cur;                /* what runs now, in debug lines */
	/* Reports a setup failure (default: a line on stderr). */
	void (*fail)(const char *msg);
};
extern struct raw_cfg raw;

void debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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
	char buf[RB_MSG_BUF_SIZE];
};

enum conn_result { CONN_OK, CONN_REJECTED, CONN_FAILED };

/* Resolve the target and set up PD, CQ, QP and buffers, with receives
 * posted: everything up to rdma_connect.  Returns 0 or -1 (reported). */
int h_open(struct hconn *h);
/* rdma_connect with the given private data (NULL: none) and wait for the
 * outcome.  On CONN_REJECTED, *why says what the reject carried. */
enum conn_result h_connect_raw(struct hconn *h, const void *priv, uint8_t priv_len,
			       char *why, size_t wsize);
/* h_open and a well-formed connect.  Returns 0 or -1 (reported). */
int h_connect(struct hconn *h);
/* rdma_connect with good private data asking for qd, without waiting for
 * the outcome.  rdma_connect's result. */
int h_connect_nowait(struct hconn *h, uint16_t qd);
/* Wait up to deadline for the next CM event; copies what is needed and
 * acks it.  Returns the event type, or -1 on timeout/error. */
int h_cm_event(struct hconn *h, uint64_t deadline, int *status, uint8_t *priv,
	       uint8_t *priv_len);
/* Wait until deadline for the next received message or the end of the
 * connection.  Send completions are reaped on the way.  Messages that
 * arrived before the close are returned first. */
enum ev_kind h_wait(struct hconn *h, uint64_t deadline, struct hev *ev);
/* Post one SEND of len bytes copied from msg.  Returns 0 or -1. */
int h_send(struct hconn *h, const void *msg, size_t len);
int h_post_recv(struct hconn *h, unsigned i);
void h_close(struct hconn *h);

/* ---- message builders ---- */

size_t hello_msg(void *buf, const char *name, uint16_t qd, uint32_t max_io);
size_t req_msg(void *buf, uint8_t op, uint16_t flags, uint64_t tag, uint64_t off,
	       uint32_t len, uint32_t rkey, uint64_t addr);
/* A READ or WRITE whose data lives at h->data + doff. */
size_t data_req(struct hconn *h, void *buf, uint8_t op, uint64_t tag, uint64_t off,
		uint32_t len, size_t doff);

#endif
