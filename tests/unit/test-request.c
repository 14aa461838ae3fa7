/* Unit test for target/req/request.c, the request state machine: drive one
 * request slot through its states with fake completions.  No verbs: this
 * binary links request.o and request-exec.o alone (Makefile), and what
 * they call on the connection (the ops of struct req_queue), the pool, the
 * ioq and the flusher are the fakes below, which record what was asked of
 * them.  No connection either: request.c never sees one.  Exits 0 or 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../target/config/config.h"
#include "../../target/io/flusher.h"
#include "../../target/log.h"
#include "../../target/core/loop.h"
#include "../../target/rbd/rbd.h"
#include "../../target/req/request.h"
#include "check.h"

#define SIZE     (1ull << 30)
#define MAX_IO   (1u << 20)

/* ---- fakes of what request.c calls ---- */

static struct {
	unsigned reposts;               /* conn_post_recv */
	unsigned wr_read, wr_write, wr_send;   /* conn_queue_send, by opcode */
	struct ibv_send_wr *last_send;  /* the last SEND queued */
	unsigned jobs;                  /* ioq_submit */
	struct job *last_job;
	unsigned syncs;                 /* flusher_submit */
	unsigned pool_free;             /* buffers pool_get may hand out */
	struct waiter *pool_waiter;     /* pool_wait */
	int failed;                     /* flusher_fail */
	const char *conn_failed;        /* ops->fail's why */
	/* the connection's send queue */
	unsigned sq_used, sq_depth;
	struct waitq sq_wait;
} fake;

static char pool_mem[4][MAX_IO];
static char pool_hdrs[4][64];

static void
fake_fail(struct req_queue *q, const char *why)
{
	fake.conn_failed = why;
	q->failed = 1;
}

static int
fake_post_recv(struct req_queue *q, struct req_msg *m)
{
	(void)q;
	(void)m;
	fake.reposts++;
	return 0;
}

static void
fake_queue_send(struct req_queue *q, struct ibv_send_wr *first, struct ibv_send_wr *last)
{
	struct ibv_send_wr *wr;

	(void)q;
	for (wr = first; ; wr = wr->next) {
		if (wr->opcode == IBV_WR_RDMA_READ)
			fake.wr_read++;
		else if (wr->opcode == IBV_WR_RDMA_WRITE)
			fake.wr_write++;
		else {
			fake.wr_send++;
			fake.last_send = wr;
		}
		if (wr == last)
			break;
	}
}

/* As sendq.c's, without the wait queue's order: room or wait. */
static int
fake_sq_reserve(struct req_queue *q, struct req *r, unsigned n)
{
	(void)q;
	if (fake.sq_used + n <= fake.sq_depth) {
		waiter_cancel(&r->wait);
		fake.sq_used += n;
		return 1;
	}
	waitq_add(&fake.sq_wait, &r->wait);
	return 0;
}

static void
fake_sq_release(struct req_queue *q, unsigned n)
{
	(void)q;
	fake.sq_used -= n;
}

static const struct req_queue_ops fake_ops = {
	.post_recv = fake_post_recv,
	.sq_reserve = fake_sq_reserve,
	.sq_release = fake_sq_release,
	.queue_send = fake_queue_send,
	.fail = fake_fail,
};

void *
pool_get(struct pool *p)
{
	(void)p;
	if (fake.pool_free == 0)
		return NULL;
	return pool_mem[--fake.pool_free];
}

void
pool_put(struct pool *p, void *buf)
{
	(void)p;
	(void)buf;
	fake.pool_free++;
}

void *
pool_hdr(struct pool *p, const void *buf)
{
	(void)p;
	return pool_hdrs[((const char *)buf - pool_mem[0]) / MAX_IO];
}

uint32_t
pool_lkey(const struct pool *p)
{
	(void)p;
	return 1;
}

void
pool_wait(struct pool *p, struct waiter *w)
{
	(void)p;
	fake.pool_waiter = w;
}

enum ioq_engine
ioq_engine(const struct ioq *q)
{
	(void)q;
	return IOQ_THREADS;
}

void
ioq_submit(struct ioq *q, struct job *j)
{
	(void)q;
	fake.jobs++;
	fake.last_job = j;
}

