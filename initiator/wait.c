/* Leader/follower: the threads waiting for replies reap the CQs themselves.
 *
 * At most one waiting thread, the leader (conn->leader = its slot), owns the
 * CQs: it polls them empty, re-arms the receive CQ, polls again (so nothing that
 * arrived before arming is missed), and sleeps in poll() on the completion
 * channel.  It completes every slot it reaps, waking their owners.  When its
 * own slot is DONE it passes the lead to one sleeping follower and returns.
 * Followers sleep on their slot's condvar until their slot is DONE or they
 * are made leader.  At queue depth 1 the caller sleeps only in poll() and is
 * woken once, by the kernel; with busy-poll=adaptive it first polls for
 * about two mean round trips, and most often does not sleep at all. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cqarm.h"
#include "deadline.h"
#include "internal.h"
#include "util.h"

/* A leader never sleeps longer than this without looking around. */
#define LEAD_MAX_SLEEP_MS 1000

static void
bump(uint64_t *counter)
{
	__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

/* The record of whether cq (one of conn's two) is armed. */
static int *
armed_flag(struct rb_conn *conn, const struct ibv_cq *cq)
{
	return cq == conn->send_cq ? &conn->send_armed : &conn->recv_armed;
}

/* Arm a CQ unless it is armed already: one that is stays armed until its
 * event fires, and that event is still to be taken.  (On rxe every
 * ibv_req_notify_cq is a syscall.) */
int
rb_conn_arm_cq(struct rb_conn *conn, struct ibv_cq *cq)
{
	int *armed = armed_flag(conn, cq);

	if (__atomic_load_n(armed, __ATOMIC_ACQUIRE))
		return 0;
	if (ibv_req_notify_cq(cq, 0) != 0)
		return -1;
	__atomic_store_n(armed, 1, __ATOMIC_RELEASE);
	return 0;
}

int
rb_conn_arm(struct rb_conn *conn)
{
	if (rb_conn_arm_cq(conn, conn->recv_cq) < 0)
		return -1;
	/* A LOCAL_INV, or the SEND of a REPLIED slot, completes on the send
	 * CQ, which is otherwise never armed: send completions wake nobody. */
	if ((__atomic_load_n(&conn->inv_pending, __ATOMIC_ACQUIRE) > 0 ||
	     __atomic_load_n(&conn->sends_awaited, __ATOMIC_ACQUIRE) > 0) &&
	    rb_conn_arm_cq(conn, conn->send_cq) < 0)
		return -1;
	return 0;
}

/* One event taken: its CQ is no longer armed. */
static void
took_event(struct rb_conn *conn, struct ibv_cq *cq)
{
	ibv_ack_cq_events(cq, 1);
	__atomic_store_n(armed_flag(conn, cq), 0, __ATOMIC_RELEASE);
}

void
rb_conn_take_events(struct rb_conn *conn)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	while (__atomic_load_n(&conn->recv_armed, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&conn->send_armed, __ATOMIC_ACQUIRE)) {
		if (ibv_get_cq_event(conn->comp_ch, &ev_cq, &ev_ctx) != 0) {
			bump(&conn->cfg.stats->empty_event_reads);   /* a syscall for nothing */
			break;
		}
		took_event(conn, ev_cq);
	}
}

/* Sleep until the completion channel or wake_fd fires, or timeout_ms. */
static void
sleep_on_channel(struct rb_conn *conn, int timeout_ms)
{
	struct pollfd pfd[2] = {
		{ .fd = conn->comp_ch->fd, .events = POLLIN },
		{ .fd = conn->wake_fd, .events = POLLIN },
	};
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	bump(&conn->cfg.stats->leader_sleeps);
	if (poll(pfd, 2, timeout_ms) <= 0)
		return;
	/* One event per wake-up: a second one, if any, keeps the fd
	 * readable and is taken on the next round. */
	if ((pfd[0].revents & POLLIN) &&
	    ibv_get_cq_event(conn->comp_ch, &ev_cq, &ev_ctx) == 0)
		took_event(conn, ev_cq);
	if (pfd[1].revents & POLLIN)
		rb_conn_wake_take(conn);
}

/* What the leader polls for (common/cqarm.h callbacks). */
struct lead_ctx {
	struct rb_conn *conn;
	struct rb_slot *s;
	int             done;   /* s answered, or the connection dead */
};

static int
lead_poll(void *opaque)
{
	struct lead_ctx *l = opaque;

	return rb_cq_poll_empty(l->conn, l->s, &l->done) > 0 || l->done;
}

static int
lead_arm(void *opaque)
{
	return rb_conn_arm(((struct lead_ctx *)opaque)->conn);
}

/* Under the lock, for the new leader of s: until when it polls without
 * arming.  busy-poll=yes: for ever; adaptive: for the spin's budget from
 * s's post, when s is the one slot in flight (common/spin.h); no: not at
 * all.  *lone: adaptive, and s is the one slot in flight: its round trip
 * is one the spin's mean is made of. */
