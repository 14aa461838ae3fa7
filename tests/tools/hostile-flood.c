/* rdmablk-hostile: the attacks that are not tests: flood, starve, churn and
 * hold (rdmablk-hostile.c says what each does; hostile.h). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"
#include "pattern.h"
#include "util.h"

/* ---- flood: keep the pipe full until killed ---- */

int
flood(uint64_t off, uint64_t len, unsigned seconds)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	uint64_t end = deadline_after_s(seconds), rng = opt.seed | 1, ops = 0;
	uint32_t io;
	unsigned i, qd;
	int announced = 0;

	raw.cur = "flood";
	if (h_session(&h, (uint16_t)opt.qd) < 0)
		return 1;
	io = h.exp.max_io < H_FLOOD_IO ? h.exp.max_io : H_FLOOD_IO;
	qd = h.exp.queue_depth;
	if (qd > H_DATA_SIZE / io)
		qd = H_DATA_SIZE / io;
	if (len < io || off % 512 != 0 || off + len > h.exp.size) {
		h_close(&h);
		return verdict(0, "range %" PRIu64 "+%" PRIu64 " does not fit the export", off, len);
	}
	/* Slot i uses tag i and data + i * io; a reply frees its slot. */
	for (i = 0; i < qd; i++) {
		uint64_t at = off + (xorshift(&rng) % ((len - io) / 512 + 1)) * 512;

		data_req(&h, msg, (i & 1) ? RB_OP_READ : RB_OP_WRITE, i, at, io, (size_t)i * io);
		if (h_send(&h, msg, sizeof(msg)) < 0) {
			h_close(&h);
			return verdict(0, "cannot post request %u", i);
		}
	}
	while (rb_now_ns() < end) {
		h_outcome(&h, wait_deadline(), &o);
		if (o.kind != OUT_REPLY || o.error != RB_OK || o.tag >= qd) {
			h_close(&h);
			return verdict(0, "after %" PRIu64 " replies: %s", ops, o.what);
		}
		ops++;
		if (!announced) {
			printf("flood: %u requests in flight\n", qd);
			fflush(stdout);
			announced = 1;
		}
		i = (unsigned)o.tag;
		uint64_t at = off + (xorshift(&rng) % ((len - io) / 512 + 1)) * 512;

		data_req(&h, msg, (ops & 1) ? RB_OP_READ : RB_OP_WRITE, i, at, io, (size_t)i * io);
		if (h_send(&h, msg, sizeof(msg)) < 0) {
			h_close(&h);
			return verdict(0, "cannot post a request after %" PRIu64 " replies", ops);
		}
	}
	h_close(&h);
	return verdict(1, "%" PRIu64 " requests served at depth %u", ops, qd);
}

/* ---- starve: hold pool buffers with replies that cannot be delivered ---- */

/* One attacking connection: returns 1 when the target closed it before
 * end, 0 when end came first, -1 when it could not be set up. */
static int
starve_once(uint64_t end, uint64_t *held_ns)
{
	char msg[sizeof(struct rb_request)];
	struct hev ev;
	struct hconn h;
	uint64_t start;
	uint32_t io;
	unsigned i, qd;
	int closed;

	if (h_session(&h, (uint16_t)opt.qd) < 0)
		return -1;
	io = h.exp.max_io < H_STARVE_IO ? h.exp.max_io : H_STARVE_IO;
	qd = h.exp.queue_depth;
	/* The HELLO_REPLY took the only receive: every reply is RNR-NAKed. */
	for (i = 0; i < qd; i++) {
		data_req(&h, msg, RB_OP_READ, i, (uint64_t)i * io % (h.exp.size - io), io, 0);
		if (h_send(&h, msg, sizeof(msg)) < 0)
			break;
	}
	debug("%u READs of %u bytes posted", i, io);
	start = rb_now_ns();
	while (!h.closed && rb_now_ns() < end)
		if (h_wait(&h, end, &ev) == EV_ERROR)
			break;
	closed = h.closed;
	*held_ns = rb_now_ns() - start;
	h_close(&h);
	return closed;
}

int
starve(unsigned seconds)
{
	uint64_t end = deadline_after_s(seconds), held, longest = 0;
	unsigned n = 0, nclosed = 0;
	int r;

	raw.cur = "starve";
	raw.starving = 1;
	while (rb_now_ns() < end) {
		r = starve_once(end, &held);
		if (r < 0)
			return 1;
		n++;
		nclosed += (unsigned)r;
		if (held > longest)
			longest = held;
	}
	printf("starve: %u connections, the target closed %u of them, the longest held %.1f s\n",
	       n, nclosed, (double)longest / 1e9);
	return 0;
}

/* ---- churn: many short hostile connections ---- */

#define H_CHURN_BATCH 8

/* N connections, H_CHURN_BATCH open at a time, each ending one of four
 * ways: destroyed before the accept, disconnected without a HELLO, a
 * garbage HELLO, or a HELLO and a disconnect before its reply is read.
 * Refusals are fine (a target may limit connections); only a local
 * failure to set one up makes it exit 1. */