/* No RBD export here: never called. */
void
rbd_job_submit(struct job *j)
{
	(void)j;
	abort();
}

int
job_try_now(struct job *j)
{
	(void)j;
	return 0;
}

void
flusher_submit(struct flusher *f, struct job *j)
{
	(void)f;
	(void)j;
	fake.syncs++;
}

void
flusher_fail(struct flusher *f, int err, const char *what)
{
	(void)f;
	(void)what;
	fake.failed = err;
}

int
flusher_failed(const struct flusher *f)
{
	(void)f;
	return fake.failed;
}

const char *
flusher_failure(const struct flusher *f)
{
	(void)f;
	return fake.failed ? "failed" : "";
}

/* ---- one connection with one slot ---- */

static struct config cfg;
static struct target t;
static struct cfg_export ce;
static struct export e;
static struct loop lp;
static struct flusher *flushers[1];
static struct req_queue q;
static struct req r;
static struct req_msg rm;
static char msg[256];

static void
setup(enum durability d, unsigned pool_bufs)
{
	memset(&fake, 0, sizeof(fake));
	fake.pool_free = pool_bufs;
	memset(&cfg, 0, sizeof(cfg));
	cfg.stats = 0;
	cfg.io_threads = 2;
	memset(&t, 0, sizeof(t));
	STAILQ_INIT(&t.devices);
	STAILQ_INIT(&t.exports);
	t.cfg = &cfg;
	memset(&ce, 0, sizeof(ce));
	snprintf(ce.name, sizeof(ce.name), "test");
	ce.durability = d;
	ce.size = SIZE;
	memset(&e, 0, sizeof(e));
	e.cfg = &ce;
	e.flushers = flushers;
	e.nflushers = 1;
	e.no_nowait = 1;         /* no page-cache fast path: every READ is a job */
	memset(&q, 0, sizeof(q));
	memset(&lp, 0, sizeof(lp));
	lp.t = &t;
	q.ops = &fake_ops;
	q.t = &t;
	q.loop = &lp;
	q.exp = &e;
	q.peer = "peer";
	waitq_init(&fake.sq_wait);
	fake.sq_depth = 4;
	SLIST_INIT(&q.free_reqs);
	q.buf_cap = 4;
	q.slow_quota = 1;
	q.lim.export_size = SIZE;
	q.lim.max_io = MAX_IO;
	q.lim.min_block = 512;
	q.lim.inline_max = 0;
	req_init(&r, &q);
}

/* The next start()'s ttl, and how long ago it arrived. */
static uint8_t next_ttl;
static uint64_t next_age_ns;

/* A REQUEST arrives on the slot. */
static void
start(uint8_t op, uint16_t flags, uint64_t off, uint32_t len)
{
	struct rb_req_info info = {
		.opcode = op, .flags = flags, .tag = 42, .offset = off, .length = len,
		.ttl = next_ttl,
	};

	if ((op == RB_OP_READ || op == RB_OP_WRITE) && !(flags & RB_REQ_INLINE)) {
		info.addr = 0x10000;
		info.rkey = 7;
	}

	memset(&rm, 0, sizeof(rm));
	rm.buf = msg;
	rm.len = (uint32_t)rb_request_encode(msg, &info);
	rm.arrived_ns = rb_now_ns() - next_age_ns;
	next_ttl = 0;
	next_age_ns = 0;
	q.credits_used++;
	req_start(&r, &rm);
}

/* The reply the slot queued. */
static struct rb_rep_info
reply(void)
{
	struct rb_rep_info rep;
	const char *why = "?";

	memset(&rep, 0, sizeof(rep));
	CHECK(rb_reply_decode(r.reply, sizeof(r.reply), &rep, &why) == 0);
	CHECK(rep.tag == 42);
	return rep;
}

/* The job request.c handed over returns with result. */
static void
job_returns(int result)
{
	r.job.result = result;
	req_job_done(&r);
}

