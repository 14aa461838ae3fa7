/* Asynchronous requests: submit now, reap later, from one thread.
 *
 * A request waits on `pending` until a credit is free (and a live
 * connection exists), is then posted exactly as a sync request is (the
 * slot's aio points back to it, request.c), and its slot is queued on
 * conn->aio_done by whoever reaps its reply (cq.c).  rb_aio_reap polls the
 * CQs itself, collects that queue, resends what a dead connection never
 * answered, and fails what passed its deadline.  The readiness fd is an
 * epoll set over the watched connection's completion channel and wake_fd
 * (written when someone else completed a slot or the connection died). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "cqarm.h"
#include "deadline.h"
#include "internal.h"
#include "util.h"

/* The library's words in struct rb_aio (private_): its link on one of the
 * context's queues, then its deadline.  Copied in and out, never cast. */
_Static_assert(sizeof(((struct rb_aio *)0)->private_) >= sizeof(struct rb_aio *) +
	       sizeof(uint64_t), "struct rb_aio's private words hold a link and a deadline");

static struct rb_aio *
next_of(const struct rb_aio *a)
{
	struct rb_aio *n;

	memcpy(&n, &a->private_[0], sizeof(n));
	return n;
}

static void
set_next(struct rb_aio *a, struct rb_aio *n)
{
	memcpy(&a->private_[0], &n, sizeof(n));
}

static uint64_t
deadline_of(const struct rb_aio *a)
{
	return a->private_[1];
}

static void
set_deadline(struct rb_aio *a, uint64_t deadline_ns)
{
	a->private_[1] = deadline_ns;
}

/* A FIFO of requests, linked through their private words. */
struct aio_list {
	struct rb_aio *head, *tail;
};
#define AIO_LIST_INIT { NULL, NULL }

static void
push_tail(struct aio_list *q, struct rb_aio *a)
{
	set_next(a, NULL);
	if (q->tail != NULL)
		set_next(q->tail, a);
	else
		q->head = a;
	q->tail = a;
}

static void
push_head(struct aio_list *q, struct rb_aio *a)
{
	set_next(a, q->head);
	q->head = a;
	if (q->tail == NULL)
		q->tail = a;
}

static struct rb_aio *
pop(struct aio_list *q)
{
	struct rb_aio *a = q->head;

	if (a != NULL) {
		q->head = next_of(a);
		if (q->head == NULL)
			q->tail = NULL;
	}
	return a;
}

/* Append all of r to q; r is empty after. */
static void
concat(struct aio_list *q, struct aio_list *r)
{
	if (r->head == NULL)
		return;
	if (q->tail != NULL)
		set_next(q->tail, r->head);
	else
		q->head = r->head;
	q->tail = r->tail;
	r->head = r->tail = NULL;
}

/* How late a request that passed its deadline (the timeout, seconds) may
 * be noticed on a live connection. */
#define DEADLINE_SCAN_NS (100 * 1000 * 1000ull)

struct rb_aio_ctx {
	int             epfd;
	struct rb_conn *watched;    /* referenced; every posted request is on it */
	struct aio_list pending;    /* not posted yet (credit, connection) */
	struct aio_list done;       /* finished, not yet handed to the caller */
	unsigned        outstanding;
	uint64_t        deadline_scan_ns;  /* reclaim_locked: the next scan of the deadlines */
	char           *region;     /* rb_aio_set_region: direct requests */
	size_t          region_len;
	int             static_said;  /* logged that mr=static copies */
};

static struct rb_aio_ctx *
ctx_get(struct rb_client *c)
{
	struct rb_aio_ctx **px = rb_client_aio(c), *x = *px;

	if (x != NULL)
		return x;
	x = calloc(1, sizeof(*x));
	if (x == NULL) {
		rb_log(RB_LOG_ERROR, "aio: out of memory");
		return NULL;
	}
	x->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (x->epfd < 0) {
		rb_log(RB_LOG_ERROR, "aio: epoll_create1: %s", strerror(errno));
		free(x);
		return NULL;
	}
	*px = x;
	return x;
}

