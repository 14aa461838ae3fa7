/* A request slot and its state machine (SPDK nvmf style: one state enum,
 * one driver function, req_process()). */
#ifndef RDMABLK_TARGET_REQUEST_H
#define RDMABLK_TARGET_REQUEST_H

#include <stdint.h>
#include <sys/queue.h>

#include "core/target.h"
#include "io/ioq.h"
#include "io/pool.h"
#include "io/workq.h"
#include "protocol.h"
#include "queue.h"

enum req_state {
	REQ_FREE,                   /* on the connection's free list */
	REQ_NEW,                    /* holds a received REQUEST: validate it */
	REQ_NEED_BUFFER,            /* waiting for a pool buffer (back-pressure) */
	REQ_NEED_SQ_READ,           /* WRITE: buffer held, waiting for send-queue room */
	REQ_TRANSFERRING_FROM_HOST, /* WRITE: RDMA READ of the data queued/posted */
	REQ_READY_TO_EXECUTE,       /* data (if any) is here: submit the backing I/O */
	REQ_EXECUTING,              /* its job is in the ioq (io_uring or a worker) */
	REQ_EXECUTED,               /* backing I/O returned; a write that must be
	                             * durable joins the flusher's batch */
	REQ_DURABILITY_WAIT,        /* in the flusher's batch (group commit) */
	REQ_READY_TO_REPLY,         /* status known: repost recv, post reply */
	REQ_NEED_SQ_REPLY,          /* the reply waits for send-queue room */
	REQ_TRANSFERRING_TO_HOST,   /* READ: RDMA WRITE (unsignaled) + reply SEND
	                             * queued/posted; the SEND's completion covers both */
	REQ_REPLYING,               /* reply SEND queued/posted */
	REQ_COMPLETED,              /* release the buffer, back to FREE */
};

struct req {
	struct wr_ctx rdma_ctx;     /* wr_id of the RDMA READ of WRITE data */
	struct wr_ctx data_ctx;     /* wr_id of the RDMA WRITE of READ data */
	struct wr_ctx send_ctx;     /* wr_id of the reply SEND */
	/* Its send WRs, queued on the connection's chain and posted with the
	 * others of the round (conn_post_sends); they must live until then. */
	struct ibv_send_wr wr_rdma, wr_send;
	struct ibv_sge sge_rdma, sge_send[2];
	struct req_queue *q;        /* its connection's request side */
	SLIST_ENTRY(req) free_link;
	enum req_state state;
	struct req_msg *msg;        /* the REQUEST message, until reposted */
	struct rb_req_info info;
	void *buf;                  /* pool buffer, or NULL */
	/* on the pool's wait queue (NEED_BUFFER) or the connection's
	 * send-queue wait queue (NEED_SQ_READ, NEED_SQ_REPLY) */
	struct waiter wait;
	int cap_wait;               /* NEED_BUFFER: the connection holds its share */
	int slot_wait;              /* READY_TO_EXECUTE: a TRIM/WRITE_ZEROES waits for
	                             * one of the connection's slow-job slots */
	uint64_t chunk_end;         /* TRIM/WRITE_ZEROES: end of the running piece */
	struct job job;
	int io_result;              /* 0 or -errno from the last job */
	/* Events the handlers record for req_process: */
	int job_back;               /* its job returned (req_job_done) */
	int rdma_failed;            /* the RDMA READ of WRITE data failed */
	int slow_held;              /* holds one of the connection's slow-job slots */
	uint16_t status;            /* rb_error for the reply */
	uint8_t rep_flags;
	unsigned wr_pending;        /* send WRs whose completion it waits for */
	unsigned send_slots;        /* SQ slots the reply SEND's completion frees */
	int data_orphan;            /* the RDMA WRITE was posted, its SEND was not:
	                             * the WRITE's (flush) completion frees it */
	uint64_t start_ns;          /* for its latency; 0 with stats = no */
	/* When its stages ended (stats.h, enum stats_stage); 0: not (yet) */
	uint64_t t_data, t_backing, t_flush;
	uint64_t start_by_ns;       /* its ttl: no backing I/O starts after; 0: none */
	uint8_t reply[sizeof(struct rb_reply)];
};

void req_init(struct req *r, struct req_queue *q);
/* Start a slot on a received REQUEST message. */
void req_start(struct req *r, struct req_msg *msg);
/* The driver: advance r as far as it can go. */
void req_process(struct req *r);

/* Completions routed back to the request: each records what happened
 * and calls req_process, which alone changes r->state. */
void req_rdma_done(struct req *r, int ok);
/* The unsignaled RDMA WRITE of READ data completed (it failed). */
void req_data_done(struct req *r, int ok);
void req_send_done(struct req *r, int ok);
/* conn_post_sends could not post this WR of r (ctx says which). */
void req_unposted(struct req *r, const struct wr_ctx *ctx, int data_posted);
void req_job_done(struct req *r);

/* Between request.c and request-exec.c (req_process's steps). */
int  is_write_type(uint8_t op);
/* The export failed (flusher.h): a write-type request or FLUSH gets EIO. */
int  req_refused_failed(const struct req *r);
/* READY_TO_EXECUTE: submit the job (or wait for a slow-job slot). */
enum req_state req_execute(struct req *r);
/* EXECUTING, its job back: the next piece, or EXECUTED. */
enum req_state req_job_returned(struct req *r);
/* EXECUTED: an error, durability (DURABILITY_WAIT), or READY_TO_REPLY. */
enum req_state req_executed(struct req *r);
/* DURABILITY_WAIT, its sync back: READY_TO_REPLY, durable or not. */
enum req_state req_synced(struct req *r);
/* Its ttl passed, or its connection is in error: its backing I/O must not
 * start (docs/durability.md, "Failover"). */
int  req_expired(const struct req *r);
/* The test hook RDMABLK_TEST_START_STALE is set (docs/testing.md). */
int  req_start_stale(void);
/* Give back the slow-job slot, if r holds one. */
void req_slow_put(struct req *r);

#endif
