/* Unit test for common/deadline.c: deadlines never wrap, poll() timeouts
 * round up and stop at the cap, and a timespec splits seconds exactly. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "deadline.h"
#include "util.h"

#include "check.h"

int
main(void)
{
	struct timespec ts;
	uint64_t now;

	/* now + timeout, saturating */
	CHECK(rb_deadline_at(1000, 500) == 1500);
	CHECK(rb_deadline_at(UINT64_MAX - 10, 10) == UINT64_MAX);
	CHECK(rb_deadline_at(UINT64_MAX - 10, 11) == UINT64_MAX);
	CHECK(rb_deadline_at(UINT64_MAX - 10, UINT64_MAX) == UINT64_MAX);
	now = rb_now_ns();
	CHECK(rb_deadline_after(5000000000ull) >= now + 5000000000ull);

	/* remaining ms for poll(): 0 once passed, rounded up, capped */
	CHECK(rb_deadline_ms(1000, 1000, 100) == 0);
	CHECK(rb_deadline_ms(1000, 2000, 100) == 0);
	CHECK(rb_deadline_ms(1000001, 1000000, 100) == 1);     /* 1 ns left: 1 ms */
	CHECK(rb_deadline_ms(2000000, 1000000, 100) == 1);     /* exactly 1 ms */
	CHECK(rb_deadline_ms(2000001, 1000000, 100) == 2);
	CHECK(rb_deadline_ms(10000000000ull, 0, 1000) == 1000);
	CHECK(rb_deadline_ms(UINT64_MAX, 0, INT_MAX) == INT_MAX);
	CHECK(rb_deadline_ms(5000000, 0, 0) == 0);
	CHECK(rb_deadline_ms_left(now) == 0);
	CHECK(rb_deadline_ms_left(rb_deadline_after(60000000000ull)) > 59000);
	CHECK(rb_deadline_ms_left(rb_deadline_after(60000000000ull)) <= 60000);

	/* timespec */
	ts = rb_deadline_timespec(0);
	CHECK(ts.tv_sec == 0 && ts.tv_nsec == 0);
	ts = rb_deadline_timespec(3999999999ull);
	CHECK(ts.tv_sec == 3 && ts.tv_nsec == 999999999);
	ts = rb_deadline_timespec(4000000000ull);
	CHECK(ts.tv_sec == 4 && ts.tv_nsec == 0);
	printf("test-deadline: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
