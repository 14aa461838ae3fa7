/* fake-target: the passive side of one rdmablk connection on librdmacm and
 * libibverbs directly, for test tools that play a target misbehaving on
 * purpose next to the real initiator library in the same process
 * (rdmablk-mw-check: a stale key; rdmablk-bad-reply: data nobody asked
 * for).  It listens, accepts one initiator, answers its HELLO, and then
 * receives requests and sends what the tool builds.  Every wait is bounded
 * (FAKE_DEADLINE_S).  The verbs objects are never freed: each tool exits
 * right after its one connection. */
#ifndef RDMABLK_TESTS_FAKE_TARGET_H
#define RDMABLK_TESTS_FAKE_TARGET_H

#include <pthread.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "internal.h"
#include "protocol.h"
#include "raw-client.h"

#define FAKE_NRECV       4
#define FAKE_DATA        (2 * RB_READ_INLINE_MAX)
#define FAKE_DEADLINE_S  60

struct fake_target {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *recv_mr, *send_mr, *data_mr;
	struct raw_stash stash;          /* receives seen while waiting for a send */
	enum ibv_wc_status send_status;  /* of the last fake_send */
	uint8_t recv[FAKE_NRECV][RB_MSG_BUF_SIZE];
	uint8_t send[sizeof(struct rb_reply) + RB_READ_INLINE_MAX];
	uint8_t data[FAKE_DATA];         /* registered for local access only */
};

/* Listen on addr:port.  0, or -1 with *what naming the failed call. */
int fake_listen(struct fake_target *f, const char *addr, uint16_t port, const char **what);
/* Wait for one CONNECT_REQUEST, set up its QP, buffers and receives, and
 * accept it with a queue depth of 2.  0, or -1 with *what set. */
int fake_accept(struct fake_target *f, const char **what);
/* The next receive: its length and buffer index.  0, or -1 (a failed
 * completion, or none within the deadline; printed). */
int fake_recv(struct fake_target *f, uint32_t *len, unsigned *idx);
/* Post the receive buffer idx again.  ibv_post_recv's code. */
int fake_repost(struct fake_target *f, unsigned idx);
/* Post wr signaled and wait for its completion, whose status lands in
 * f->send_status.  0, or -1 when it could not be posted or did not
 * complete in time. */
int fake_send(struct fake_target *f, struct ibv_send_wr *wr);
/* What fake_hello grants, when the HELLO asked for it. */
#define FAKE_READ_INLINE 0x1u   /* RB_EXP_READ_INLINE */
#define FAKE_READ_IMM    0x2u   /* RB_EXP_READ_IMM (with FAKE_READ_INLINE) */
/* Answer the HELLO: a 1 MiB export, queue depth 2, max_io up to 64 KiB,
 * no inline writes, and of inline reads what grants (FAKE_*) has and the
 * HELLO asked for.  0, or -1 with *why set. */
int fake_hello(struct fake_target *f, unsigned grants, struct rb_hello_info *h,
	       const char **why);
/* The usual start: fake_listen, fake_set(listening), fake_accept and
 * fake_hello.  0, or -1 after fake_fail. */
int fake_open(struct fake_target *f, const char *addr, uint16_t port, int *listening,
	      unsigned grants, struct rb_hello_info *h);
/* Receive one request, which must be a READ of at most max_len bytes, and
 * repost its buffer.  0, or -1 after fake_fail. */
int fake_read_request(struct fake_target *f, uint32_t max_len, struct rb_req_info *req);
/* Wait up to s seconds for the initiator to disconnect.  1 if it did. */
int fake_wait_disconnect(struct fake_target *f, unsigned s);
/* A one-SGE work request of opcode over len bytes at addr (lkey): *wr
 * and *sge zeroed and filled, wr pointing at sge. */
void fake_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, const void *addr, uint32_t len,
	     uint32_t lkey, enum ibv_wr_opcode opcode);

/* Flags between a tool's fake target thread and its main thread, under one
 * lock.  fake_set sets *flag and wakes the waiters; fake_wait waits for it
 * up to FAKE_DEADLINE_S, or until fake_fail: 0 once set, else -1. */
void fake_set(int *flag);
int  fake_wait(int *flag);
/* The fake target gives up: one line naming what failed (and errno), and
 * every fake_wait returns. */
void fake_fail(const char *what);

/* The tool's two sides.  fake_start runs fn (the fake target) on a thread
 * and waits until it sets *listening: 0, or -1.  fake_initiator connects
 * the real initiator library (internals, initiator/internal.h) to it with
 * queue depth 2, max_io and mr_static, counting into *stats, its log lines
 * on stderr as "TOOL: initiator: ...": 0, or -1 (printed). */
int fake_start(void *(*fn)(void *), pthread_t *th, int *listening);
int fake_initiator(const char *tool, const char *addr, uint16_t port, uint32_t max_io,
		   int mr_static, struct rb_stats *stats, struct rb_conn **conn);
/* One READ of len bytes at offset 0 into buf, through the connection's
 * pool (not direct), given s seconds.  rb_conn_request's result. */
int fake_read(struct rb_conn *conn, void *buf, uint32_t len, unsigned s);

#endif
