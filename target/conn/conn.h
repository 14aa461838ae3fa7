/* One RDMA CM connection: its QP, CQs, receive buffers and request slots. */
#ifndef RDMABLK_TARGET_CONN_H
#define RDMABLK_TARGET_CONN_H

#include <stddef.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "core/target.h"
#include "req/request.h"

/* The RNR retry count of the target's send side, whatever the initiator
 * asked in its connect (7 would mean forever): a peer that stops posting
 * receives fails its connection after 6 RNR NAKs instead of holding the
 * send queue, and the pool buffers behind it, for good. */
#define CONN_RNR_RETRY 6

/* Receive buffers posted until HELLO (and AUTH) succeed: a connection
 * that has proved nothing pins two buffers, not queue depth + 1.  HELLO
 * takes one; it is posted again before CHALLENGE goes out, for AUTH. */
#define CONN_HANDSHAKE_RECVS 2

enum conn_state {
	CONN_ACCEPTING,   /* rdma_accept done; HELLO may beat ESTABLISHED */
	CONN_HELLO,       /* established, waiting for HELLO or LIST */
	CONN_READY,       /* HELLO answered: serving requests */
	CONN_LINGER,      /* final control reply posted; disconnect once sent */
	CONN_DRAINING,    /* finish requests already received, then disconnect */
	CONN_ERROR,       /* disconnecting: wait for WRs and backing I/O, then free */
};

struct recv_buf {
	struct wr_ctx ctx;          /* first: wr_id points here */
	struct conn *c;
	STAILQ_ENTRY(recv_buf) backlog_link;
	struct req_msg msg;         /* its buffer, length and arrival */
	uint32_t lkey;              /* of the region msg.buf is in */
};

/* One registered block of receive buffers. */
struct recv_region {
	char *mem;
	struct ibv_mr *mr;
};

/* The receive ring (recvring.c): CONN_HANDSHAKE_RECVS buffers from the
 * accept, grown to the granted queue depth + 1 once HELLO (and AUTH)
 * succeeded.  The QP and the receive CQ are sized for max from the start,
 * so growing only registers and posts. */
struct recv_ring {
	struct recv_buf *bufs;      /* max entries; the first n are set up */
	unsigned n, max;
	struct recv_region handshake, rest;
};

struct conn {
	LIST_ENTRY(conn) link;      /* on its loop's conns */
	struct target *t;
	struct loop *loop;          /* its event loop: the only thread touching it */
	uint64_t id;
	enum conn_state state;
	struct rdma_cm_id *cm_id;
	struct device *dev;
	struct ep_handler eh;
	struct ibv_comp_channel *channel;
	struct ibv_cq *send_cq, *recv_cq;
	struct ibv_qp *qp;
	char peer[64];
	struct sockaddr_storage peer_sa;
	uint64_t error_since_ns;
	uint64_t created_ns;

	/* liveness (liveness.c): a zero-length RDMA WRITE after keepalive s of silence */
	struct wr_ctx probe_ctx;
	int probe_busy;
	uint64_t probe_deadline_ns; /* the outstanding probe fails the connection then */
	int alive_seen;             /* a completion succeeded since the last check */
	uint64_t alive_ns;          /* when the peer was last known alive */
	/* send progress (liveness.c): with send WRs outstanding and no send
	 * completion for CONN_SEND_STALL_S, the oldest is that old: fail,
	 * whatever else (receives) arrives */
	uint64_t send_done;         /* send completions handled */
	uint64_t send_done_seen;    /* send_done at the last check */
	uint64_t sq_stall_ns;       /* 0, or since when no send completion came */

	unsigned cm_qd;             /* granted in the CM accept */
	unsigned qd;                /* granted in HELLO_REPLY */
	uint32_t inline_max;

	/* authentication: CHALLENGE sent, waiting for AUTH (docs/security.md) */
	int auth_pending;
	struct rb_hello_info auth_hello;     /* the HELLO being authenticated */
	uint8_t auth_expect[RB_MAC_LEN];     /* Mi; wiped after use */
	/* the key it authenticated with, as rb_secret_id (never the key
	 * itself), taken with the challenge: a reload that gives its peer
	 * another key revokes it (revoke.c) */
	int key_set;
	uint8_t key_id[RB_MAC_LEN];

	/* receive side: buffers of RB_MSG_BUF_SIZE, at most cm_qd + 1 */
	struct recv_ring ring;
	int handshaking;            /* counted in t->nhandshakes */
	STAILQ_HEAD(, recv_buf) backlog;  /* requests without a slot, in order */

	/* control SENDs (HELLO_REPLY, LIST_REPLY) */
	struct wr_ctx ctrl_ctx;
	char *ctrl_buf;
	struct ibv_mr *ctrl_mr;
	int ctrl_busy;

	/* Send queue accounting.  Every send WR takes a slot when it is
	 * queued; a signaled WR's completion frees its own slot and those of
	 * the unsignaled WRs it covers (a READ's RDMA WRITE, freed with its
	 * SEND).  So sq_used never undercounts the device's SQ, and the send
	 * CQ (sq_depth entries) holds every completion that can be pending:
	 * at most one per counted slot (an unsignaled WR has one only when
	 * it fails, and its slot is still counted then). */
	unsigned sq_depth, sq_used;
	struct waitq sq_wait;        /* requests waiting for room, in order */
	/* WRs queued in this round, posted as one chain (one doorbell) at
	 * its end by conn_post_sends. */
	struct ibv_send_wr *post_head, *post_tail;
	unsigned reads_pending;     /* RDMA READs queued and not completed: arm the
	                             * send CQ (counted by conn_queue_send) */
	int send_armed;             /* the send CQ will raise one event */
	int cq_event;               /* the channel fired this round: its event is
	                             * read at the round's end (conn_cq_rearm) */