/* The reply SEND completed: the slot is free, nothing is held. */
static void
send_completes(unsigned pool_bufs)
{
	fake.sq_used -= r.send_slots;
	req_send_done(&r, 1);
	CHECK(r.state == REQ_FREE);
	CHECK(q.active == 0);
	CHECK(q.credits_used == 0);
	CHECK(q.bufs_held == 0);
	CHECK(fake.pool_free == pool_bufs);
	CHECK(SLIST_FIRST(&q.free_reqs) == &r);
	CHECK(fake.reposts == 1);
}

static void
test_read(void)
{
	setup(DURABILITY_FUA, 1);
	start(RB_OP_READ, 0, 4096, 8192);
	CHECK(r.state == REQ_EXECUTING);
	CHECK(fake.jobs == 1 && fake.last_job->op == JOB_READ);
	CHECK(fake.last_job->off == 4096 && fake.last_job->len == 8192);
	CHECK(q.bufs_held == 1 && fake.pool_free == 0);
	CHECK(q.io_inflight == 1);
	job_returns(0);
	/* RDMA WRITE of the data, then the reply SEND: two slots, one signal */
	CHECK(r.state == REQ_TRANSFERRING_TO_HOST);
	CHECK(fake.wr_write == 1 && fake.wr_send == 1);
	CHECK(fake.sq_used == 2 && r.send_slots == 2);
	CHECK(q.io_inflight == 0);
	CHECK(reply().error == RB_OK);
	send_completes(1);
}

/* An inline READ: no RDMA WRITE; one SEND gathers the header from the
 * buffer's own area and the data from the buffer. */
static void
test_read_inline(void)
{
	static char rx[RB_MSG_BUF_SIZE];
	struct rb_rep_info rep;
	const char *why = "?";
	struct ibv_send_wr *wr;

	setup(DURABILITY_FUA, 1);
	q.lim.read_inline = 1;
	start(RB_OP_READ, RB_REQ_INLINE, 4096, 4096);
	CHECK(r.state == REQ_EXECUTING);
	CHECK(fake.jobs == 1 && fake.last_job->op == JOB_READ && fake.last_job->len == 4096);
	memset(pool_mem[0], 0x5a, 4096);
	job_returns(0);
	CHECK(r.state == REQ_REPLYING);
	CHECK(fake.wr_write == 0 && fake.wr_send == 1);
	CHECK(fake.sq_used == 1 && r.send_slots == 1);
	wr = fake.last_send;
	CHECK(wr != NULL && wr->opcode == IBV_WR_SEND && wr->num_sge == 2 &&
	      (wr->send_flags & IBV_SEND_SIGNALED) && !(wr->send_flags & IBV_SEND_INLINE));
	if (wr == NULL || wr->num_sge != 2)
		return;
	CHECK(wr->sg_list[0].addr == (uintptr_t)pool_hdrs[0] &&
	      wr->sg_list[0].length == sizeof(struct rb_reply) && wr->sg_list[0].lkey == 1);
	CHECK(wr->sg_list[1].addr == (uintptr_t)pool_mem[0] &&
	      wr->sg_list[1].length == 4096 && wr->sg_list[1].lkey == 1);
	/* what the initiator receives: the header, then the buffer */
	memcpy(rx, pool_hdrs[0], sizeof(struct rb_reply));
	memcpy(rx + sizeof(struct rb_reply), pool_mem[0], 4096);
	CHECK(rb_reply_decode(rx, sizeof(struct rb_reply) + 4096, &rep, &why) == 0);
	CHECK(rep.tag == 42 && rep.error == RB_OK && rep.data_len == 4096 &&
	      ((const unsigned char *)rep.data)[4095] == 0x5a);
	/* the buffer is held until the SEND completes */
	CHECK(q.bufs_held == 1);
	send_completes(1);

	/* a failed one replies without data, from the slot's own bytes */
	setup(DURABILITY_FUA, 1);
	q.lim.read_inline = 1;
	start(RB_OP_READ, RB_REQ_INLINE, 4096, 4096);
	job_returns(-EIO);
	wr = fake.last_send;
	CHECK(wr != NULL && wr->num_sge == 1 && wr->sg_list[0].addr == (uintptr_t)r.reply);
	CHECK(reply().error == RB_EIO && fake.wr_write == 0);
	send_completes(1);

	/* not granted: refused, nothing read */
	setup(DURABILITY_FUA, 1);
	start(RB_OP_READ, RB_REQ_INLINE, 4096, 4096);
	CHECK(fake.jobs == 0 && reply().error == RB_EINVAL);
	send_completes(1);

	/* with SEND_INV asked, an inline READ's reply invalidates no key,
	 * while a READ's by RDMA WRITE invalidates its own */
	setup(DURABILITY_FUA, 1);
	q.lim.read_inline = 1;
	q.send_inv = 1;
	start(RB_OP_READ, RB_REQ_INLINE, 4096, 4096);
	job_returns(0);
	wr = fake.last_send;
	CHECK(wr != NULL && wr->opcode == IBV_WR_SEND && wr->invalidate_rkey == 0);
	send_completes(1);
	setup(DURABILITY_FUA, 1);
	q.send_inv = 1;
	start(RB_OP_READ, 0, 4096, 4096);
	job_returns(0);
	wr = fake.last_send;
	CHECK(wr != NULL && wr->opcode == IBV_WR_SEND_WITH_INV && wr->invalidate_rkey == 7);
	send_completes(1);
}

