/* The adaptive spin's rule (common/spin.h). */
#include <sched.h>

#include "spin.h"
#include "util.h"

void
rb_spin_sample(struct rb_spin *s, uint64_t rtt_ns)
{
	if (s->samples++ == 0)
		s->mean_ns = rtt_ns;
	else if (rtt_ns >= s->mean_ns)
		s->mean_ns += (rtt_ns - s->mean_ns) / 8;
	else
		s->mean_ns -= (s->mean_ns - rtt_ns) / 8;
}

uint64_t
rb_spin_budget_ns(const struct rb_spin *s, unsigned outstanding, unsigned round_trips)
{
	if (outstanding == 0 || outstanding > RB_SPIN_MAX_OUT)
		return 0;
	if (s->samples == 0 || s->mean_ns > RB_SPIN_RTT_MAX_NS)
		return 0;
	return round_trips * s->mean_ns;
}

int
rb_spin_idle_pass(uint64_t *yielded_ns, uint64_t now)
{
	if (now - *yielded_ns < RB_SPIN_YIELD_NS)
		return 0;
	sched_yield();
	/* From when the CPU came back: a yield that let another thread run
	 * for longer than the interval does not make the next empty pass
	 * yield at once. */
	*yielded_ns = rb_now_ns();
	return 1;
}
