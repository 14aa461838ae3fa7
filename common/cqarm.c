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

unsigned
rb_cq_ack_events(struct ibv_comp_channel *ch, struct ibv_cq *cq)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	unsigned n = 0;

	while (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0) {
		ibv_ack_cq_events(ev_cq, 1);
		if (cq == NULL || ev_cq == cq)
			n++;
	}
	return n;
}