static void
unwatch(struct rb_aio_ctx *x)
{
	if (x->watched == NULL)
		return;
	epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->watched->comp_ch->fd, NULL);
	epoll_ctl(x->epfd, EPOLL_CTL_DEL, x->watched->wake_fd, NULL);
	rb_conn_unref(x->watched);
	x->watched = NULL;
}

/* Takes over the caller's reference. */
static void
watch(struct rb_aio_ctx *x, struct rb_conn *conn)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (conn == x->watched) {
		rb_conn_unref(conn);
		return;
	}
	unwatch(x);
	x->watched = conn;
	if (epoll_ctl(x->epfd, EPOLL_CTL_ADD, conn->comp_ch->fd, &ev) < 0 ||
	    epoll_ctl(x->epfd, EPOLL_CTL_ADD, conn->wake_fd, &ev) < 0)
		rb_log(RB_LOG_ERROR, "aio: epoll_ctl: %s", strerror(errno));
}

void
rb_aio_ctx_destroy(struct rb_aio_ctx *x)
{
	if (x == NULL)
		return;
	unwatch(x);
	close(x->epfd);
	free(x);
}

static void
finished(struct rb_aio_ctx *x, struct rb_aio *a, int result)
{
	a->result = result;
	push_tail(&x->done, a);
}

static void
to_io(const struct rb_aio *a, struct rb_io *io)
{
	static const uint8_t opcode[] = {
		[RB_AIO_READ] = RB_OP_READ, [RB_AIO_WRITE] = RB_OP_WRITE,
		[RB_AIO_FLUSH] = RB_OP_FLUSH, [RB_AIO_TRIM] = RB_OP_TRIM,
		[RB_AIO_ZERO] = RB_OP_WRITE_ZEROES,
	};

	memset(io, 0, sizeof(*io));
	io->opcode = opcode[a->op];
	io->offset = a->off;
	io->length = a->op == RB_AIO_FLUSH ? 0 : a->len;
	if (a->op != RB_AIO_FLUSH && a->op != RB_AIO_READ && (a->flags & RB_IO_FUA))
		io->flags |= RB_REQ_FUA;
	if (a->op == RB_AIO_ZERO && (a->flags & RB_IO_NO_HOLE))
		io->flags |= RB_REQ_NO_HOLE;
	io->rbuf = a->buf;
	io->copy_len = a->len;
	io->wbuf = a->buf;
	io->deadline_ns = deadline_of(a);
}

/* FUA and FLUSH promise stable storage: believe only the target's bit. */
static int
wants_durable(const struct rb_aio *a)
{
	return a->op == RB_AIO_FLUSH ||
	       (a->op != RB_AIO_READ && (a->flags & RB_IO_FUA));
}

/* Fail every queued request whose deadline passed.  With all set and
 * none expired (an error another attempt cannot fix), fail them all with
 * err. */
static void
fail_pending(struct rb_aio_ctx *x, int all, int err)
{
	struct aio_list keep = AIO_LIST_INIT;
	struct rb_aio *a;
	uint64_t now = rb_now_ns();
	unsigned failed = 0;
	struct rb_io io;

	while ((a = pop(&x->pending)) != NULL) {
		if (deadline_of(a) <= now) {
			to_io(a, &io);
			rb_log(RB_LOG_ERROR, "%s %u@%llu: connection lost and not "
			       "restored within the timeout", rb_opcode_name(io.opcode),
			       io.length, (unsigned long long)io.offset);
			finished(x, a, -EIO);
			failed++;
		} else {
			push_tail(&keep, a);
		}
	}
	concat(&x->pending, &keep);
	if (all && failed == 0)
		while ((a = pop(&x->pending)) != NULL)
			finished(x, a, err);
}

static void collect(struct rb_client *c, struct rb_aio_ctx *x, struct rb_conn *conn, int arm);

/* A live watched connection, reconnecting if needed.  NULL when the
 * oldest request's deadline passed (those requests are failed). */