/* READ_IMM: a successful inline READ's reply is one SEND with immediate
 * of the data alone, the tag's low half in the immediate, and never
 * invalidates; a failed one, and a READ by RDMA WRITE, reply as before. */
static void
test_read_imm(void)
{
	struct rb_rep_info rep;
	const char *why = "?";
	struct ibv_send_wr *wr;

	setup(DURABILITY_FUA, 1);
	q.lim.read_inline = 1;
	q.read_imm = 1;
	q.send_inv = 1;
	start(RB_OP_READ, RB_REQ_INLINE, 4096, 4096);
	CHECK(fake.jobs == 1 && fake.last_job->op == JOB_READ && fake.last_job->len == 4096);
	r.info.tag = UINT64_C(0x123456789abcdef0);
	memset(pool_mem[0], 0x5a, 4096);
	job_returns(0);
	CHECK(r.state == REQ_REPLYING);
	CHECK(fake.wr_write == 0 && fake.wr_send == 1 && fake.sq_used == 1 && r.send_slots == 1);
	wr = fake.last_send;
	CHECK(wr != NULL && wr->opcode == IBV_WR_SEND_WITH_IMM && wr->num_sge == 1 &&
	      wr->imm_data == rb_reply_imm(UINT64_C(0x9abcdef0)) &&
	      (wr->send_flags & IBV_SEND_SIGNALED) && !(wr->send_flags & IBV_SEND_INLINE));
	if (wr == NULL || wr->num_sge != 1)
		return;
	CHECK(wr->sg_list[0].addr == (uintptr_t)pool_mem[0] &&
	      wr->sg_list[0].length == 4096 && wr->sg_list[0].lkey == 1);
	/* what the initiator receives: the buffer alone, and the immediate */
	CHECK(rb_reply_imm_decode(wr->imm_data, pool_mem[0], 4096, &rep, &why) == 0);
	CHECK(rep.tag == 0x9abcdef0u && rep.error == RB_OK && rep.data_len == 4096 &&
	      ((const unsigned char *)rep.data)[4095] == 0x5a);
	CHECK(q.bufs_held == 1);
	send_completes(1);

	/* a failed one: the 16-byte reply, no immediate */
	setup(DURABILITY_FUA, 1);
	q.lim.read_inline = 1;
	q.read_imm = 1;
	start(RB_OP_READ, RB_REQ_INLINE, 4096, 4096);
	job_returns(-EIO);
	wr = fake.last_send;
	CHECK(wr != NULL && wr->opcode == IBV_WR_SEND && wr->num_sge == 1 &&
	      wr->sg_list[0].addr == (uintptr_t)r.reply);
	CHECK(reply().error == RB_EIO && fake.wr_write == 0);
	send_completes(1);

	/* a READ by RDMA WRITE: the WRITE, then the reply that kills its key */
	setup(DURABILITY_FUA, 1);
	q.lim.read_inline = 1;
	q.read_imm = 1;
	q.send_inv = 1;
	start(RB_OP_READ, 0, 4096, 4096);
	job_returns(0);
	wr = fake.last_send;
	CHECK(fake.wr_write == 1 && wr != NULL && wr->opcode == IBV_WR_SEND_WITH_INV &&
	      wr->invalidate_rkey == 7);
	send_completes(1);
}

