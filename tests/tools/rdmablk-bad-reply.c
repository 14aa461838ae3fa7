/* rdmablk-bad-reply: does the initiator refuse a READ reply that carries
 * data it did not ask for?  One process plays both sides, as
 * rdmablk-mw-check does:
 *
 *   - a fake target (tests/tools/fake-target.h, a thread) that grants
 *     inline reads (READ_INLINE, and READ_IMM in the imm modes), receives
 *     one READ and answers it with a reply carrying data, of the mode's
 *     length: a REPLY with RB_REP_DATA, or in the imm modes the data alone
 *     in a SEND with immediate (the tag's low half);
 *   - the real initiator library (internals, initiator/internal.h): one
 *     connection, one READ through its pool into a buffer filled with 0x11.
 *
 *   rdmablk-bad-reply -a ADDR [-p PORT] -m MODE
 *
 *   good     a 4 KiB READ goes inline, and the reply carries its 4096
 *            bytes: the control, the fake target's reply is accepted;
 *   unasked  a 64 KiB READ goes by RDMA WRITE (it carries a key), and the
 *            reply carries 64 bytes of data all the same (the fake target
 *            writes nothing into the initiator's memory);
 *   short    a 4 KiB READ goes inline, and the reply carries 100 bytes;
 *   imm      READ_IMM granted, and good's reply as the data alone: the
 *            control of the two below, accepted;
 *   imm-unasked    READ_IMM granted, and unasked's reply as the data alone;
 *   imm-ungranted  READ_IMM not granted, and imm's reply all the same;
 *   imm-stale      imm's reply with the wrong generation bits in the
 *                  immediate: a reply to no outstanding request, dropped,
 *                  and the READ fails when it times out (STALE_S seconds);
 *   imm-write      READ_IMM granted, and unasked's READ answered with an
 *                  RDMA WRITE with immediate of 64 bytes through its key
 *                  (the tag's low half in the immediate): it consumes a
 *                  receive, but its data is not in the receive buffer.
 *
 * Prints "READ: OK|FAILED (ERR); caller's buffer: the data|untouched|CHANGED;
 * connection: up|closed by the initiator".  Exit 0 when good or imm
 * returned the data, when imm-stale's READ failed with the caller's
 * buffer untouched, or when the others failed the READ, closed the
 * connection and left the caller's buffer untouched; 1 otherwise. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake-target.h"
#include "internal.h"
#include "util.h"

#define BIG     65536
#define UNASKED 64
#define SHORT   100
#define STALE_S 3

enum mode { MODE_GOOD, MODE_UNASKED, MODE_SHORT, MODE_IMM, MODE_IMM_UNASKED,
	    MODE_IMM_UNGRANTED, MODE_IMM_STALE, MODE_IMM_WRITE };
static const char *const mode_names[] = {
	[MODE_GOOD] = "good", [MODE_UNASKED] = "unasked", [MODE_SHORT] = "short",
	[MODE_IMM] = "imm", [MODE_IMM_UNASKED] = "imm-unasked",
	[MODE_IMM_UNGRANTED] = "imm-ungranted", [MODE_IMM_STALE] = "imm-stale",
	[MODE_IMM_WRITE] = "imm-write",
};

static const char *addr;
static uint16_t port = 10897;
static enum mode mode = MODE_GOOD;
static int listening, replied, hung_up, reply_seen;   /* fake_set, fake_wait */

/* The READ is BIG bytes, by RDMA WRITE (it carries a key), and the reply
 * carries UNASKED bytes all the same; otherwise it is an inline 4 KiB. */
static int
mode_unasked(void)
{
	return mode == MODE_UNASKED || mode == MODE_IMM_UNASKED || mode == MODE_IMM_WRITE;
}

/* The fake target grants READ_IMM. */
static int
mode_grants_imm(void)
{
	return mode == MODE_IMM || mode == MODE_IMM_UNASKED || mode == MODE_IMM_STALE ||
	       mode == MODE_IMM_WRITE;
}

/* The reply's data length for a READ of req_len bytes, by mode. */
static uint32_t
data_len(uint32_t req_len)
{
	if (mode_unasked())
		return UNASKED;
	return mode == MODE_SHORT ? SHORT : req_len;
}

/* The reply is the data alone, with immediate. */
static int
mode_imm(void)
{
	return mode == MODE_IMM || mode == MODE_IMM_UNASKED || mode == MODE_IMM_UNGRANTED ||
	       mode == MODE_IMM_STALE || mode == MODE_IMM_WRITE;
}

/* The fake target's reply is correct: the READ returns its data. */
static int
mode_good(void)
{
	return mode == MODE_GOOD || mode == MODE_IMM;
}

/* Static: the verbs objects stay reachable until the process exits. */
static struct fake_target fake_mem;

