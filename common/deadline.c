/* Deadline arithmetic (common/deadline.h). */
#include <limits.h>

#include "deadline.h"
#include "util.h"

uint64_t
rb_deadline_at(uint64_t now_ns, uint64_t timeout_ns)
{
	return timeout_ns > UINT64_MAX - now_ns ? UINT64_MAX : now_ns + timeout_ns;
}

uint64_t
rb_deadline_after(uint64_t timeout_ns)
{
	return rb_deadline_at(rb_now_ns(), timeout_ns);
}

int
rb_deadline_ms(uint64_t deadline_ns, uint64_t now_ns, int max_ms)
{
	uint64_t ms;

	if (now_ns >= deadline_ns || max_ms <= 0)
		return 0;
	ms = (deadline_ns - now_ns) / 1000000 +
		((deadline_ns - now_ns) % 1000000 != 0);
	return ms > (uint64_t)max_ms ? max_ms : (int)ms;
}

int
rb_deadline_ms_left(uint64_t deadline_ns)
{
	return rb_deadline_ms(deadline_ns, rb_now_ns(), INT_MAX);
}

struct timespec
rb_deadline_timespec(uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000u),
		.tv_nsec = (long)(deadline_ns % 1000000000u),
	};

	return ts;
}
