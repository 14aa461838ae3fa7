/* A connection's receive ring (struct recv_ring, target/conn/conn.h).
 *
 * Until HELLO (and AUTH) succeed, a connection has proved nothing, so it
 * pins only CONN_HANDSHAKE_RECVS buffers: a flood of connections that
 * never authenticate costs a few KiB of locked memory each, not the
 * ~540 KiB of a full ring.  conn_hello_finish grows the ring to the granted
 * queue depth + 1 before HELLO_REPLY goes out, so every request the
 * initiator may then send has a posted buffer.  The QP's receive queue and
 * the receive CQ are created for the largest ring (conn_create checks the
 * capabilities it got), so growing only registers and posts. */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "log.h"

static int
region_create(struct conn *c, struct recv_region *r, unsigned first, unsigned count,
	      const char *what)
{
	size_t bytes = (size_t)count * RB_MSG_BUF_SIZE;
	unsigned i;

	r->mem = calloc(1, bytes);
	if (r->mem == NULL) {
		log_warnx("%s: out of memory for %u receive buffers (%s)", c->peer, count,
			  what);
		return -1;
	}
	/* Local write only: SENDs land here, nothing remote addresses it. */
	r->mr = ibv_reg_mr(c->dev->pd, r->mem, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (r->mr == NULL) {
		log_warn("%s: ibv_reg_mr (%u receive buffers, %s)", c->peer, count, what);
		goto out_free_mem;
	}
	for (i = 0; i < count; i++) {
		struct recv_buf *rb = &c->ring.bufs[first + i];

		rb->ctx.type = WR_RECV;
		rb->ctx.obj = rb;
		rb->c = c;
		rb->msg.buf = r->mem + (size_t)i * RB_MSG_BUF_SIZE;
		rb->lkey = r->mr->lkey;
	}
	return 0;

out_free_mem:
	free(r->mem);
	r->mem = NULL;
	return -1;
}

static void
region_destroy(struct recv_region *r)
{
	if (r->mr != NULL)
		ibv_dereg_mr(r->mr);
	free(r->mem);
	r->mr = NULL;
	r->mem = NULL;
}

/* 0, or the ibv_post_recv error (not logged). */
static int
post_one(struct conn *c, struct recv_buf *rb)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rb->msg.buf,
		.length = RB_MSG_BUF_SIZE,
		.lkey = rb->lkey,
	};
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&rb->ctx;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(c->qp, &wr, &bad);
}

/* Post buffers [first, first + count); a failure is logged here. */
static int
post_range(struct conn *c, unsigned first, unsigned count)
{
	unsigned i;
	int rc;

	for (i = first; i < first + count; i++) {
		rc = post_one(c, &c->ring.bufs[i]);
		if (rc != 0) {
			log_warnx("%s: ibv_post_recv (receive buffer %u of %u): %s", c->peer,
				  i + 1, first + count, strerror(rc));
			return -1;
		}
	}
	return 0;
}

int
recvring_create(struct conn *c, unsigned max)
{
	struct recv_ring *ring = &c->ring;
	unsigned n = max < CONN_HANDSHAKE_RECVS ? max : CONN_HANDSHAKE_RECVS;

	memset(ring, 0, sizeof(*ring));
	/* Entries only (not pinned; calloc'ed pages stay untouched until
	 * the ring grows into them): posted WRs point into this array, so
	 * it cannot move later. */
	ring->bufs = calloc(max, sizeof(*ring->bufs));
	if (ring->bufs == NULL) {
		log_warnx("%s: out of memory for the receive ring", c->peer);
		return -1;
	}
	ring->max = max;
	if (region_create(c, &ring->handshake, 0, n, "handshake") < 0)
		goto out_free_bufs;
	if (post_range(c, 0, n) < 0)
		goto out_destroy_handshake;
	ring->n = n;
	return 0;

out_destroy_handshake:
	region_destroy(&ring->handshake);
out_free_bufs:
	free(ring->bufs);
	ring->bufs = NULL;
	return -1;
}

int
recvring_grow(struct conn *c, unsigned n)
{
	struct recv_ring *ring = &c->ring;
	unsigned first = ring->n;

	if (n > ring->max)
		n = ring->max;
	if (n <= first)
		return 0;
	if (region_create(c, &ring->rest, first, n - first, "granted queue depth") < 0)
		return -1;
	/* A buffer that failed to post stays unposted: the caller fails the
	 * connection, and the region is freed with it. */
	if (post_range(c, first, n - first) < 0)
		return -1;
	ring->n = n;
	log_debug("%s: receive ring grown to %u buffers", c->peer, n);
	return 0;
}

void
recvring_destroy(struct conn *c)
{
	region_destroy(&c->ring.rest);
	region_destroy(&c->ring.handshake);
	free(c->ring.bufs);
	memset(&c->ring, 0, sizeof(c->ring));
}

int
conn_post_recv(struct conn *c, struct recv_buf *rb)
{
	int rc = post_one(c, rb);

	if (rc != 0) {
		log_warnx("%s: ibv_post_recv: %s", c->peer, strerror(rc));
		conn_fail(c, "cannot post a receive buffer");
		return -1;
	}
	return 0;
}