static struct rb_conn *
live_conn(struct rb_client *c, struct rb_aio_ctx *x)
{
	struct rb_conn *conn;
	int err = -EIO;

	while (x->pending.head != NULL) {
		if (x->watched != NULL) {
			if (!__atomic_load_n(&x->watched->dead, __ATOMIC_ACQUIRE))
				return x->watched;
			/* Its unanswered requests back on the queue first; then
			 * drop our reference, so that the client's teardown
			 * thread, not this one, destroys it (conn.c). */
			collect(c, x, x->watched, 1);
			unwatch(x);
		}
		conn = rb_client_get_conn(c, deadline_of(x->pending.head), &err);
		if (conn != NULL) {
			watch(x, conn);
			/* Armed before the first post: its reply raises the fd
			 * (busy-poll: the caller polls instead). */
			if (conn->cfg.busy_poll != RB_BUSY_POLL_YES && rb_conn_arm(x->watched) < 0) {
				pthread_mutex_lock(&x->watched->lock);
				rb_conn_mark_dead_locked(x->watched, "ibv_req_notify_cq failed");
				pthread_mutex_unlock(&x->watched->lock);
			}
			continue;
		}
		fail_pending(x, 1, err);
	}
	return NULL;
}

/* 1 when a's data may move straight between the target and the caller's
 * registered region (direct.c): a READ or a WRITE entirely inside the
 * region (an inline WRITE's SEND gathers it: request.c).  0 means the copy
 * through the pool, or into the send buffer. */
static int
direct_ok(struct rb_aio_ctx *x, struct rb_conn *conn, const struct rb_aio *a)
{
	uintptr_t p = (uintptr_t)a->buf, base = (uintptr_t)x->region;
	int r;

	if (x->region_len == 0 || p < base || p - base > x->region_len ||
	    a->len > x->region_len - (p - base))
		return 0;
	if (a->op != RB_AIO_READ && a->op != RB_AIO_WRITE)
		return 0;
	if (!conn->use_mw) {
		/* A static MR over the region would let the target reach every
		 * buffer in it, all the time: copy through the pool instead,
		 * whose exposure is bounded (docs/security.md). */
		if (!x->static_said)
			rb_log(RB_LOG_INFO, "mr=static: no direct I/O into the caller's buffers; "
			       "requests are copied through the pool");
		x->static_said = 1;
		return 0;
	}
	r = rb_conn_direct_register(conn, x->region, x->region_len);
	if (r == -EAGAIN)
		return 0;   /* fenced: the connection is dead, nothing is posted on it */
	if (r < 0) {
		rb_log(RB_LOG_ERROR, "aio: copying through the pool from now on");
		x->region_len = 0;
		return 0;
	}
	return 1;
}

/* Post queued requests while credits are free. */
static void
pump(struct rb_client *c, struct rb_aio_ctx *x)
{
	struct rb_conn *conn;
	struct rb_slot *s;
	struct rb_aio *a;
	struct rb_io io;

	while ((conn = live_conn(c, x)) != NULL) {
		a = x->pending.head;
		to_io(a, &io);
		io.direct = direct_ok(x, conn, a);
		if (rb_io_uses_pool(conn, &io) && rb_slots_pool_ready(conn) < 0) {
			finished(x, pop(&x->pending), -ENOMEM);
			continue;
		}
		pthread_mutex_lock(&conn->lock);
		s = conn->dead ? NULL : rb_slot_get_locked(conn, 0);
		if (s == NULL) {
			int dead = conn->dead;

			pthread_mutex_unlock(&conn->lock);
			if (dead)
				continue;
			return;     /* a completion frees a credit */
		}
		rb_conn_claim_locked(conn, s, &io);
		s->aio = a;
		pthread_mutex_unlock(&conn->lock);
		pop(&x->pending);
		if (rb_conn_post(conn, s, &io) < 0)
			push_head(&x->pending, a);  /* not posted; the connection is dead now */
	}
}