int
churn(unsigned n)
{
	static struct hconn hs[H_CHURN_BATCH];
	uint8_t priv[sizeof(struct rb_conn_priv)];
	char msg[sizeof(struct rb_hello)], why[128];
	unsigned tried = 0, est = 0, rej = 0, failed = 0, i, k;
	enum conn_result cr;

	raw.cur = "churn";
	rb_conn_priv_encode(priv, RB_OK, H_CM_QD);
	while (tried < n) {
		for (k = 0; k < H_CHURN_BATCH && tried < n; k++, tried++) {
			struct hconn *h = &hs[k];

			if (h_open(h) < 0)
				return 1;
			if (tried % 4 == 0) {
				if (h_connect_nowait(h, H_CM_QD) != 0)
					failed++;
				continue;   /* destroyed below, without waiting */
			}
			cr = h_connect_raw(h, priv, sizeof(priv), why, sizeof(why));
			if (cr == CONN_OK)
				est++;
			else if (cr == CONN_REJECTED)
				rej++;
			else
				failed++;
			if (cr != CONN_OK)
				continue;
			if (tried % 4 == 2) {
				memset(msg, 0x5a, sizeof(msg));
				h_send(h, msg, sizeof(msg));
			} else if (tried % 4 == 3) {
				h_send(h, msg, hello_msg(msg, opt.export_name, 8, H_MAX_IO));
			}
		}
		for (i = 0; i < k; i++)
			h_close(&hs[i]);
	}
	printf("churn: %u connections tried, %u established, %u rejected, %u failed\n",
	       tried, est, rej, failed);
	return 0;
}

/* ---- hold: connections held open before authentication ---- */

struct hold_counts {
	unsigned tried, est, rej, busy, failed, closed;
};

static void
hold_print(const struct hold_counts *n, const char *phase)
{
	printf("hold: %u connections tried, %u established, %u refused (busy %u), "
	       "%u failed; the target closed %u; %s\n", n->tried, n->est, n->rej, n->busy,
	       n->failed, n->closed, phase);
}

/* Poll every held connection once (no waiting): count the ones the target
 * closed, and close them here too. */
static void
hold_reap(struct hconn *hs, unsigned count, struct hold_counts *n)
{
	struct hev ev;
	unsigned i;

	for (i = 0; i < count; i++) {
		struct hconn *h = &hs[i];

		if (h->id == NULL)
			continue;
		while (h_wait(h, 0, &ev) == EV_MSG)
			;   /* a CHALLENGE: never answered */
		if (h->closed) {
			n->closed++;
			h_close(h);
		}
	}
}

/* A HELLO as a current initiator sends it to an export with a secret
 * (RB_HELLO_AUTH_BIND: the target then answers with CHALLENGE, not EPROTO). */
static size_t
hold_hello_msg(void *buf)
{
	struct rb_hello_info hi;

	memset(&hi, 0, sizeof(hi));
	hi.flags = RB_HELLO_AUTH_BIND;
	hi.queue_depth = 8;
	hi.max_io = H_MAX_IO;
	memset(hi.nonce, 0xa5, sizeof(hi.nonce));
	snprintf(hi.export_name, sizeof(hi.export_name), "%s", opt.export_name);
	return rb_hello_encode(buf, &hi);
}

int
hold(unsigned count, unsigned seconds)
{
	uint8_t priv[sizeof(struct rb_conn_priv)];
	char msg[sizeof(struct rb_hello)], why[128];
	struct hold_counts n;
	struct hconn *hs;
	uint64_t end;
	unsigned i;
	int rc = 0;

	raw.cur = "hold";
	raw.lean = 1;
	memset(&n, 0, sizeof(n));
	hs = calloc(count, sizeof(*hs));
	if (hs == NULL)
		return verdict(0, "out of memory for %u connections", count);
	rb_conn_priv_encode(priv, RB_OK, H_HOLD_CM_QD);
	end = deadline_after_s(seconds);
	for (i = 0; i < count; i++) {
		struct hconn *h = &hs[i];
		enum conn_result cr;

		n.tried++;
		if (h_open(h) < 0) {
			rc = 1;
			break;
		}
		cr = h_connect_raw(h, priv, sizeof(priv), why, sizeof(why));
		if (cr == CONN_OK) {
			n.est++;
			if (i % 2 == 1 && h_send(h, msg, hold_hello_msg(msg)) < 0)
				debug("connection %u: cannot post the HELLO", i);
			continue;
		}
		if (cr == CONN_REJECTED) {
			n.rej++;
			n.busy += strcmp(why, rb_error_name(RB_EBUSY)) == 0;
		} else {
			n.failed++;
		}
		debug("connection %u: %s", i, why);
		h_close(h);
	}
	hold_reap(hs, count, &n);
	hold_print(&n, "holding");
	while (rb_now_ns() < end) {
		struct pollfd pfd = { .fd = -1 };

		hold_reap(hs, count, &n);
		poll(&pfd, 0, 100);
	}
	hold_reap(hs, count, &n);
	for (i = 0; i < count; i++)
		if (hs[i].id != NULL)
			h_close(&hs[i]);
	free(hs);
	hold_print(&n, "done");
	return rc;
}

