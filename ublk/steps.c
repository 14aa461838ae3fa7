/* step-times=yes: where a request's time goes inside the server, step by
 * step, from its own clock (the vDSO's CLOCK_MONOTONIC), with nothing but a
 * flag test on the path when it is off (the default).  Logged per queue
 * when the device is removed; the target's side of the same requests is in
 * its metrics (docs/metrics.md: stage seconds).
 *
 *   fetched    a request's fetch CQE is handled
 *   sent       rb_aio_submit returned: its SEND posted (the doorbell, and
 *              with a software RDMA device its protocol work too), or
 *              queued for a credit or a reconnection
 *   reaped     its reply was reaped (io_done)
 *   handed     the io_uring call that hands its result back to the kernel
 *              begins
 *   idle gap   from a hand-back that left the whole device with nothing in
 *              flight to the next request fetched, by whichever queue: the
 *              kernel's completion, the client (fio) and its next
 *              submission, and that thread's wake-up, counted in that
 *              queue's line; with requests in flight there is no gap.  A gap
 *              over UB_STEPS_GAP_MAX_NS is the client pausing (before its
 *              first request, between jobs): counted apart, not averaged */
#include "ublk.h"
#include "util.h"

#define UB_STEPS_GAP_MAX_NS (10 * 1000 * 1000ull)

void
ub_steps_fetched(struct ub_queue *q, struct ub_steps_io *s)
{
	struct ub_dev *d = q->dev;
	uint64_t was = __atomic_fetch_add(&d->steps_inflight, 1, __ATOMIC_ACQ_REL);
	uint64_t idle = __atomic_load_n(&d->steps_idle_ns, __ATOMIC_ACQUIRE);
	uint64_t now = rb_now_ns();     /* after the stamp it is compared with */

	s->fetched_ns = now;
	s->sent_ns = 0;
	if (was != 0 || idle == 0 || now <= idle)
		return;         /* no idle gap ends here */
	if (now - idle > UB_STEPS_GAP_MAX_NS) {
		q->steps.pauses++;
		q->steps.pause_ns += now - idle;
	} else {
		q->steps.gap_ns += now - idle;
		q->steps.gaps++;
	}
}

void
ub_steps_sent(struct ub_queue *q, struct ub_steps_io *s)
{
	s->sent_ns = rb_now_ns();
	q->steps.sent_ns += s->sent_ns - s->fetched_ns;
	q->steps.sent++;
}

/* The result of s is queued for the kernel: a reply reaped, or an answer
 * given at once (not sent: no round trip). */
void
ub_steps_reaped(struct ub_queue *q, struct ub_steps_io *s)
{
	uint64_t now = rb_now_ns();

	if (s->sent_ns != 0) {
		q->steps.rt_ns += now - s->sent_ns;
		q->steps.rts++;
	}
	q->steps.pend++;
	q->steps.pend_sum_ns += now;
}

/* The io_uring call that hands the queued results back begins now. */
void
ub_steps_handing(struct ub_queue *q)
{
	struct ub_dev *d = q->dev;
	uint64_t now;

	if (q->steps.pend == 0)
		return;
	now = rb_now_ns();
	q->steps.hand_ns += q->steps.pend * now - q->steps.pend_sum_ns;
	q->steps.handed += q->steps.pend;
	/* Every hand-back stamps, before its count goes down: a fetch that
	 * sees the count reach 0 reads it only after it went down, so it
	 * reads the stamp of the hand-back that emptied the device (or a
	 * later one of another queue's, by less than that call's length). */
	__atomic_store_n(&d->steps_idle_ns, now, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&d->steps_inflight, q->steps.pend, __ATOMIC_ACQ_REL);
	q->steps.pend = 0;
	q->steps.pend_sum_ns = 0;
}

static double
mean_us(uint64_t ns, uint64_t n)
{
	return n == 0 ? 0.0 : (double)ns / (double)n / 1000.0;
}

void
ub_steps_log(const struct ub_queue *q)
{
	const struct ub_queue_steps *s = &q->steps;

	ub_info("queue %u: step-times: %llu requests sent, %llu results handed back; "
		"mean us: fetched to sent %.1f, sent to reaped %.1f, reaped to handed "
		"back %.1f; idle gap (handed back to the next request, nothing in flight) "
		"%.1f over %llu gaps, and %llu pauses over %llu ms (%.1f ms in all)", q->id,
		(unsigned long long)s->sent,
		(unsigned long long)s->handed, mean_us(s->sent_ns, s->sent),
		mean_us(s->rt_ns, s->rts), mean_us(s->hand_ns, s->handed),
		mean_us(s->gap_ns, s->gaps), (unsigned long long)s->gaps,
		(unsigned long long)s->pauses, UB_STEPS_GAP_MAX_NS / 1000000,
		(double)s->pause_ns / 1e6);
}