static void
test_write_durable(void)
{
	struct rb_rep_info rep;

	setup(DURABILITY_ALWAYS, 1);
	start(RB_OP_WRITE, 0, 0, 4096);
	CHECK(r.state == REQ_TRANSFERRING_FROM_HOST);
	CHECK(fake.wr_read == 1);
	req_rdma_done(&r, 1);
	CHECK(r.state == REQ_EXECUTING);
	CHECK(fake.last_job->op == JOB_WRITE && fake.last_job->src != NULL);
	job_returns(0);
	/* durability = always: the write joins the flusher's batch */
	CHECK(r.state == REQ_DURABILITY_WAIT);
	CHECK(fake.syncs == 1 && fake.wr_send == 0);
	job_returns(0);
	CHECK(r.state == REQ_REPLYING);
	rep = reply();
	CHECK(rep.error == RB_OK && (rep.flags & RB_REP_DURABLE));
	send_completes(1);
}

static void
test_sync_error(void)
{
	struct rb_rep_info rep;

	setup(DURABILITY_FUA, 1);
	start(RB_OP_FLUSH, 0, 0, 0);
	CHECK(r.state == REQ_DURABILITY_WAIT && fake.syncs == 1);
	job_returns(-5);          /* EIO */
	CHECK(r.state == REQ_REPLYING);
	rep = reply();
	CHECK(rep.error == RB_EIO && !(rep.flags & RB_REP_DURABLE));
	send_completes(1);
}

static void
test_rdma_read_fails(void)
{
	setup(DURABILITY_FUA, 1);
	start(RB_OP_WRITE, 0, 0, 4096);
	CHECK(r.state == REQ_TRANSFERRING_FROM_HOST);
	req_rdma_done(&r, 0);
	/* no job for data that never arrived; EIO */
	CHECK(fake.jobs == 0);
	CHECK(r.state == REQ_REPLYING);
	CHECK(reply().error == RB_EIO);
	send_completes(1);
}

static void
test_reply_waits_for_room(void)
{
	setup(DURABILITY_FUA, 0);
	fake.sq_used = fake.sq_depth;   /* the send queue is full */
	start(RB_OP_NOP, 0, 0, 0);
	CHECK(r.state == REQ_NEED_SQ_REPLY);
	CHECK(waitq_first(&fake.sq_wait) == &r.wait);
	CHECK(fake.wr_send == 0 && fake.reposts == 0);
	/* still full: it stays */
	req_process(&r);
	CHECK(r.state == REQ_NEED_SQ_REPLY);
	/* room: the waiter is woken (sendq.c's conn_resume does this) */
	fake.sq_used = 0;
	r.wait.wake(&r.wait);
	CHECK(r.state == REQ_REPLYING);
	CHECK(waitq_empty(&fake.sq_wait));
	CHECK(fake.wr_send == 1);
	send_completes(0);
}

static void
test_waits_for_buffer(void)
{
	setup(DURABILITY_FUA, 0);
	start(RB_OP_READ, 0, 0, 4096);
	CHECK(r.state == REQ_NEED_BUFFER);
	CHECK(fake.pool_waiter == &r.wait && fake.jobs == 0);
	fake.pool_free = 1;
	fake.pool_waiter->wake(fake.pool_waiter);
	CHECK(r.state == REQ_EXECUTING && fake.jobs == 1);
	job_returns(0);
	CHECK(r.state == REQ_TRANSFERRING_TO_HOST);
	send_completes(1);
}

static void
test_error_waits_for_job(void)
{
	setup(DURABILITY_FUA, 1);
	start(RB_OP_READ, 0, 0, 4096);
	CHECK(r.state == REQ_EXECUTING);
	q.failed = 1;
	/* the connection is going away, but the job still owns the buffer */
	req_process(&r);
	CHECK(r.state == REQ_EXECUTING);
	CHECK(q.bufs_held == 1 && fake.pool_free == 0);
	job_returns(0);
	CHECK(r.state == REQ_FREE);
	CHECK(q.bufs_held == 0 && fake.pool_free == 1);
	CHECK(fake.wr_write == 0 && fake.wr_send == 0);
	CHECK(fake.reposts == 0);      /* no receive posted on a failed connection */
	CHECK(q.active == 0 && q.io_inflight == 0);
}