static uint64_t
spin_until_locked(const struct rb_conn *conn, const struct rb_slot *s, int *lone)
{
	uint64_t budget;

	*lone = 0;
	switch (conn->cfg.busy_poll) {
	case RB_BUSY_POLL_YES:
		return UINT64_MAX;
	case RB_BUSY_POLL_ADAPTIVE:
		*lone = conn->inflight == 1;
		budget = rb_spin_budget_ns(&conn->spin, conn->inflight, RB_SPIN_ROUND_TRIPS);
		return budget == 0 ? 0 : s->post_ns + budget;
	default:
		return 0;
	}
}

/* The leader's loop: until s is DONE, the connection is dead (0) or the
 * deadline passes (-ETIMEDOUT).  Called without the lock.  Until
 * spin_until it polls without arming; after that it sleeps only after the
 * arming rule (poll, arm, poll again: common/cqarm.h). */
static int
lead(struct rb_conn *conn, struct rb_slot *s, uint64_t deadline_ns, uint64_t spin_until,
     int lone)
{
	struct lead_ctx l = { .conn = conn, .s = s };
	uint64_t now, yielded = 0;
	int r, spinning;

	for (;;) {
		spinning = spin_until == UINT64_MAX ||
			(spin_until != 0 && rb_now_ns() < spin_until);
		r = spinning ? lead_poll(&l) : rb_cq_poll_arm_poll(lead_poll, lead_arm, &l);
		if (r == RB_CQ_ARM_FAILED) {
			pthread_mutex_lock(&conn->lock);
			rb_conn_mark_dead_locked(conn, "ibv_req_notify_cq failed");
			pthread_mutex_unlock(&conn->lock);
			return 0;
		}
		if (l.done) {
			if (lone && !__atomic_load_n(&conn->dead, __ATOMIC_ACQUIRE))
				rb_spin_sample(&conn->spin, rb_now_ns() - s->post_ns);
			return 0;
		}
		if (r > 0)
			continue;
		now = rb_now_ns();
		if (now >= deadline_ns)
			return -ETIMEDOUT;
		if (!spinning)
			sleep_on_channel(conn, rb_deadline_ms(deadline_ns, now,
							      LEAD_MAX_SLEEP_MS));
		else if (spin_until != UINT64_MAX)   /* adaptive: common/spin.h */
			rb_spin_idle_pass(&yielded, now);
	}
}

/* Under the lock: pass the lead on to one sleeping follower, if any.
 * Returns the slot to signal after unlocking, or NULL. */
static struct rb_slot *
hand_off_locked(struct rb_conn *conn, const struct rb_slot *self)
{
	unsigned i, idx;

	conn->leader = -1;
	if (conn->followers == 0)
		return NULL;
	for (i = 1; i <= conn->nslots; i++) {
		idx = (self->ctx.index + i) % conn->nslots;
		if (conn->slots[idx].following) {
			conn->leader = (int)idx;
			bump(&conn->cfg.stats->handoffs);
			return &conn->slots[idx];
		}
	}
	return NULL;
}

/* The caller logs which request it was.  The target may still use the
 * slot's buffer: tear the whole connection down rather than reuse it. */
static void
timed_out_locked(struct rb_conn *conn)
{
	rb_conn_mark_dead_locked(conn, "request timed out");
}

int
rb_wait_slot(struct rb_conn *conn, struct rb_slot *s, uint64_t deadline_ns)
{
	struct rb_slot *next;
	struct timespec ts = rb_deadline_timespec(deadline_ns);
	int me = (int)s->ctx.index, r;

	pthread_mutex_lock(&conn->lock);
	for (;;) {
		/* ORPHANED: the connection died unanswered.  DONE: answered,
		 * even if it died since (its reply stands). */
		if (rb_slot_orphaned(s)) {
			r = -EAGAIN;
			break;
		}
		if (!rb_slot_awaiting(s)) {
			r = 0;
			break;
		}
		if (conn->dead) {
			r = -EAGAIN;     /* defensive: dying orphans every unanswered slot */
			break;
		}
		if (conn->leader < 0)
			conn->leader = me;
		if (conn->leader == me) {
			int lone;
			uint64_t spin_until = spin_until_locked(conn, s, &lone);

			pthread_mutex_unlock(&conn->lock);
			r = lead(conn, s, deadline_ns, spin_until, lone);
			pthread_mutex_lock(&conn->lock);
			if (r == -ETIMEDOUT && rb_slot_awaiting(s) && !conn->dead) {
				timed_out_locked(conn);
				r = -EIO;
				break;
			}
			continue;
		}
		s->following = 1;
		conn->followers++;
		r = pthread_cond_timedwait(&s->cond, &conn->lock, &ts);
		conn->followers--;
		s->following = 0;
		bump(&conn->cfg.stats->follower_wakes);
		if (r == ETIMEDOUT && rb_slot_awaiting(s) && !conn->dead &&
		    conn->leader != me) {
			timed_out_locked(conn);
			r = -EIO;
			break;
		}
	}
	next = conn->leader == me ? hand_off_locked(conn, s) : NULL;
	pthread_mutex_unlock(&conn->lock);
	if (next != NULL)
		pthread_cond_signal(&next->cond);
	return r;
}
