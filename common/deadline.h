/* Deadline arithmetic on the monotonic clock (rb_now_ns), shared by the
 * target and the initiator: a deadline is an absolute time in ns. */
#ifndef RDMABLK_DEADLINE_H
#define RDMABLK_DEADLINE_H

#include <stdint.h>
#include <time.h>

/* now + timeout_ns, saturating at UINT64_MAX (never wraps into the past). */
uint64_t rb_deadline_at(uint64_t now_ns, uint64_t timeout_ns);
/* rb_deadline_at(rb_now_ns(), timeout_ns). */
uint64_t rb_deadline_after(uint64_t timeout_ns);
/* Milliseconds from now_ns to deadline_ns for poll(): 0 once it passed,
 * rounded up (poll never wakes before the deadline), at most max_ms. */
int rb_deadline_ms(uint64_t deadline_ns, uint64_t now_ns, int max_ms);
/* rb_deadline_ms from rb_now_ns(), capped at INT_MAX. */
int rb_deadline_ms_left(uint64_t deadline_ns);
/* A deadline as a CLOCK_MONOTONIC timespec for pthread_cond_timedwait
 * (condvars created with pthread_condattr_setclock(CLOCK_MONOTONIC)). */
struct timespec rb_deadline_timespec(uint64_t deadline_ns);

#endif
