/* Unit test for a request's ttl and the hold after a connection died
 * (initiator/ttl.c): the ttl leaves the transport's bound and a second of
 * the deadline, and the hold covers exactly the unanswered writes. */
#include <pthread.h>
#include <string.h>

#include "internal.h"

#include "check.h"

#define S 1000000000ull

static struct rb_conn conn;
static struct rb_slot slots[4];

/* Slot i: state st, opcode op, posted at post, with ttl. */
static void
slot(unsigned i, enum rb_slot_state st, uint8_t op, uint64_t post, uint8_t ttl)
{
	slots[i].state = st;
	slots[i].owned = 1;
	slots[i].opcode = op;
	slots[i].post_ns = post;
	slots[i].ttl = ttl;
}

int
main(void)
{
	uint64_t now = 1000 * S;
	unsigned t;

	/* The ttl: at most 5 s; else what the deadline leaves after 6 s;
	 * at least 1. */
	CHECK(RB_TTL_MAX_S == 5);
	CHECK(rb_ttl_for(now + 30 * S, now) == RB_TTL_MAX_S);
	CHECK(rb_ttl_for(now + 10 * S, now) == 4);
	CHECK(rb_ttl_for(now + 7 * S, now) == 1);
	CHECK(rb_ttl_for(now + 2 * S, now) == 1);
	CHECK(rb_ttl_for(now - S, now) == 1);
	/* Every ttl above 1 keeps post + transport + ttl before the deadline. */
	for (t = 8; t <= 60; t++)
		CHECK(now + RB_TRANSPORT_MAX_NS + rb_ttl_for(now + t * S, now) * S < now + t * S);

	pthread_mutex_init(&conn.lock, NULL);
	conn.slots = slots;
	conn.nslots = 4;
	/* Nothing unanswered: no hold. */
	CHECK(rb_conn_hold_ns(&conn) == 0);
	/* An answered write, an unanswered READ and FLUSH: no hold. */
	slot(0, RB_SLOT_DONE, RB_OP_WRITE, now, 10);
	slot(1, RB_SLOT_POSTED, RB_OP_READ, now, 10);
	slot(2, RB_SLOT_POSTED, RB_OP_FLUSH, now, 10);
	CHECK(rb_conn_hold_ns(&conn) == 0);
	/* Unanswered writes: the latest bound of them. */
	slot(1, RB_SLOT_POSTED, RB_OP_WRITE, now, 10);
	slot(2, RB_SLOT_INVALIDATING, RB_OP_TRIM, now + 2 * S, 3);
	slot(3, RB_SLOT_POSTED, RB_OP_WRITE_ZEROES, now + S, 6);
	CHECK(rb_conn_hold_ns(&conn) == now + RB_TRANSPORT_MAX_NS + 10 * S);
	/* A keepalive NOP (nobody owns it) and a write without a ttl (an
	 * older target) are not bounded: not counted. */
	slot(1, RB_SLOT_POSTED, RB_OP_WRITE, now + 5 * S, 0);
	CHECK(rb_conn_hold_ns(&conn) == now + S + RB_TRANSPORT_MAX_NS + 6 * S);
	/* The connection died: the same writes, ORPHANED, hold just as long
	 * (rb_conn_hold_ns is asked only then). */
	slot(2, RB_SLOT_ORPHANED, RB_OP_TRIM, now + 2 * S, 3);
	slot(3, RB_SLOT_ORPHANED, RB_OP_WRITE_ZEROES, now + S, 6);
	CHECK(rb_conn_hold_ns(&conn) == now + S + RB_TRANSPORT_MAX_NS + 6 * S);
	/* A hold in the past does not sleep. */
	rb_hold_until(1, "test");
	pthread_mutex_destroy(&conn.lock);

	printf("test-initiator-ttl: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