int
rb_aio_submit(struct rb_client *c, struct rb_aio *a)
{
	const struct rb_export_desc *d = rb_client_export(c);
	struct rb_aio_ctx *x = ctx_get(c);
	const char *what = a->op == RB_AIO_WRITE ? "write" : a->op == RB_AIO_TRIM ?
		"trim" : a->op == RB_AIO_ZERO ? "write zeroes" : "read";
	int r;

	if (x == NULL)
		return -ENOMEM;
	if (a->op > RB_AIO_ZERO) {
		rb_log(RB_LOG_ERROR, "aio: unknown operation %u", a->op);
		return -EINVAL;
	}
	if (a->op != RB_AIO_FLUSH) {
		if (a->len == 0 || a->len > d->max_io) {
			rb_log(RB_LOG_ERROR, "%s %u@%llu: length not in 1..max-io (%u)",
			       what, a->len, (unsigned long long)a->off, d->max_io);
			return -EINVAL;
		}
		r = rb_io_check_aligned(d, what, a->len, a->off);
		if (r < 0)
			return r;
		if (a->op != RB_AIO_READ && (r = rb_io_check_writable(d, what)) < 0)
			return r;
	}
	a->result = 0;
	set_deadline(a, rb_deadline_after(rb_client_timeout_ns(c)));
	push_tail(&x->pending, a);
	x->outstanding++;
	pump(c, x);
	return 0;
}

/* Take the channel's events and the wake_fd count (the fds stay readable
 * until then), reading neither when it cannot have fired: the epoll fd
 * does not say which one did, and each empty read is a syscall. */
static void
consume_events(struct rb_conn *conn)
{
	/* busy-poll never arms the CQs: only an event of the handshake's
	 * arming is read, once (until then each reap reads the channel). */
	rb_conn_take_events(conn);
	rb_conn_wake_take(conn);
}

/* Under conn->lock: the requests of a dead connection's ORPHANED slots go
 * back to the queue (the slots are never reused, conn.c), and a request
 * past its deadline kills a live one first.  The deadlines are looked at
 * every DEADLINE_SCAN_NS at most: a scan reads every slot, and a reap
 * comes with every completion (a spin's with every pass). */
static void
reclaim_locked(struct rb_conn *conn, struct rb_aio_ctx *x, struct rb_client *c)
{
	uint64_t now = rb_now_ns();
	struct rb_io io;
	unsigned i;

	if (now >= x->deadline_scan_ns)
		x->deadline_scan_ns = now + DEADLINE_SCAN_NS;
	else if (!conn->dead)
		return;
	for (i = 0; i < conn->nslots && !conn->dead; i++) {
		struct rb_slot *s = &conn->slots[i];

		if (s->aio != NULL && rb_slot_awaiting(s) &&
		    deadline_of(s->aio) <= now) {
			to_io(s->aio, &io);
			rb_log(RB_LOG_ERROR, "%s %u@%llu: no reply from %s:%u within "
			       "the timeout", rb_opcode_name(io.opcode), io.length,
			       (unsigned long long)io.offset, conn->cfg.host,
			       conn->cfg.port);
			rb_conn_mark_dead_locked(conn, "request timed out");
		}
	}
	if (!conn->dead)
		return;
	/* The caller may reuse the memory of what goes back to the queue (or
	 * fails) at once: cut this connection off from it first. */
	rb_conn_direct_fence_locked(conn);
	for (i = 0; i < conn->nslots; i++) {
		struct rb_slot *s = &conn->slots[i];

		if (s->aio != NULL && rb_slot_orphaned(s)) {
			push_head(&x->pending, s->aio);
			s->aio = NULL;
			rb_client_count_resent(c);
		}
	}
}

static int
collect_poll(void *opaque)
{
	return rb_cq_poll_empty(opaque, NULL, NULL);
}

static int
collect_arm(void *opaque)
{
	return rb_conn_arm(opaque);
}

/* Poll the CQs empty, arm, poll again until a round after arming finds
 * nothing (common/cqarm.h: nothing that came before arming is missed),
 * then collect the DONE slots and finish them.  A dead connection is
 * polled once more, not armed; so is a live one when !arm (the caller
 * spins, rb_aio_poll). */
