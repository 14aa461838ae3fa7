/* Unit test for the arming rule (common/cqarm.c): a completion that lands
 * between the last empty poll and the arming is found by the poll after
 * arming, arming happens only once the CQ was found empty, and failures
 * are passed on. */
#include <stdio.h>

#include "cqarm.h"

#include "check.h"

/* A fake CQ: `pending` completions; arming may make `race` more arrive
 * (they came in before the arm took effect and raise no event). */
struct fake {
	int pending, race, arms, polls, arm_fails, poll_fails;
};

static int
fake_poll(void *opaque)
{
	struct fake *f = opaque;
	int n = f->pending;

	f->polls++;
	if (f->poll_fails)
		return -1;
	f->pending = 0;
	return n;
}

static int
fake_arm(void *opaque)
{
	struct fake *f = opaque;

	f->arms++;
	if (f->arm_fails)
		return -1;
	f->pending += f->race;
	f->race = 0;
	return 0;
}

int
main(void)
{
	struct fake f = { .pending = 3 };

	/* Something found: returned at once, not armed. */
	CHECK(rb_cq_poll_arm_poll(fake_poll, fake_arm, &f) == 3);
	CHECK(f.arms == 0 && f.polls == 1);
	/* Empty: armed, polled again, empty: safe to sleep. */
	CHECK(rb_cq_poll_arm_poll(fake_poll, fake_arm, &f) == 0);
	CHECK(f.arms == 1 && f.polls == 3);
	/* The race: a completion arrived just before the arm.  Without the
	 * second poll the caller would sleep with it in the CQ. */
	f.race = 1;
	CHECK(rb_cq_poll_arm_poll(fake_poll, fake_arm, &f) == 1);
	CHECK(f.arms == 2 && f.polls == 5 && f.pending == 0);
	/* Failures */
	f.arm_fails = 1;
	CHECK(rb_cq_poll_arm_poll(fake_poll, fake_arm, &f) == RB_CQ_ARM_FAILED);
	f.arm_fails = 0;
	f.poll_fails = 1;
	CHECK(rb_cq_poll_arm_poll(fake_poll, fake_arm, &f) == -1);
	CHECK(f.arms == 3);
	printf("test-cqarm: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
