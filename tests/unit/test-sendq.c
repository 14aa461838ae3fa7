/* Unit test for the send queue's accounting (target/conn/sendq.c) with the
 * real request state machine: WRs queued on a connection that fails before
 * the round's chain is posted are given back, one send-queue slot each, the
 * RDMA READs among them leave reads_pending, and their requests complete
 * and free their slots.  No RDMA: the connection is in error, so
 * conn_post_sends posts nothing and unposts the whole chain. */
#include <stdio.h>
#include <string.h>

#include "../../target/conn/conn.h"

#include "check.h"

static struct conn c;
static struct req reqs[2];

/* Request r, in state st, with its WRs first..last queued as request.c
 * queues them (the slots reserved first). */
static void
queue(struct req *r, enum req_state st, struct ibv_send_wr *first, struct ibv_send_wr *last,
      unsigned slots)
{
	r->state = st;
	r->wr_pending = 1;
	c.sq_used += slots;
	c.rq.active++;
	conn_queue_send(&c, first, last);
}

int
main(void)
{
	struct req *rd = &reqs[0], *wr = &reqs[1];

	memset(&c, 0, sizeof(c));
	snprintf(c.peer, sizeof(c.peer), "peer");
	c.rq.peer = c.peer;
	SLIST_INIT(&c.rq.free_reqs);
	waitq_init(&c.sq_wait);
	STAILQ_INIT(&c.backlog);
	req_init(rd, &c.rq);
	req_init(wr, &c.rq);

	/* A READ's reply: its RDMA WRITE (unsignaled) chained to its SEND,
	 * two slots; a WRITE's RDMA READ of its data, one slot. */
	memset(&rd->wr_rdma, 0, sizeof(rd->wr_rdma));
	memset(&rd->wr_send, 0, sizeof(rd->wr_send));
	rd->wr_rdma.wr_id = (uintptr_t)&rd->data_ctx;
	rd->wr_rdma.opcode = IBV_WR_RDMA_WRITE;
	rd->wr_rdma.next = &rd->wr_send;
	rd->wr_send.wr_id = (uintptr_t)&rd->send_ctx;
	rd->wr_send.opcode = IBV_WR_SEND;
	rd->send_slots = 2;
	queue(rd, REQ_TRANSFERRING_TO_HOST, &rd->wr_rdma, &rd->wr_send, 2);
	memset(&wr->wr_rdma, 0, sizeof(wr->wr_rdma));
	wr->wr_rdma.wr_id = (uintptr_t)&wr->rdma_ctx;
	wr->wr_rdma.opcode = IBV_WR_RDMA_READ;
	queue(wr, REQ_TRANSFERRING_FROM_HOST, &wr->wr_rdma, &wr->wr_rdma, 1);
	CHECK(c.sq_used == 3);
	CHECK(c.reads_pending == 1);     /* counted as it was queued */
	CHECK(c.post_head == &rd->wr_rdma && c.post_tail == &wr->wr_rdma);

	/* The connection fails before the round ends: nothing is posted. */
	c.state = CONN_ERROR;
	c.rq.failed = 1;
	conn_post_sends(&c);
	CHECK(c.post_head == NULL && c.post_tail == NULL);
	CHECK(c.sq_used == 0);
	CHECK(c.reads_pending == 0);
	CHECK(rd->state == REQ_FREE && rd->wr_pending == 0);
	CHECK(wr->state == REQ_FREE && wr->wr_pending == 0);
	CHECK(c.rq.active == 0);

	printf("test-sendq: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
