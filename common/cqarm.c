/* The completion queue arming rule (common/cqarm.h). */
#include "cqarm.h"

int
rb_cq_poll_arm_poll(rb_cq_poll_fn *poll, rb_cq_arm_fn *arm, void *opaque)
{
	int r = poll(opaque);

	if (r != 0)
		return r;
	if (arm(opaque) < 0)
		return RB_CQ_ARM_FAILED;
	/* Armed: anything that arrived before arming is only seen now. */
	return poll(opaque);
}
