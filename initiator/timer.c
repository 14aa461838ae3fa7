/* The housekeeping thread, off the data path: keepalive NOPs, CM events
 * (DISCONNECTED, DEVICE_REMOVAL), disconnecting a dead QP, and reaping the
 * CQs when nobody leads (a late SEND completion) or a NOP is out (its
 * reply).  It never polls the completion channel, so the data path never
 * wakes it.  Nor does a clock: it sleeps until the keepalive is next due,
 * or until an event comes (CM, the device's, or a kick on kick_fd: stop,
 * a connection marked dead, the group's move).  A busy connection's thread
 * wakes about once per keepalive interval, and so does an idle one's,
 * which sends a NOP each time (docs/performance.md, "The housekeeping
 * threads sleep until something is due"). */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"
#include "util.h"

/* The later of two times. */
static uint64_t
later(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* When an unanswered NOP makes the connection dead: twice the keepalive
 * after the NOP, and three times after the target was last heard. */
static uint64_t
nop_deadline_locked(const struct rb_conn *conn)
{
	uint64_t ka = conn->cfg.keepalive_ns;

	return later(conn->nop_sent_ns + 2 * ka, conn->last_rx_ns + 3 * ka) + 1;
}

/* Keepalive: after `keepalive` without hearing from the target, send a NOP
 * (and while idle, one every keepalive); no reply within twice that more
 * and the connection is dead.  A dead target is therefore noticed within
 * about 3 x keepalive.  Returns when it is next due (rb_now_ns),
 * UINT64_MAX for never. */
static uint64_t
keepalive_tick_locked(struct rb_conn *conn, uint64_t now)
{
	uint64_t ka = conn->cfg.keepalive_ns, due;
	struct rb_req_info ri;
	struct rb_slot *s;
	int r;

	if (ka == 0 || conn->dead)
		return UINT64_MAX;
	if (conn->nop_inflight) {
		/* Look again one keepalive after the NOP: its reply reaped by
		 * then (housekeeping() reaps first), the next NOP goes out, so
		 * an idle connection sends one every keepalive. */
		due = nop_deadline_locked(conn);
		if (now < due)
			return now < conn->nop_sent_ns + ka ? conn->nop_sent_ns + ka : due;
		rb_log(RB_LOG_ERROR, "%s:%u: no reply to keepalive within %llu ms",
		       conn->cfg.host, conn->cfg.port, (unsigned long long)(2 * ka / 1000000));
		rb_conn_mark_dead_locked(conn, "keepalive timeout");
		return UINT64_MAX;
	}
	due = later(conn->last_rx_ns, conn->nop_sent_ns) + ka;
	if (now < due)
		return due;
	s = rb_slot_get_locked(conn, 1);
	if (s == NULL)
		return now + ka / 4;    /* every slot busy: look again soon */
	s->opcode = RB_OP_NOP;
	memset(&ri, 0, sizeof(ri));
	ri.opcode = RB_OP_NOP;
	ri.tag = rb_tag(s->ctx.index, s->gen);
	r = rb_post_request(conn, s, &ri);
	if (r < 0) {
		rb_slot_event_locked(conn, s, RB_SLOT_EV_POST_FAILED);
		rb_log(RB_LOG_ERROR, "keepalive: ibv_post_send: %s", strerror(-r));
		rb_conn_mark_dead_locked(conn, "cannot post");
		return UINT64_MAX;
	}
	conn->nop_inflight = 1;
	conn->nop_sent_ns = now;
	__atomic_add_fetch(&conn->cfg.stats->keepalives, 1, __ATOMIC_RELAXED);
	return now + ka;    /* its reply, and the next NOP (above) */
}

/* The device's asynchronous events: a QP or CQ that the device put in
 * error says so only here, not in a work completion, so a connection whose
 * QP went fatal would otherwise look like a plain flush.  The fd belongs to
 * the device context, which every connection on that device shares: each
 * event is logged by whichever housekeeping thread reads it, with its QP
 * number, and marks the connection dead when the QP or CQ is this one's. */
static void
async_events(struct rb_conn *conn)
{
	struct ibv_context *verbs = conn->id->verbs;
	struct ibv_async_event ev;
	const char *what;
	int ours, dead;

	while (ibv_get_async_event(verbs, &ev) == 0) {
		what = ibv_event_type_str(ev.event_type);
		dead = 0;
		switch (ev.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_PATH_MIG:
		case IBV_EVENT_PATH_MIG_ERR:
		case IBV_EVENT_QP_LAST_WQE_REACHED:
			ours = ev.element.qp == conn->id->qp;
			rb_log(ours && ev.event_type != IBV_EVENT_COMM_EST ? RB_LOG_ERROR :
			       RB_LOG_DEBUG, "%s:%u: async event %s on QP %u%s",
			       conn->cfg.host, conn->cfg.port, what, ev.element.qp->qp_num,
			       ours ? "" : " (another connection's)");
			dead = ours && (ev.event_type == IBV_EVENT_QP_FATAL ||
					ev.event_type == IBV_EVENT_QP_REQ_ERR ||
					ev.event_type == IBV_EVENT_QP_ACCESS_ERR);
			break;
		case IBV_EVENT_CQ_ERR:
			ours = ev.element.cq == conn->send_cq || ev.element.cq == conn->recv_cq;
			rb_log(ours ? RB_LOG_ERROR : RB_LOG_WARN, "%s:%u: async event %s%s",
			       conn->cfg.host, conn->cfg.port, what,
			       ours ? "" : " (another connection's CQ)");
			dead = ours;
			break;
		default:
			rb_log(RB_LOG_WARN, "%s:%u: device async event %s", conn->cfg.host,
			       conn->cfg.port, what);
			break;
		}
		if (dead) {
			pthread_mutex_lock(&conn->lock);
			rb_conn_mark_dead_locked(conn, what);
			pthread_mutex_unlock(&conn->lock);
		}
		ibv_ack_async_event(&ev);
	}
}

/* Reap the CQs if nobody leads (a late SEND completion), and always while
 * a keepalive NOP is out: its reply must be seen before the NOP is judged.
 * A leader reaps everything itself; racing one is harmless (it is woken
 * through wake_fd if we complete its slot). */
static void
reap_if_needed(struct rb_conn *conn)
{
	int reap;

	pthread_mutex_lock(&conn->lock);
	reap = conn->leader < 0 || conn->nop_inflight;
	pthread_mutex_unlock(&conn->lock);
	if (reap)
		rb_cq_poll_empty(conn, NULL, NULL);
}

/* One round: CM events, the CQs (first: a NOP's reply may be there),
 * keepalive, disconnecting a dead QP so its outstanding work
 * requests flush.  Returns when the next round is due. */
static uint64_t
housekeeping(struct rb_conn *conn)
{
	int disconnect = 0;
	uint64_t due;

	rb_cm_poll_events(conn);
	async_events(conn);
	reap_if_needed(conn);
	pthread_mutex_lock(&conn->lock);
	due = keepalive_tick_locked(conn, rb_now_ns());
	/* The device's other connections went to another target (group.c):
	 * follow them, so that none keeps the old target's export busy. */
	if (!conn->dead &&
	    rb_group_left(conn->cfg.group, conn->cfg.target_idx, conn->cfg.group_gen))
		rb_conn_mark_dead_locked(conn, "the device's other connections moved to "
					 "another target of its list");
	if (conn->dead && !conn->disconnect_sent) {
		conn->disconnect_sent = 1;
		disconnect = 1;
	}
	pthread_mutex_unlock(&conn->lock);
	if (disconnect)
		rdma_disconnect(conn->id);
	return due;
}

/* Milliseconds from now to due, rounded up (a round that comes early
 * finds nothing due and sleeps again), at most HOUSEKEEPING_MAX_MS: a
 * bound on what a lost kick could cost. */
#define HOUSEKEEPING_MAX_MS 10000

static int
sleep_ms(uint64_t due)
{
	uint64_t now = rb_now_ns(), ms;

	if (due == UINT64_MAX)
		return HOUSEKEEPING_MAX_MS;
	if (due <= now)
		return 0;
	ms = (due - now + 999999) / 1000000;
	return ms > HOUSEKEEPING_MAX_MS ? HOUSEKEEPING_MAX_MS : (int)ms;
}

static void *
timer_thread(void *arg)
{
	struct rb_conn *conn = arg;
	struct pollfd pfd[3] = {
		{ .fd = conn->cm_ch->fd, .events = POLLIN },
		{ .fd = conn->kick_fd, .events = POLLIN },
		{ .fd = conn->id->verbs->async_fd, .events = POLLIN },
	};
	uint64_t n;

	while (!__atomic_load_n(&conn->stop, __ATOMIC_ACQUIRE)) {
		if (poll(pfd, 3, sleep_ms(housekeeping(conn))) < 0 && errno != EINTR)
			break;
		if ((pfd[1].revents & POLLIN) && read(conn->kick_fd, &n, sizeof(n)) < 0 &&
		    errno != EAGAIN)
			rb_log(RB_LOG_DEBUG, "kick_fd: %s", strerror(errno));
	}
	return NULL;
}

/* Wake the housekeeping thread for something to do now. */
void
rb_timer_kick(struct rb_conn *conn)
{
	uint64_t one = 1;

	if (conn->kick_fd >= 0 && write(conn->kick_fd, &one, sizeof(one)) < 0)
		rb_log(RB_LOG_DEBUG, "kick the housekeeping thread: %s", strerror(errno));
}

int
rb_timer_start(struct rb_conn *conn, char *errbuf)
{
	int r;

	/* Shared by every connection on the device: non-blocking once, so a
	 * thread that lost the race for an event does not sleep in it. */
	r = rb_fd_set_nonblock(conn->id->verbs->async_fd);
	if (r < 0) {
		rb_seterr(errbuf, "async event fd: fcntl: %s", strerror(-r));
		return r;
	}
	conn->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (conn->kick_fd < 0) {
		rb_seterr(errbuf, "eventfd: %s", strerror(errno));
		return -errno;
	}
	/* Before the thread's first round, which sees any move before it. */
	rb_group_watch(conn->cfg.group, &conn->group_watch, conn->kick_fd);
	r = pthread_create(&conn->timer_thread, NULL, timer_thread, conn);
	if (r != 0) {
		rb_group_unwatch(conn->cfg.group, &conn->group_watch);
		rb_seterr(errbuf, "pthread_create: %s", strerror(r));
		return -r;
	}
	/* For ps -L, top -H and the tests that count its wake-ups. */
	r = pthread_setname_np(conn->timer_thread, "rb-housekeep");
	if (r != 0)
		rb_log(RB_LOG_DEBUG, "pthread_setname_np: %s", strerror(r));
	conn->timer_started = 1;
	return 0;
}

void
rb_timer_stop(struct rb_conn *conn)
{
	if (conn->timer_started) {
		__atomic_store_n(&conn->stop, 1, __ATOMIC_RELEASE);
		rb_timer_kick(conn);
		pthread_join(conn->timer_thread, NULL);
		rb_group_unwatch(conn->cfg.group, &conn->group_watch);
		conn->timer_started = 0;
	}
	if (conn->kick_fd >= 0)
		close(conn->kick_fd);
	conn->kick_fd = -1;
}
