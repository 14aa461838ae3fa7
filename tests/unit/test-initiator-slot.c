/* Unit test for the initiator slot's state machine (initiator/slots.c):
 * drive rb_slot_event_locked with the events the completion handlers
 * record, in the orders the hardware may deliver them, and check the state
 * and what the caller is told to do. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#include "check.h"

#define NSLOTS 3

static struct rb_conn conn;
static struct rb_slot slots[NSLOTS];

static void
setup(void)
{
	unsigned i;

	memset(&conn, 0, sizeof(conn));
	memset(slots, 0, sizeof(slots));
	SLIST_INIT(&conn.free_slots);
	for (i = NSLOTS; i-- > 0;) {
		slots[i].ctx.index = i;
		slots[i].state = RB_SLOT_FREE;
		SLIST_INSERT_HEAD(&conn.free_slots, &slots[i], free_link);
	}
	conn.slots = slots;
	conn.nslots = NSLOTS;
	conn.data_credits = NSLOTS - 1;
}

int
main(void)
{
	struct rb_slot *s, *t, *u;

	/* The usual order: SEND completion, then the reply; no window. */
	setup();
	s = rb_slot_get_locked(&conn, 0);
	CHECK(s != NULL && s->state == RB_SLOT_POSTED && s->owned);
	CHECK(conn.inflight == 1);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_SENT) == 0);
	CHECK(s->state == RB_SLOT_POSTED);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY) == RB_SLOT_DO_WAKE_OWNER);
	CHECK(s->state == RB_SLOT_DONE && !rb_slot_awaiting(s));
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_OWNER_DONE) == 0);
	CHECK(s->state == RB_SLOT_FREE && conn.inflight == 0 &&
	      SLIST_FIRST(&conn.free_slots) == s);

	/* The reply before the SEND completion: RELEASED until it comes, and
	 * a credit waiter is told once the slot is FREE. */
	s = rb_slot_get_locked(&conn, 0);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY) == RB_SLOT_DO_WAKE_OWNER);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_OWNER_DONE) == 0);
	CHECK(s->state == RB_SLOT_RELEASED && conn.released == 1);
	conn.slot_waiters = 1;
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_SENT) == RB_SLOT_DO_CREDIT);
	CHECK(s->state == RB_SLOT_FREE && conn.released == 0 && conn.inflight == 0);
	conn.slot_waiters = 0;

	/* A window the reply did not invalidate: INVALIDATING (still
	 * awaiting: the owner must not copy out) until our LOCAL_INV. */
	s = rb_slot_get_locked(&conn, 0);
	s->window = 1;
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY) == RB_SLOT_DO_POST_INV);
	CHECK(s->state == RB_SLOT_INVALIDATING && rb_slot_awaiting(s));
	/* a second reply with the same tag changes nothing */
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY) == 0);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY_INV) == 0);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_OWNER_DONE) == 0);
	CHECK(s->state == RB_SLOT_INVALIDATING);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_INVALIDATED) == RB_SLOT_DO_WAKE_OWNER);
	CHECK(s->state == RB_SLOT_DONE);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_SENT) == 0);
	CHECK(s->state == RB_SLOT_DONE);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_OWNER_DONE) == 0);
	CHECK(s->state == RB_SLOT_FREE);

	/* ... and one the reply invalidated: DONE at once. */
	s = rb_slot_get_locked(&conn, 0);
	s->window = 1;
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY_INV) == RB_SLOT_DO_WAKE_OWNER);
	CHECK(s->state == RB_SLOT_DONE);
	rb_slot_event_locked(&conn, s, RB_SLOT_EV_SENT);
	rb_slot_event_locked(&conn, s, RB_SLOT_EV_OWNER_DONE);
	CHECK(s->state == RB_SLOT_FREE);

	/* The data credits leave the last slot to the keepalive NOP, which
	 * nobody owns: its reply finishes it without waking anyone. */
	u = rb_slot_get_locked(&conn, 0);
	t = rb_slot_get_locked(&conn, 0);
	CHECK(u != NULL && t != NULL && rb_slot_get_locked(&conn, 0) == NULL);
	rb_slot_event_locked(&conn, t, RB_SLOT_EV_POST_FAILED);
	CHECK(t->state == RB_SLOT_FREE && conn.inflight == 1);
	t = rb_slot_get_locked(&conn, 0);
	CHECK(t != NULL);
	s = rb_slot_get_locked(&conn, 1);
	CHECK(s != NULL && !s->owned);
	conn.nop_inflight = 1;
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY) == 0);
	CHECK(s->state == RB_SLOT_RELEASED && conn.nop_inflight == 0);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_SENT) == 0);
	CHECK(s->state == RB_SLOT_FREE);

	/* A failed post frees only a slot that is still POSTED. */
	CHECK(rb_slot_event_locked(&conn, t, RB_SLOT_EV_REPLY) == RB_SLOT_DO_WAKE_OWNER);
	CHECK(rb_slot_event_locked(&conn, t, RB_SLOT_EV_POST_FAILED) == 0);
	CHECK(t->state == RB_SLOT_DONE);

	/* A stale generation: get bumps it and clears what the last use left. */
	s = &slots[0];
	{
		uint64_t gen = s->gen;

		rb_slot_event_locked(&conn, u, RB_SLOT_EV_POST_FAILED);
		rb_slot_event_locked(&conn, t, RB_SLOT_EV_SENT);
		rb_slot_event_locked(&conn, t, RB_SLOT_EV_OWNER_DONE);
		CHECK(conn.inflight == 0);
		s->sent = s->window = 1;
		while ((t = rb_slot_get_locked(&conn, 1)) != NULL && t != s)
			;
		CHECK(t == s && s->gen != gen && !s->sent && !s->window);
	}

	/* The connection dies: a POSTED and an INVALIDATING slot are ORPHANED
	 * (their owners are woken, to resend), a DONE one keeps its reply,
	 * a NOP's wakes nobody, and a late reply or LOCAL_INV moves nothing. */
	setup();
	s = rb_slot_get_locked(&conn, 0);
	t = rb_slot_get_locked(&conn, 0);
	t->window = 1;
	CHECK(rb_slot_event_locked(&conn, t, RB_SLOT_EV_REPLY) == RB_SLOT_DO_POST_INV);
	u = rb_slot_get_locked(&conn, 1);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_CONN_DEAD) == RB_SLOT_DO_WAKE_OWNER);
	CHECK(rb_slot_event_locked(&conn, t, RB_SLOT_EV_CONN_DEAD) == RB_SLOT_DO_WAKE_OWNER);
	CHECK(rb_slot_event_locked(&conn, u, RB_SLOT_EV_CONN_DEAD) == 0);
	CHECK(s->state == RB_SLOT_ORPHANED && rb_slot_orphaned(s) && !rb_slot_awaiting(s));
	CHECK(t->state == RB_SLOT_ORPHANED && u->state == RB_SLOT_ORPHANED);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY) == 0);
	CHECK(rb_slot_event_locked(&conn, t, RB_SLOT_EV_INVALIDATED) == 0);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_OWNER_DONE) == 0);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_SENT) == 0);
	CHECK(s->state == RB_SLOT_ORPHANED && conn.inflight == 3);
	/* never reused: no free slot is left */
	CHECK(rb_slot_get_locked(&conn, 1) == NULL);
	/* ... but one whose SEND was never posted is free again */
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_POST_FAILED) == 0);
	CHECK(s->state == RB_SLOT_FREE && conn.inflight == 2);
	setup();
	s = rb_slot_get_locked(&conn, 0);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY) == RB_SLOT_DO_WAKE_OWNER);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_CONN_DEAD) == 0);
	CHECK(s->state == RB_SLOT_DONE);

	/* A SEND that gathers the caller's bytes (direct inline WRITE): the
	 * reply before its completion leaves it REPLIED (awaiting, the send
	 * CQ to be armed), and only the completion hands it to its owner. */
	setup();
	s = rb_slot_get_locked(&conn, 0);
	CHECK(!s->gather);
	s->gather = 1;
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY) == RB_SLOT_DO_ARM_SEND);
	CHECK(s->state == RB_SLOT_REPLIED && rb_slot_awaiting(s) && conn.sends_awaited == 1);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY) == 0);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_OWNER_DONE) == 0);
	CHECK(s->state == RB_SLOT_REPLIED);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_SENT) == RB_SLOT_DO_WAKE_OWNER);
	CHECK(s->state == RB_SLOT_DONE && conn.sends_awaited == 0);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_OWNER_DONE) == 0);
	CHECK(s->state == RB_SLOT_FREE);
	/* ... its completion first: DONE with the reply, as any slot */
	s = rb_slot_get_locked(&conn, 0);
	CHECK(!s->gather);
	s->gather = 1;
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_SENT) == 0);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY) == RB_SLOT_DO_WAKE_OWNER);
	CHECK(s->state == RB_SLOT_DONE && conn.sends_awaited == 0);
	rb_slot_event_locked(&conn, s, RB_SLOT_EV_OWNER_DONE);
	/* ... and the connection dies while it is REPLIED: its flushed SEND
	 * never completes, so it is ORPHANED (resent), no longer awaited. */
	s = rb_slot_get_locked(&conn, 0);
	s->gather = 1;
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_REPLY) == RB_SLOT_DO_ARM_SEND);
	CHECK(rb_slot_event_locked(&conn, s, RB_SLOT_EV_CONN_DEAD) == RB_SLOT_DO_WAKE_OWNER);
	CHECK(s->state == RB_SLOT_ORPHANED && conn.sends_awaited == 0);

	printf("test-initiator-slot: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