static void *
fake_target(void *arg)
{
	struct fake_target *f = &fake_mem;
	struct rb_hello_info h;
	struct rb_req_info req;
	struct rb_rep_info rep;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	uint32_t n;

	(void)arg;
	if (fake_open(f, addr, port, &listening,
		      FAKE_READ_INLINE | (mode_grants_imm() ? FAKE_READ_IMM : 0), &h) < 0 ||
	    fake_read_request(f, BIG, &req) < 0)
		return NULL;
	printf("fake target: READ of %u bytes, %s\n", req.length,
	       req.flags & RB_REQ_INLINE ? "inline" : "by RDMA WRITE (it has a key)");
	n = data_len(req.length);
	memset(&rep, 0, sizeof(rep));
	rep.tag = req.tag;
	if (mode == MODE_IMM_WRITE) {
		memset(f->send, 0xab, n);
		fake_wr(&wr, &sge, f->send, n, f->send_mr->lkey, IBV_WR_RDMA_WRITE_WITH_IMM);
		wr.wr.rdma.remote_addr = req.addr;
		wr.wr.rdma.rkey = req.rkey;
		wr.imm_data = rb_reply_imm(req.tag);
	} else if (mode_imm()) {
		memset(f->send, 0xab, n);
		fake_wr(&wr, &sge, f->send, n, f->send_mr->lkey, IBV_WR_SEND_WITH_IMM);
		/* imm-stale: another generation of the same slot */
		wr.imm_data = rb_reply_imm(mode == MODE_IMM_STALE ? req.tag ^ 0x10000 : req.tag);
	} else {
		memset((uint8_t *)f->send + sizeof(struct rb_reply), 0xab, n);
		fake_wr(&wr, &sge, f->send, (uint32_t)rb_reply_data_encode(f->send, &rep, n),
			f->send_mr->lkey, IBV_WR_SEND);
	}
	printf("fake target: reply with %u bytes of data%s\n", n,
	       mode == MODE_IMM_WRITE ? ", an RDMA WRITE with immediate" :
	       mode_imm() ? " alone, with immediate" : "");
	if (fake_send(f, &wr) < 0 || f->send_status != IBV_WC_SUCCESS) {
		fake_fail("reply not sent");
		return NULL;
	}
	fake_set(&replied);
	/* A refused reply: the initiator closes the connection. */
	if (!mode_good() && mode != MODE_IMM_STALE && fake_wait_disconnect(f, FAKE_DEADLINE_S))
		fake_set(&hung_up);
	fake_set(&reply_seen);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct rb_stats stats;
	struct rb_conn *conn = NULL;
	pthread_t th;
	static uint8_t buf[BIG], want[BIG];
	uint32_t len;
	uint64_t v;
	const char *state;
	int opt, r, ok, touched;
	size_t i;

	while ((opt = getopt(argc, argv, "a:p:m:")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p':
			if (rb_parse_uint(optarg, 1, 65535, &v) < 0)
				return 2;
			port = (uint16_t)v;
			break;
		case 'm':
			for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
				if (strcmp(optarg, mode_names[i]) == 0)
					break;
			if (i == sizeof(mode_names) / sizeof(mode_names[0])) {
				fprintf(stderr, "rdmablk-bad-reply: unknown mode '%s'\n", optarg);
				return 2;
			}
			mode = (enum mode)i;
			break;
		default:
			fprintf(stderr, "usage: rdmablk-bad-reply -a ADDR [-p PORT] -m good|unasked|"
				"short|imm|imm-unasked|imm-ungranted|imm-stale|imm-write\n");
			return 2;
		}
	}
	if (addr == NULL)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (fake_start(fake_target, &th, &listening) < 0 ||
	    fake_initiator("rdmablk-bad-reply", addr, port, BIG, 0, &stats, &conn) < 0)
		return 1;
	printf("initiator: inline reads %s, with immediate %s\n",
	       conn->read_inline ? "granted" : "NOT granted",
	       conn->read_imm ? "granted" : "NOT granted");
	len = mode_unasked() ? BIG : RB_READ_INLINE_MAX;
	memset(buf, 0x11, sizeof(buf));
	r = fake_read(conn, buf, len, mode == MODE_IMM_STALE ? STALE_S : FAKE_DEADLINE_S);
	if (fake_wait(&replied) < 0) {
		fprintf(stderr, "rdmablk-bad-reply: the fake target did not reply\n");
		return 1;
	}
	fake_wait(&reply_seen);
	memset(want, 0xab, len);
	touched = 0;
	for (v = 0; v < sizeof(buf); v++)
		touched |= buf[v] != 0x11;
	if (!touched)
		state = "untouched";
	else if (memcmp(buf, want, len) == 0)
		state = "the data";
	else
		state = "CHANGED";
	printf("READ: %s (%s); caller's buffer: %s; connection: %s\n", r < 0 ? "FAILED" : "OK",
	       r < 0 ? strerror(-r) : "no error", state,
	       hung_up ? "closed by the initiator" : "up");
	printf("initiator: %llu replies with immediate\n",
	       (unsigned long long)stats.imm_read_replies);
	if (mode_good())
		ok = r == 0 && strcmp(state, "the data") == 0 && conn->read_inline &&
		     stats.inline_read_bytes == len &&
		     stats.imm_read_replies == (mode == MODE_IMM ? 1u : 0u);
	else if (mode == MODE_IMM_STALE)
		ok = r < 0 && !touched && conn->read_imm &&
		     stats.imm_read_replies == 0;
	else
		ok = r < 0 && !touched && hung_up && conn->read_inline &&
		     conn->read_imm == mode_grants_imm();
	rb_conn_unref(conn);
	pthread_join(th, NULL);
	return ok ? 0 : 1;
}