	/* The request layer's side: its slots, the export, the quotas
	 * (req/queue.h).  Requests reach the connection only through
	 * rq.ops, conn.c's table of the functions below. */
	struct req_queue rq;
};

/* The largest receive ring: what the QP and receive CQ are sized for. */
static inline unsigned
conn_recv_max(const struct conn *c)
{
	return c->cm_qd + 1;
}

static inline struct conn *
conn_of(struct req_queue *q)
{
	return (struct conn *)((char *)q - offsetof(struct conn, rq));
}

/* listener.c hands over a CONNECT_REQUEST it has vetted. */
struct conn *conn_create(struct loop *l, struct rdma_cm_id *id,
			 unsigned cm_qd, const struct sockaddr *peer);
int  conn_accept(struct conn *c, uint8_t peer_responder_resources);
void conn_established(struct conn *c);
/* HELLO answered OK, or the connection freed: it leaves t->nhandshakes. */
void conn_handshake_done(struct conn *c);
/* "ready", "error", ... for logs and --stats. */
const char *conn_state_name(enum conn_state s);
/* Tear the connection down (idempotent); why goes in the one log line. */
void conn_fail(struct conn *c, const char *why);
/* Finish what was received, then disconnect (removed export, shutdown). */
void conn_drain(struct conn *c);
/* Its completion channel fired (the handler of c->eh, on c's loop): poll. */
void conn_cq_event(struct ep_handler *eh, uint32_t events);
/* At the round's end, after its doorbell (conn_send_arm): read the event,
 * re-arm the receive CQ if it fired and poll it again.  Returns the
 * completions that poll handled: work for another round. */
unsigned conn_cq_rearm(struct conn *c);
/* Free a connection that never went live (accept failed). */
void conn_abort(struct conn *c);
/* After each event-loop round: reap send completions and resume waiting
 * requests; for a connection in error, conn_send_arm, release what its
 * requests hold and free it once finished.  Returns 1 when c was
 * destroyed. */
int  conn_after_round(struct conn *c);
/* 1 when the round's end has nothing to do on c (conn_after_round and
 * conn_send_arm return at once): ready, no event, no send WR queued or
 * outstanding, nobody waiting. */
int  conn_quiet(const struct conn *c);
/* After every connection's conn_after_round: post what is queued, read the
 * channel's event and re-arm, reap send completions, arm the send CQ if
 * something waits for one.  Returns 1 when the poll after re-arming found
 * completions, those reaped freed room that a waiting request of c may
 * use, or c failed here: the loop must run another round without
 * sleeping. */
int  conn_send_arm(struct conn *c);

/* liveness.c: about once a second (daemon.c), for a connection not in error:
 * the handshake deadline and the liveness probe. */
void conn_watch(struct conn *c, uint64_t now_ns);

/* Post one signaled WR of the connection's own (not a request's), counted
 * in the send queue, after the chain queued so far; on failure the
 * connection fails and -1 is returned. */
int  conn_post_own(struct conn *c, struct ibv_send_wr *wr, const char *what);
/* Append first..last (already linked, slots reserved) to the round's chain. */
void conn_queue_send(struct conn *c, struct ibv_send_wr *first, struct ibv_send_wr *last);
/* Post the round's chain with one ibv_post_send. */
void conn_post_sends(struct conn *c);

/* recvring.c: the receive ring (struct recv_ring). */
int  recvring_create(struct conn *c, unsigned max);
/* Register and post buffers up to n in all (n <= max); -1 when it cannot. */
int  recvring_grow(struct conn *c, unsigned n);
void recvring_destroy(struct conn *c);
/* Post rb again (a request is done with its message, or the handshake). */
int  conn_post_recv(struct conn *c, struct recv_buf *rb);

/* sendq.c: what a request asks of the send queue (through c->rq.ops).
 * Take n send-queue slots, or queue r to be resumed when there is room
 * (waiter_cancel takes it off). */
int  conn_sq_reserve(struct conn *c, struct req *r, unsigned n);
/* Give back n slots taken and never used. */
void conn_sq_release(struct conn *c, unsigned n);
/* Like conn_fail, for an orderly close (logged at info). */
void conn_close(struct conn *c, const char *why);

/* qp.c: the connection's verbs resources, created by conn_create. */
int  conn_create_cqs(struct conn *c);
void conn_destroy_cqs(struct conn *c);
int  conn_modify_qp(struct conn *c, enum ibv_qp_state state, uint8_t rd_atomic);
int  conn_create_qp(struct conn *c);
int  conn_create_ctrl(struct conn *c);
void conn_destroy_ctrl(struct conn *c);

/* handshake.c: a message of type received before HELLO was answered:
 * HELLO, AUTH (after our CHALLENGE) or LIST. */
void conn_handshake_recv(struct conn *c, struct recv_buf *rb, uint8_t type);
/* A pending authentication ends unproven (no-op without one): counted as
 * refused, the expected proof wiped; why is logged unless NULL. */
void auth_abandon(struct conn *c, const char *why);

/* completion.c: poll cq until empty; returns the completions handled. */
unsigned conn_poll_cq(struct conn *c, struct ibv_cq *cq);

/* completion.c: start backlogged requests on free slots, in order. */
void conn_start_backlog(struct conn *c);

/* sendq.c: resume requests waiting for quota, send-queue room or a slot. */
void conn_resume(struct conn *c);

/* revoke.c: 1 when the key c authenticated with (or none) is not the one
 * export ce now gives its peer; 0 when it is, or ce needs no key. */
int  conn_key_stale(const struct conn *c, const struct cfg_export *ce);

#endif
