/* Unit test for the adaptive spin's rule (common/spin.c): no spin before
 * a round trip was measured, with nothing or too much outstanding, or
 * when the mean round trip is too long; otherwise two mean round trips,
 * the mean following the samples at 1/8 weight either way.  A pass that
 * found nothing yields the CPU at most every RB_SPIN_YIELD_NS, counted
 * from when the last yield returned. */
#include <stdio.h>

#include "spin.h"
#include "util.h"

#include "check.h"

int
main(void)
{
	struct rb_spin s = { 0 };
	uint64_t yielded = 0, t;
	unsigned i;

	CHECK(rb_spin_budget_ns(&s, 1, RB_SPIN_ROUND_TRIPS) == 0);           /* nothing measured yet */
	rb_spin_sample(&s, 100000);                     /* 100 us */
	CHECK(s.mean_ns == 100000);
	CHECK(rb_spin_budget_ns(&s, 1, RB_SPIN_ROUND_TRIPS) == RB_SPIN_ROUND_TRIPS * 100000);
	CHECK(rb_spin_budget_ns(&s, 0, RB_SPIN_ROUND_TRIPS) == 0);           /* no reply due */
	CHECK(rb_spin_budget_ns(&s, RB_SPIN_MAX_OUT + 1, RB_SPIN_ROUND_TRIPS) == 0);   /* a deep queue sleeps */

	rb_spin_sample(&s, 900000);                     /* a slow one moves it by 1/8 */
	CHECK(s.mean_ns == 200000);
	rb_spin_sample(&s, 40000);
	CHECK(s.mean_ns == 180000);

	/* A backing store whose round trips are long: the mean passes the
	 * limit and the thread sleeps at once; short ones bring it back. */
	for (i = 0; i < 64; i++)
		rb_spin_sample(&s, 20000000);
	CHECK(s.mean_ns > RB_SPIN_RTT_MAX_NS);
	CHECK(rb_spin_budget_ns(&s, 1, RB_SPIN_ROUND_TRIPS) == 0);
	for (i = 0; i < 64; i++)
		rb_spin_sample(&s, 50000);
	CHECK(s.mean_ns < 100000);
	CHECK(rb_spin_budget_ns(&s, 1, RB_SPIN_ROUND_TRIPS) == RB_SPIN_ROUND_TRIPS * s.mean_ns);
	CHECK(rb_spin_budget_ns(&s, 1, 4) == 4 * s.mean_ns);   /* rdmablk-ublk's */

	/* The first empty pass yields; the next only RB_SPIN_YIELD_NS after
	 * the yield returned. */
	t = rb_now_ns();
	CHECK(rb_spin_idle_pass(&yielded, t) == 1 && yielded >= t);
	t = yielded;
	CHECK(rb_spin_idle_pass(&yielded, t + RB_SPIN_YIELD_NS - 1) == 0 && yielded == t);
	CHECK(rb_spin_idle_pass(&yielded, t + RB_SPIN_YIELD_NS) == 1);
	/* A pass that began long before its yield returned (the yield let
	 * another thread run): the interval counts from the return, so the
	 * next empty pass does not yield at once. */
	t = rb_now_ns();
	yielded = 0;
	CHECK(rb_spin_idle_pass(&yielded, t - 10 * RB_SPIN_YIELD_NS) == 1 && yielded >= t);
	CHECK(rb_spin_idle_pass(&yielded, yielded + 1) == 0);

	printf("test-spin: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
