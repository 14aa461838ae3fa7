/* A request's ttl, and the hold after a connection died: no write of a
 * dead connection is resent, or reported, while its old copy could still
 * start at the target (internal.h, docs/durability.md "Failover"). */
#include <errno.h>
#include <time.h>

#include "internal.h"
#include "util.h"

uint8_t
rb_ttl_for(uint64_t deadline_ns, uint64_t now_ns)
{
	uint64_t left_s = deadline_ns > now_ns ? (deadline_ns - now_ns) / 1000000000u : 0;

	if (left_s <= RB_TTL_SLACK_S)
		return 1;   /* late: the hold covers it (rb_conn_hold_ns) */
	left_s -= RB_TTL_SLACK_S;
	return (uint8_t)(left_s > RB_TTL_MAX_S ? RB_TTL_MAX_S : left_s);
}

static int
is_write_op(uint8_t op)
{
	return op == RB_OP_WRITE || op == RB_OP_TRIM || op == RB_OP_WRITE_ZEROES;
}

uint64_t
rb_conn_hold_ns(struct rb_conn *conn)
{
	uint64_t hold = 0, until;
	unsigned i;

	pthread_mutex_lock(&conn->lock);
	for (i = 0; i < conn->nslots; i++) {
		const struct rb_slot *s = &conn->slots[i];

		if (!(rb_slot_awaiting(s) || rb_slot_orphaned(s)) || !s->owned ||
		    !is_write_op(s->opcode) || s->ttl == 0)
			continue;
		until = s->post_ns + RB_TRANSPORT_MAX_NS + (uint64_t)s->ttl * 1000000000u;
		if (until > hold)
			hold = until;
	}
	pthread_mutex_unlock(&conn->lock);
	return hold;
}

void
rb_hold_until(uint64_t hold_ns, const char *host)
{
	uint64_t now = rb_now_ns();
	struct timespec ts;

	if (hold_ns <= now)
		return;
	rb_log(RB_LOG_INFO, "%s: waiting %llu ms until no unanswered write of the lost "
	       "connection can still start there (their ttl)", host,
	       (unsigned long long)((hold_ns - now) / 1000000u));
	ts.tv_sec = (time_t)(hold_ns / 1000000000u);
	ts.tv_nsec = (long)(hold_ns % 1000000000u);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}
