/* Unit test for rb_cq_poll_empty (initiator/cq.c): every work completion
 * the provider is handed to fill is all zero, so a field a provider leaves
 * unset for an opcode (the key of a plain SEND) never holds an earlier
 * poll's value.  The CQs are fakes whose poll_cq checks its whole array,
 * then fills entries with every field set, as a provider that leaves
 * nothing unset would, including the fields a real one may skip. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#include "check.h"

static struct rb_wr_ctx ctrl = { .kind = RB_WR_SEND_CTRL };   /* handled as nothing */
static int script[16], nscript, step, dirty_seen, polls;

static int
all_zero(const struct ibv_wc *wc, int n)
{
	const unsigned char *p = (const void *)wc;
	size_t i;

	for (i = 0; i < (size_t)n * sizeof(*wc); i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

/* FAIL_AFTER_4: the poll fails after writing four entries, as a provider
 * might that meets a bad CQE midway. */
#define FAIL_AFTER_4 (-4)

static void
fill(struct ibv_wc *wc)
{
	memset(wc, 0xa5, sizeof(*wc));
	wc->wr_id = (uintptr_t)&ctrl;
	wc->status = IBV_WC_SUCCESS;
	wc->opcode = IBV_WC_SEND;
	wc->invalidated_rkey = 0x1234ab;
}

/* The next count of the script; each entry filled with fields set. */
static int
fake_poll(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	int i, n = step < nscript ? script[step] : 0;

	(void)cq;
	polls++;
	step++;
	if (!all_zero(wc, num))
		dirty_seen++;
	if (n == FAIL_AFTER_4) {
		for (i = 0; i < 4 && i < num; i++)
			fill(&wc[i]);
		return -1;
	}
	if (n > num)
		n = num;
	for (i = 0; i < n; i++)
		fill(&wc[i]);
	return n;
}

int
main(void)
{
	struct ibv_context ctx;
	struct ibv_cq rcq, scq;
	struct rb_conn conn;
	int r;

	memset(&ctx, 0, sizeof(ctx));
	ctx.ops.poll_cq = fake_poll;
	memset(&rcq, 0, sizeof(rcq));
	memset(&scq, 0, sizeof(scq));
	rcq.context = scq.context = &ctx;
	memset(&conn, 0, sizeof(conn));
	pthread_mutex_init(&conn.lock, NULL);
	snprintf(conn.cfg.host, sizeof(conn.cfg.host), "fake");
	conn.leader = -1;
	conn.wake_fd = -1;
	conn.kick_fd = -1;
	conn.recv_cq = &rcq;
	conn.send_cq = &scq;

	/* A full receive batch (16) makes it poll again: recv 16, send 3,
	 * then recv 2, send 1.  Then a call that finds nothing, and one
	 * more with completions: each poll must get a zeroed array. */
	nscript = 0;
	script[nscript++] = 16;
	script[nscript++] = 3;
	script[nscript++] = 2;
	script[nscript++] = 1;
	r = rb_cq_poll_empty(&conn, NULL, NULL);
	CHECK(r == 22);
	CHECK(polls == 4);
	script[nscript++] = 0;
	script[nscript++] = 0;
	r = rb_cq_poll_empty(&conn, NULL, NULL);
	CHECK(r == 0);
	script[nscript++] = 5;
	script[nscript++] = 7;
	r = rb_cq_poll_empty(&conn, NULL, NULL);
	CHECK(r == 12);
	script[nscript++] = 1;
	script[nscript++] = 0;
	r = rb_cq_poll_empty(&conn, NULL, NULL);
	CHECK(r == 1);
	CHECK(polls == 10);
	CHECK(!conn.dead);
	/* A failed poll (the send CQ's, after the receive CQ gave 2) kills the
	 * connection, and what it wrote must not reach the next poll either. */
	script[nscript++] = 2;
	script[nscript++] = FAIL_AFTER_4;
	rb_cq_poll_empty(&conn, NULL, NULL);
	CHECK(conn.dead);
	script[nscript++] = 1;
	script[nscript++] = 0;
	r = rb_cq_poll_empty(&conn, NULL, NULL);
	CHECK(r == 1);
	CHECK(polls == 14);
	if (dirty_seen)
		fprintf(stderr, "FAIL: %d of %d polls were handed entries an earlier poll had "
			"filled\n", dirty_seen, polls);
	CHECK(dirty_seen == 0);
	printf("test-initiator-poll-clear: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