static void
test_trim_in_pieces(void)
{
	const uint32_t len = 100u << 20;    /* two pieces: 64 MiB and 36 MiB */

	setup(DURABILITY_FUA, 0);
	start(RB_OP_TRIM, 0, 0, len);
	CHECK(r.state == REQ_EXECUTING);
	CHECK(fake.jobs == 1 && fake.last_job->op == JOB_TRIM);
	CHECK(fake.last_job->off == 0 && fake.last_job->len == 64u << 20);
	CHECK(q.slow_inflight == 1);
	job_returns(0);
	CHECK(r.state == REQ_EXECUTING);
	CHECK(fake.jobs == 2);
	CHECK(fake.last_job->off == 64u << 20 && fake.last_job->len == 36u << 20);
	CHECK(q.slow_inflight == 1 && q.io_inflight == 1);
	job_returns(0);
	CHECK(r.state == REQ_REPLYING);
	CHECK(q.slow_inflight == 0);
	CHECK(reply().error == RB_OK);
	send_completes(0);
}

static void
test_trim_error_mid_run(void)
{
	setup(DURABILITY_FUA, 0);
	start(RB_OP_TRIM, 0, 0, 100u << 20);
	CHECK(q.slow_inflight == 1);
	q.failed = 1;
	job_returns(0);
	/* no second piece; the slow-job slot is given back */
	CHECK(fake.jobs == 1);
	CHECK(r.state == REQ_FREE);
	CHECK(q.slow_inflight == 0 && q.io_inflight == 0);
}

/* A request whose ttl passed before its backing I/O could start is
 * answered ETIMEDOUT and never started; one within its ttl starts, and
 * carries its start-by time to the job.  A job that comes back
 * -ECANCELED (it waited, and its ttl passed) is ETIMEDOUT too, and does
 * not fail the export. */
static void
test_ttl(void)
{
	struct rb_rep_info rep;

	setup(DURABILITY_FUA, 1);
	next_ttl = 2;
	next_age_ns = 3000000000ull;
	start(RB_OP_TRIM, 0, 0, 4096);
	CHECK(fake.jobs == 0 && r.state == REQ_REPLYING);
	rep = reply();
	CHECK(rep.error == RB_ETIMEDOUT);
	send_completes(1);

	setup(DURABILITY_FUA, 1);
	next_ttl = 10;
	start(RB_OP_READ, 0, 0, 4096);
	CHECK(fake.jobs == 1 && r.state == REQ_EXECUTING);
	CHECK(fake.last_job->start_by_ns > rb_now_ns() + 9000000000ull &&
	      fake.last_job->may_start != NULL && job_may_start(fake.last_job, 1));
	q.failed = 1;
	CHECK(!job_may_start(fake.last_job, 1));   /* its connection failed */
	q.failed = 0;
	job_returns(-ECANCELED);
	CHECK(r.state == REQ_TRANSFERRING_TO_HOST || r.state == REQ_REPLYING);
	rep = reply();
	CHECK(rep.error == RB_ETIMEDOUT && fake.failed == 0);
	send_completes(1);
}

static void
test_bad_range(void)
{
	setup(DURABILITY_FUA, 1);
	start(RB_OP_READ, 0, SIZE, 4096);     /* past the end */
	CHECK(fake.jobs == 0);
	CHECK(r.state == REQ_REPLYING);
	CHECK(reply().error != RB_OK);
	send_completes(1);
}

int
main(void)
{
	log_init(1, LOG_LEVEL_ERROR);    /* the EIO paths log a warning each */
	test_read();
	test_read_inline();
	test_read_imm();
	test_write_durable();
	test_sync_error();
	test_rdma_read_fails();
	test_reply_waits_for_room();
	test_waits_for_buffer();
	test_error_waits_for_job();
	test_trim_in_pieces();
	test_trim_error_mid_run();
	test_bad_range();
	test_ttl();
	printf("test-request: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
