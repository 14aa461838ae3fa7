/* One ublk queue: its thread fetches requests from /dev/ublkcN through its
 * own io_uring, sends them on its own RDMA connections (asynchronous API;
 * connections=N, default 2), and commits each result together with the
 * next fetch.  Each connection's readiness fd is polled through the same
 * ring, so the thread sleeps in one place for all of them, and reaps only
 * the connections that fired.  A request goes to the connection with the
 * fewest outstanding, the first on a tie: at QD1 every request takes the
 * first, and a deep queue spreads over them.  With busy-poll=yes it does
 * not sleep while a reply is due: it polls the CQs (the library then
 * never arms them).  With busy-poll=adaptive (the default) it polls them
 * for about four round trips while one request is out (common/spin.h),
 * and arms them only when it is about to sleep.
 *
 * Per tag:  FETCHING --request--> AT_TARGET --reaped--> FETCHING (COMMIT_AND_FETCH)
 *                \--ABORT (device stopping)--> DONE */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "protocol.h"
#include "ublk.h"
#include "util.h"

/* A readiness poll's user_data: this bit and the connection's index (a
 * tag's is the tag, below 2^16). */
#define POLL_BIT    (UINT64_C(1) << 63)
#define TICK_NS     (1000 * 1000 * 1000ll)   /* reap at least this often: timeouts */

enum ub_io_state { UB_IO_FETCHING, UB_IO_AT_TARGET, UB_IO_DONE };

struct ub_io {
	enum ub_io_state state;
	struct rb_aio    aio;
	uint64_t         sent_ns;     /* busy-poll=adaptive: for its round trip, */
	int              lone;        /* measured only when it was sent alone */
	struct ub_steps_io steps;     /* step-times=yes */
};

/* What is queued goes to the kernel now: step-times stamps the hand-back
 * of the results among it (steps.c). */
static void
steps_handing(struct ub_queue *q)
{
	if (q->dev->steps_on)
		ub_steps_handing(q);
}

/* A zeroed 128-byte SQE.  The ring has room for one command per tag and
 * one poll per connection, so it is never full; submit first if it were. */
static struct io_uring_sqe *
get_sqe(struct ub_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (sqe == NULL) {
		steps_handing(q);
		io_uring_submit(&q->ring);
		sqe = io_uring_get_sqe(&q->ring);
		if (sqe == NULL) {
			ub_log("queue %u: io_uring submission queue full", q->id);
			abort();
		}
	}
	memset(sqe, 0, 2 * sizeof(*sqe));
	return sqe;
}

static void
prep_io_cmd(struct ub_queue *q, unsigned op, unsigned tag, int result)
{
	struct io_uring_sqe *sqe = get_sqe(q);
	struct ublksrv_io_cmd *cmd;

	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = q->dev->cdev_fd;
	sqe->cmd_op = op;
	sqe->user_data = tag;
	cmd = (struct ublksrv_io_cmd *)(void *)sqe->cmd;
	cmd->q_id = (uint16_t)q->id;
	cmd->tag = (uint16_t)tag;
	cmd->result = result;
	cmd->addr = (uintptr_t)(q->bufs + (size_t)tag * q->dev->io_bytes);
	q->ios[tag].state = UB_IO_FETCHING;
	if (q->dev->steps_on && op == UB_IO(UBLK_IO_COMMIT_AND_FETCH_REQ))
		ub_steps_reaped(q, &q->ios[tag].steps);
}

/* Poll every connection's readiness fd that is not polled already. */
static void
arm_polls(struct ub_queue *q)
{
	struct io_uring_sqe *sqe;
	unsigned i;

	for (i = 0; i < q->nconns; i++) {
		if (q->poll_armed[i])
			continue;
		sqe = get_sqe(q);
		io_uring_prep_poll_add(sqe, rb_aio_fd(q->conns[i]), POLLIN);
		sqe->user_data = POLL_BIT | i;
		q->poll_armed[i] = 1;
	}
}