static void
collect(struct rb_client *c, struct rb_aio_ctx *x, struct rb_conn *conn, int arm)
{
	struct rb_aio *a;
	struct rb_slot *s;
	struct rb_slot_queue done = STAILQ_HEAD_INITIALIZER(done);
	struct rb_io io;
	int r;

	/* A caller that spins reads the channel only after a pass that
	 * found completions (below): an armed CQ's event comes with its
	 * completion, and until then each read of it is an empty syscall. */
	if (arm)
		consume_events(conn);
	else
		rb_conn_wake_take(conn);
	pthread_mutex_lock(&conn->lock);
	conn->aio_reaping = 1;
	pthread_mutex_unlock(&conn->lock);
	for (;;) {
		if (__atomic_load_n(&conn->dead, __ATOMIC_ACQUIRE) ||
		    conn->cfg.busy_poll == RB_BUSY_POLL_YES || !arm) {
			/* Dead: once more, not armed.  busy-poll, or a caller
			 * that spins: it polls again soon, and does not sleep
			 * on the channel before it reaps with arming.  An
			 * event left unread keeps the readiness fd readable,
			 * so the next reap with arming takes it. */
			if (rb_cq_poll_empty(conn, NULL, NULL) > 0 && !arm)
				rb_conn_take_events(conn);
			break;
		}
		r = rb_cq_poll_arm_poll(collect_poll, collect_arm, conn);
		if (r == RB_CQ_ARM_FAILED) {
			pthread_mutex_lock(&conn->lock);
			rb_conn_mark_dead_locked(conn, "ibv_req_notify_cq failed");
			pthread_mutex_unlock(&conn->lock);
		} else if (r <= 0) {
			break;
		}
	}
	pthread_mutex_lock(&conn->lock);
	conn->aio_reaping = 0;
	STAILQ_CONCAT(&done, &conn->aio_done);
	reclaim_locked(conn, x, c);
	pthread_mutex_unlock(&conn->lock);

	/* Off the list before it is finished: a released slot may be taken
	 * (and its link reused) at once. */
	while ((s = STAILQ_FIRST(&done)) != NULL) {
		STAILQ_REMOVE_HEAD(&done, aio_link);
		a = s->aio;
		to_io(a, &io);
		r = rb_conn_finish(conn, s, &io);
		if (r == -EAGAIN) {
			/* Not done there: again (request.c), unless its
			 * deadline passed (fail_pending). */
			push_tail(&x->pending, a);
			rb_client_count_resent(c);
			continue;
		}
		if (r == 0 && wants_durable(a))
			r = rb_io_check_durable(&io);
		finished(x, a, r);
	}
}

static int
reap(struct rb_client *c, rb_aio_done_fn *cb, void *opaque, int arm)
{
	struct rb_aio_ctx *x = ctx_get(c);
	struct rb_aio *a;
	int n = 0;

	if (x == NULL)
		return -ENOMEM;
	if (x->watched != NULL)
		collect(c, x, x->watched, arm);
	pump(c, x);
	fail_pending(x, 0, 0);
	while ((a = pop(&x->done)) != NULL) {
		x->outstanding--;
		n++;
		cb(opaque, a);
	}
	return n;
}

int
rb_aio_reap(struct rb_client *c, rb_aio_done_fn *cb, void *opaque)
{
	return reap(c, cb, opaque, 1);
}

int
rb_aio_poll(struct rb_client *c, rb_aio_done_fn *cb, void *opaque)
{
	return reap(c, cb, opaque, 0);
}

int
rb_aio_set_region(struct rb_client *c, void *base, size_t len)
{
	struct rb_aio_ctx *x = ctx_get(c);

	if (x == NULL)
		return -ENOMEM;
	if (x->outstanding > 0 || base == NULL || len == 0) {
		rb_log(RB_LOG_ERROR, "aio: a direct region is set once, non-empty, "
		       "before the first request");
		return -EINVAL;
	}
	x->region = base;
	x->region_len = len;
	return 0;
}

int
rb_aio_fd(struct rb_client *c)
{
	struct rb_aio_ctx *x = ctx_get(c);

	return x == NULL ? -1 : x->epfd;
}

unsigned
rb_aio_outstanding(struct rb_client *c)
{
	struct rb_aio_ctx *x = *rb_client_aio(c);

	return x == NULL ? 0 : x->outstanding;
}
