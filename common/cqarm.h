/* The completion queue arming rule, shared by every thread that sleeps on a
 * completion channel: poll the CQs empty, arm them, poll again.  A
 * completion that arrives between the last empty poll and
 * ibv_req_notify_cq raises no event, so only the poll after arming sees
 * it; sleeping without that second poll can lose a wake-up. */
#ifndef RDMABLK_CQARM_H
#define RDMABLK_CQARM_H

#include <infiniband/verbs.h>

/* Poll the caller's CQs until empty; > 0: something was found (or the
 * caller has something to do), 0: nothing, < 0: a poll failed. */
typedef int rb_cq_poll_fn(void *opaque);
/* Arm the caller's CQs (ibv_req_notify_cq): 0, or < 0 on failure. */
typedef int rb_cq_arm_fn(void *opaque);

/* Poll; when that finds nothing, arm and poll again.  Returns what a poll
 * returned when it found something (> 0, the CQs are not known to be
 * armed: handle it and call again) or failed (< 0); RB_CQ_ARM_FAILED when
 * arming failed; 0 when the CQs are empty and armed: the caller may sleep
 * on the channel. */
#define RB_CQ_ARM_FAILED (-1000)
int rb_cq_poll_arm_poll(rb_cq_poll_fn *poll, rb_cq_arm_fn *arm, void *opaque);

#endif