/* Requests submitted and not reaped, over all the queue's connections. */
static unsigned
outstanding(struct ub_queue *q)
{
	unsigned i, n = 0;

	for (i = 0; i < q->nconns; i++)
		n += rb_aio_outstanding(q->conns[i]);
	return n;
}

static void io_done(void *opaque, struct rb_aio *a);

/* Reap the connections whose bit is in mask; arm their CQs unless the
 * thread spins (!arm). */
static void
reap(struct ub_queue *q, unsigned mask, int arm)
{
	unsigned i;

	for (i = 0; i < q->nconns; i++)
		if (mask & (1u << i))
			(arm ? rb_aio_reap : rb_aio_poll)(q->conns[i], io_done, q);
}

int
ub_queue_create(struct ub_queue *q)
{
	struct ub_dev *d = q->dev;
	size_t per_q = (size_t)UBLK_MAX_QUEUE_DEPTH * sizeof(struct ublksrv_io_desc);
	long page = sysconf(_SC_PAGESIZE);
	off_t off;
	int r;

	per_q = (per_q + (size_t)page - 1) / (size_t)page * (size_t)page;
	off = (off_t)(UBLKSRV_CMD_BUF_OFFSET + q->id * per_q);
	q->iods_len = (d->depth * sizeof(struct ublksrv_io_desc) + (size_t)page - 1) /
		(size_t)page * (size_t)page;
	q->iods = mmap(NULL, q->iods_len, PROT_READ, MAP_SHARED | MAP_POPULATE,
		       d->cdev_fd, off);
	if (q->iods == MAP_FAILED) {
		q->iods = NULL;
		ub_log("queue %u: mmap of the I/O descriptors: %s", q->id, strerror(errno));
		return -1;
	}
	q->bufs_len = (size_t)d->depth * d->io_bytes;
	q->bufs = mmap(NULL, q->bufs_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (q->bufs == MAP_FAILED) {
		q->bufs = NULL;
		ub_log("queue %u: %zu bytes of buffers: %s", q->id, q->bufs_len,
		       strerror(errno));
		return -1;
	}
	q->ios = calloc(d->depth, sizeof(*q->ios));
	if (q->ios == NULL) {
		ub_log("queue %u: out of memory", q->id);
		return -1;
	}
	for (q->nconns = 0; q->nconns < d->nr_conns; q->nconns++) {
		struct rb_client **cl = &q->conns[q->nconns];

		if (q->id == 0 && q->nconns == 0 && d->first != NULL) {
			*cl = d->first;
			d->first = NULL;
		} else if (rb_client_open(&d->opts, cl) < 0) {
			*cl = NULL;
			ub_log("queue %u: cannot open connection %u of %u to the target", q->id,
			       q->nconns + 1, d->nr_conns);
			return -1;
		}
		/* The kernel copies each request's data into or out of these
		 * buffers: registered (by each connection, in its own PD), they
		 * are the one copy (the target moves READs over 4 KiB and
		 * non-inline WRITEs from and to them directly; a smaller READ's
		 * data comes in its one-packet reply, copied in once). */
		if (rb_aio_set_region(*cl, q->bufs, q->bufs_len) < 0) {
			q->nconns++;        /* closed by ub_queue_destroy */
			return -1;
		}
	}
	r = io_uring_queue_init(d->depth + 1 + d->nr_conns, &q->ring, IORING_SETUP_SQE128);
	if (r < 0) {
		ub_log("queue %u: io_uring_queue_init: %s", q->id, strerror(-r));
		return -1;
	}
	q->ring_ok = 1;
	return 0;
}

void
ub_queue_destroy(struct ub_queue *q)
{
	unsigned i;

	if (q->ring_ok)
		io_uring_queue_exit(&q->ring);
	q->ring_ok = 0;
	for (i = 0; i < q->nconns; i++) {
		struct rb_stats st;
		char who[32] = "";

		if (q->conns[i] == NULL)
			continue;
		rb_client_stats(q->conns[i], &st);
		if (q->nconns > 1)
			snprintf(who, sizeof(who), " connection %u", i);
		ub_info("queue %u%s: %llu requests, %llu resent, %llu bytes copied by the library, "
			"%llu empty reads of the completion channel, %llu bytes of request pool "
			"registered, %llu bytes read inline (%llu replies with immediate)", q->id,
			who, (unsigned long long)st.requests, (unsigned long long)st.resent,
			(unsigned long long)st.copy_bytes, (unsigned long long)st.empty_event_reads,
			(unsigned long long)st.pool_bytes, (unsigned long long)st.inline_read_bytes,
			(unsigned long long)st.imm_read_replies);
		rb_client_close(q->conns[i]);
		q->conns[i] = NULL;
	}
	if (q->dev->opts.busy_poll == RB_BUSY_POLL_ADAPTIVE && q->spin.samples > 0)
		ub_info("queue %u: busy-poll=adaptive: %llu replies came while it spun, "
			"%llu spins ended in a sleep, %llu yields; mean round trip %llu us", q->id,
			(unsigned long long)q->spins_won, (unsigned long long)q->spins_lost,
			(unsigned long long)q->spin_yields,
			(unsigned long long)(q->spin.mean_ns / 1000));
	if (q->dev->steps_on)
		ub_steps_log(q);
	q->nconns = 0;
	free(q->ios);
	q->ios = NULL;
	if (q->bufs != NULL)
		munmap(q->bufs, q->bufs_len);
	q->bufs = NULL;
	if (q->iods != NULL)
		munmap(q->iods, q->iods_len);
	q->iods = NULL;
}

static int
has(const struct ub_dev *d, uint32_t flag)
{
	return (d->desc.flags & flag) != 0;
}

/* The test hook RDMABLK_TEST_UBLK_NULL=1 (docs/testing.md): every request
 * is answered at once and nothing reaches the target, so that a trace
 * measures what the kernel's ublk path and fio cost alone. */
static int
null_io(void)
{
	static int v = -1;

	if (v < 0) {
		v = rb_test_hook_on("RDMABLK_TEST_UBLK_NULL");
		if (v)
			ub_log("test hook: RDMABLK_TEST_UBLK_NULL=1: every request is answered "
			       "at once; nothing reaches the target, and reads return garbage");
	}
	return v;
}

/* The connection with the fewest requests outstanding, the first on a tie. */
static unsigned
least_busy(struct ub_queue *q)
{
	unsigned i, best = 0, n, least = rb_aio_outstanding(q->conns[0]);

	for (i = 1; i < q->nconns && least > 0; i++) {
		n = rb_aio_outstanding(q->conns[i]);
		if (n < least) {
			least = n;
			best = i;
		}
	}
	return best;
}

/* A request from the kernel: send it, or answer at once. */
static void
start_io(struct ub_queue *q, unsigned tag)
{
	const struct ublksrv_io_desc *iod = &q->iods[tag];
	struct ub_io *io = &q->ios[tag];
	struct rb_aio *a = &io->aio;
	unsigned op = ublksrv_get_op(iod), fl = ublksrv_get_flags(iod);
	int r;

	if (q->dev->steps_on)
		ub_steps_fetched(q, &io->steps);
	if (null_io()) {
		prep_io_cmd(q, UB_IO(UBLK_IO_COMMIT_AND_FETCH_REQ), tag,
			    op == UBLK_IO_OP_FLUSH ? 0 : (int)(iod->nr_sectors << 9));
		return;
	}

	memset(a, 0, sizeof(*a));
	a->user = tag;
	a->off = iod->start_sector << 9;
	a->len = iod->nr_sectors << 9;
	a->buf = q->bufs + (size_t)tag * q->dev->io_bytes;
	switch (op) {
	case UBLK_IO_OP_READ:
		a->op = RB_AIO_READ;
		break;
	case UBLK_IO_OP_WRITE:
		a->op = RB_AIO_WRITE;
		a->flags = fl & UBLK_IO_F_FUA ? RB_IO_FUA : 0;
		break;
	case UBLK_IO_OP_FLUSH:
		/* durability=always without FLUSH: every replied write is
		 * durable already. */
		if (!has(q->dev, RB_EXP_FLUSH)) {
			prep_io_cmd(q, UB_IO(UBLK_IO_COMMIT_AND_FETCH_REQ), tag, 0);
			return;
		}
		a->op = RB_AIO_FLUSH;
		a->off = 0;     /* the descriptor's sector is meaningless here */
		a->len = 0;
		break;
	case UBLK_IO_OP_DISCARD:
		a->op = RB_AIO_TRIM;
		a->flags = fl & UBLK_IO_F_FUA ? RB_IO_FUA : 0;
		break;
	case UBLK_IO_OP_WRITE_ZEROES:
		a->op = RB_AIO_ZERO;
		a->flags = (fl & UBLK_IO_F_FUA ? RB_IO_FUA : 0) |
			(fl & UBLK_IO_F_NOUNMAP ? RB_IO_NO_HOLE : 0);
		break;
	default:
		ub_log("queue %u: unsupported ublk operation %u", q->id, op);
		prep_io_cmd(q, UB_IO(UBLK_IO_COMMIT_AND_FETCH_REQ), tag, -EOPNOTSUPP);
		return;
	}
	io->state = UB_IO_AT_TARGET;
	if (q->dev->opts.busy_poll == RB_BUSY_POLL_ADAPTIVE) {
		io->lone = outstanding(q) == 0;
		io->sent_ns = q->sent_ns = rb_now_ns();
	}
	r = rb_aio_submit(q->conns[least_busy(q)], a);
	if (r < 0)
		prep_io_cmd(q, UB_IO(UBLK_IO_COMMIT_AND_FETCH_REQ), tag, r);
	else if (q->dev->steps_on)
		ub_steps_sent(q, &io->steps);
}

/* busy-poll=adaptive: poll instead of sleeping?  Within the spin's
 * budget from the newest request's send (common/spin.h). */
static int
spin_now(const struct ub_queue *q, unsigned n)
{
	return q->dev->opts.busy_poll == RB_BUSY_POLL_ADAPTIVE &&
	       rb_now_ns() - q->sent_ns < rb_spin_budget_ns(&q->spin, n, UB_SPIN_ROUND_TRIPS);
}

/* A reaped request: its result goes back with the next fetch. */
static void
io_done(void *opaque, struct rb_aio *a)
{
	struct ub_queue *q = opaque;
	int res = a->result < 0 ? a->result : (int)a->len;

	/* A failed request's time (a timeout, a resend after a reconnect)
	 * is no round trip. */
	if (q->dev->opts.busy_poll == RB_BUSY_POLL_ADAPTIVE && q->ios[a->user].lone &&
	    a->result >= 0)
		rb_spin_sample(&q->spin, rb_now_ns() - q->ios[a->user].sent_ns);

	prep_io_cmd(q, UB_IO(UBLK_IO_COMMIT_AND_FETCH_REQ), (unsigned)a->user, res);
}

/* One CQE: a connection's readiness (its bit goes into *fired), or a
 * tag's fetch. */
static void
handle_cqe(struct ub_queue *q, const struct io_uring_cqe *cqe, unsigned *fired)
{
	unsigned tag;

	if (cqe->user_data & POLL_BIT) {
		unsigned i = (unsigned)(cqe->user_data & ~POLL_BIT);

		q->poll_armed[i] = 0;
		*fired |= 1u << i;
		return;
	}
	tag = (unsigned)cqe->user_data;
	if (cqe->res == UBLK_IO_RES_OK) {
		start_io(q, tag);
		return;
	}
	/* ABORT: the device is stopping; no more requests for this tag. */
	if (cqe->res != UBLK_IO_RES_ABORT)
		ub_log("queue %u tag %u: fetch failed: %s", q->id, tag,
		       strerror(-cqe->res));
	q->ios[tag].state = UB_IO_DONE;
	q->aborted++;
}

void *
ub_queue_run(void *arg)
{
	struct ub_queue *q = arg;
	struct __kernel_timespec tick = { .tv_sec = 0, .tv_nsec = TICK_NS - 1 };
	struct io_uring_cqe *cqe;
	unsigned tag, head, seen, fired, n, all = (1u << q->nconns) - 1;
	int r, spinning, busy = q->dev->opts.busy_poll == RB_BUSY_POLL_YES;
	uint64_t now, all_reaped_ns = rb_now_ns();

	if (q->have_cpus && (r = pthread_setaffinity_np(pthread_self(), sizeof(q->cpus),
							&q->cpus)) != 0)
		ub_log("queue %u: pthread_setaffinity_np: %s: its thread is not pinned", q->id,
		       strerror(r));
	for (tag = 0; tag < q->dev->depth; tag++)
		prep_io_cmd(q, UB_IO(UBLK_IO_FETCH_REQ), tag, 0);
	arm_polls(q);
	r = io_uring_submit(&q->ring);
	ub_queue_ready(q, r >= 0);
	if (r < 0) {
		ub_log("queue %u: submitting the fetches: %s", q->id, strerror(-r));
		goto out;
	}
	reap(q, all, 1);   /* arms the completion channels */
	while (q->aborted < q->dev->depth || outstanding(q) > 0) {
		n = outstanding(q);
		spinning = 0;
		if (busy && n > 0) {
			/* busy-poll=yes: no sleep while a reply is due.  Hand
			 * the kernel what is queued (a syscall only then), take
			 * what the ring holds, and poll the CQs (user space). */
			steps_handing(q);
			r = io_uring_submit(&q->ring);
			fired = all;
		} else if (spin_now(q, n)) {
			/* busy-poll=adaptive, within the spin: the same, and
			 * the CQs are not re-armed as they are reaped. */
			steps_handing(q);
			r = io_uring_submit(&q->ring);
			fired = all;
			spinning = 1;
		} else {
			if (q->unarmed && n > 0) {
				/* A reply is due and a spin left the CQs unarmed:
				 * arm (poll, arm, poll again) before sleeping.  A
				 * spin that ran out with its one request still out
				 * was lost. */
				if (q->spun_last && n == 1)
					q->spins_lost++;
				q->unarmed = 0;
				reap(q, all, 1);
			}
			steps_handing(q);   /* after the arming's reap */
			r = io_uring_submit_and_wait_timeout(&q->ring, &cqe, 1, &tick, NULL);
			fired = r == -ETIME ? all : 0;   /* at least once a second: timeouts */
		}
		if (r < 0 && r != -ETIME && r != -EINTR) {
			ub_log("queue %u: io_uring: %s", q->id, strerror(-r));
			break;
		}
		seen = 0;
		io_uring_for_each_cqe(&q->ring, head, cqe) {
			handle_cqe(q, cqe, &fired);
			seen++;
		}
		io_uring_cq_advance(&q->ring, seen);
		/* Every connection at least once a second, fired or not: a
		 * quiet one beside a busy one still has its timeouts enforced
		 * and its failed requests handed back. */
		now = rb_now_ns();
		if (now - all_reaped_ns >= (uint64_t)TICK_NS)
			fired = all;
		if (fired == all)
			all_reaped_ns = now;
		q->spun_last = spinning;
		if (spinning) {
			n = outstanding(q);
			reap(q, fired, 0);
			q->unarmed = 1;
			if (outstanding(q) < n) {
				q->spins_won++;
			} else if (seen == 0 && rb_spin_idle_pass(&q->yielded_ns, now)) {
				q->spin_yields++;     /* nothing came: common/spin.h */
			}
		} else {
			reap(q, fired, 1);
			if (fired == all)
				q->unarmed = 0;
		}
		if (q->aborted < q->dev->depth || outstanding(q) > 0)
			arm_polls(q);
	}
	/* Results reaped after the aborts go nowhere: the kernel has failed
	 * those requests itself. */
	steps_handing(q);
	io_uring_submit(&q->ring);
out:
	__atomic_add_fetch(&q->dev->queues_done, 1, __ATOMIC_RELEASE);
	/* Blocked in every thread, so it stays pending until the main thread
	 * waits for it: an end that comes first is not lost. */
	pthread_kill(q->dev->main_tid, UB_SIG_QUEUE_DONE);
	return NULL;
}
