/* Unit test for the adaptive spin's rule (common/spin.c): no spin before
 * a round trip was measured, with nothing or too much outstanding, or
 * when the mean round trip is too long; otherwise two mean round trips,
 * the mean following the samples at 1/8 weight either way. */
#include <stdio.h>

#include "spin.h"

#include "check.h"

int
main(void)
{
	struct rb_spin s = { 0 };
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

	printf("test-spin: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
