/* The adaptive spin: how long a thread that waits for a reply polls its
 * completion queue before it arms it and sleeps.  A sleep costs a
 * wake-up and the arming's syscalls (on rxe also the completion
 * channel's read); a spin costs the CPU it burns.  So spin for a bounded
 * time, from the round trips measured: a few mean round trips, and
 * only while few requests are out (a deep queue brings completions
 * without waiting, and its CPUs are better left to the work) and the
 * round trip is short (a slow backing store is not worth a spinning CPU).
 * As the kernel's hybrid polling does for NVMe, from its own mean.  The
 * mean is made of the round trips of requests sent alone, the only ones a
 * spin waits for: a deep queue's include the queueing. */
#ifndef RDMABLK_SPIN_H
#define RDMABLK_SPIN_H

#include <stdint.h>

/* No spin when the mean round trip is longer than this: a disk's or a
 * loaded remote cluster's.  (An RDMA round trip to a page cache or flash
 * is 10-200 us on hardware, 1-3 ms under this project's emulated rxe.) */
#define RB_SPIN_RTT_MAX_NS   (10u * 1000 * 1000)
/* The spin's budget, in mean round trips, for the library's own waits
 * (the plugin's threads); rdmablk-ublk's queue thread spins longer
 * (UB_SPIN_ROUND_TRIPS, docs/performance.md). */
#define RB_SPIN_ROUND_TRIPS  2u
/* Spin only while at most this many requests are outstanding. */
#define RB_SPIN_MAX_OUT      1u
/* A spin pass that found nothing gives the CPU up (sched_yield) at most
 * this often: the first empty pass of a spin does (the post may just have
 * queued work on this CPU), then one every RB_SPIN_YIELD_NS.  With
 * software RDMA the reply is made by threads that need a CPU (rxe's
 * workers, a local target): on two CPUs one that landed on the spinning
 * one waited for the scheduler to preempt the spin.  For rdmablk-ublk,
 * QD1 replies came 10-18 % sooner at 15-19 yields per IO under emulation
 * (90 when it yielded on every empty pass, for no more speed).  With a
 * hardware round trip of a few microseconds: about one per IO, a syscall
 * that returns at once when no other thread wants the CPU
 * (docs/performance.md, "the spin yields"). */
#define RB_SPIN_YIELD_NS     (20u * 1000)

struct rb_spin {
	uint64_t mean_ns;       /* moving mean of the round trip (1/8 weight); 0: none yet */
	uint64_t samples;
};

/* One reply came rtt_ns after its request was sent. */
void rb_spin_sample(struct rb_spin *s, uint64_t rtt_ns);
/* How long, from the send of the newest request, to spin with
 * outstanding requests out, at most round_trips mean round trips: 0 means
 * sleep now. */
uint64_t rb_spin_budget_ns(const struct rb_spin *s, unsigned outstanding,
			   unsigned round_trips);
/* A spin pass found nothing at now: sched_yield if RB_SPIN_YIELD_NS have
 * passed since *yielded_ns (the end of the last yield; 0: none), and then
 * set it to the time the yield returned.  Returns 1 when it yielded. */
int rb_spin_idle_pass(uint64_t *yielded_ns, uint64_t now);

#endif
