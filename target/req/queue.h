/* The request layer's side of one connection: its request slots, the
 * quotas they share, and the few things a request asks of the transport
 * below it.  struct conn (conn/conn.h) embeds one and fills in its ops,
 * as nvmet-rdma's queue embeds an nvmet_sq and the nvmet core reaches the
 * transport only through nvmet_fabrics_ops: req/ never includes conn/. */
#ifndef RDMABLK_TARGET_REQ_QUEUE_H
#define RDMABLK_TARGET_REQ_QUEUE_H

#include <stdint.h>
#include <sys/queue.h>

#include <infiniband/verbs.h>

#include "core/stats.h"
#include "protocol.h"

struct export;
struct loop;
struct pool;
struct req;
struct req_queue;
struct target;

/* A received REQUEST message: what the request layer reads of it. */
struct req_msg {
	char *buf;
	uint32_t len;               /* received bytes */
	uint64_t arrived_ns;        /* when it was received (its ttl) */
};

/* What a request asks of its connection. */
struct req_queue_ops {
	/* Give m back to the receive queue; -1 (the connection failed) when
	 * it cannot. */
	int  (*post_recv)(struct req_queue *q, struct req_msg *m);
	/* Take n send-queue slots, or queue r to be resumed when there is
	 * room (waiter_cancel takes it off): 1 or 0. */
	int  (*sq_reserve)(struct req_queue *q, struct req *r, unsigned n);
	/* Give back n slots taken and never used. */
	void (*sq_release)(struct req_queue *q, unsigned n);
	/* Append first..last (linked, slots reserved) to the round's chain. */
	void (*queue_send)(struct req_queue *q, struct ibv_send_wr *first,
			   struct ibv_send_wr *last);
	/* Tear the connection down; why goes in its one log line. */
	void (*fail)(struct req_queue *q, const char *why);
};

struct req_queue {
	const struct req_queue_ops *ops;
	/* Set when the connection is created, never changed: */
	struct target *t;
	struct loop *loop;          /* its event loop: the only thread touching it */
	struct pool *pool;          /* the device's pool of that loop */
	const char *peer;           /* for log lines */
	/* Set by HELLO: */
	struct export *exp;
	struct rb_req_limits lim;
	int send_inv;               /* HELLO had RB_HELLO_SEND_INV */
	int read_imm;               /* RB_EXP_READ_IMM was granted */
	/* The connection is in error: nothing new starts, and a request
	 * completes once nothing (a WR, a job) may touch it any more. */
	int failed;

	/* request slots: 2 * qd (a slot stays busy until its SEND completes) */
	struct req *reqs;
	unsigned nreqs;
	SLIST_HEAD(, req) free_reqs;
	unsigned active;            /* slots not FREE */
	unsigned credits_used;      /* requests received and not yet replied */
	unsigned io_inflight;       /* jobs at workers or flushers */
	/* pool buffers: at most buf_cap held at once (a share of the device's
	 * pool), so that one connection cannot take every buffer */
	unsigned bufs_held, buf_cap;
	unsigned cap_waiters;       /* requests waiting in NEED_BUFFER for that */
	/* TRIM/WRITE_ZEROES running (each in pieces, request-exec.c): at most
	 * slow_quota at once, so that one connection's discards cannot take
	 * every worker */
	unsigned slow_inflight, slow_quota;
	unsigned slot_waiters;      /* requests waiting in READY_TO_EXECUTE for that */
	struct stats_io stats;      /* its replies (stats.h) */
};

#endif
