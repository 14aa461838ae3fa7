/* rdmablk-mw-check: does a key from a completed request still open the
 * initiator's memory?  One process plays both sides:
 *
 *   - a hostile fake target (librdmacm, a thread): answers HELLO, receives
 *     one READ request, records its addr/rkey, RDMA WRITEs the data and
 *     replies (with SEND_WITH_INV of the request's key when the initiator
 *     asked for it, or a plain SEND with -n, so the initiator must
 *     invalidate locally); then, after the initiator saw the reply, it
 *     RDMA WRITEs 0xEE bytes again with the old addr/rkey;
 *   - the real initiator library (internals, initiator/internal.h): one
 *     connection, one READ, then checks its whole data pool for 0xEE.
 *
 *   rdmablk-mw-check -a ADDR [-p PORT] [-M window|static] [-n]
 *
 * Prints one line "stale write: STATUS; initiator memory: untouched|MODIFIED".
 * Exit 0 when the stale write failed with a remote access error and the
 * initiator's memory was untouched (window), or, with -M static, when the
 * write succeeded and landed (the documented risk of the static MR); 1
 * otherwise. */
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

#define LEN        4096

static const char *addr;
static uint16_t port = 10899;
static int mr_static, no_inv;
static int listening, go_stale, stale_done;   /* fake_set, fake_wait */

/* Static: the verbs objects stay reachable until the process exits.  Its
 * data area holds the good data, then the stale bytes. */
static struct fake_target fake_mem;

static void *
fake_target(void *arg)
{
	struct fake_target *f = &fake_mem;
	uint8_t *data = f->data, *stale = f->data + LEN;
	struct rb_hello_info h;
	struct rb_req_info req;
	struct rb_rep_info rep;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	(void)arg;
	memset(data, 0xab, LEN);
	memset(stale, 0xee, LEN);
	/* HELLO -> HELLO_REPLY */
	if (fake_open(f, addr, port, &listening, 0, &h) < 0)
		return NULL;
	printf("fake target: HELLO flags %#x (SEND_INV %s)\n", h.flags,
	       h.flags & RB_HELLO_SEND_INV ? "yes" : "no");
	/* REQUEST (READ) -> RDMA WRITE + reply */
	if (fake_read_request(f, LEN, &req) < 0)
		return NULL;
	printf("fake target: READ %u bytes to addr %#llx rkey %#x\n", req.length,
	       (unsigned long long)req.addr, req.rkey);
	fake_wr(&wr, &sge, data, req.length, f->data_mr->lkey, IBV_WR_RDMA_WRITE);
	wr.wr.rdma.remote_addr = req.addr;
	wr.wr.rdma.rkey = req.rkey;
	if (fake_send(f, &wr) < 0 || f->send_status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rdmablk-mw-check: fake target: first write: %s\n",
			ibv_wc_status_str(f->send_status));
		fake_fail("first RDMA WRITE");
		return NULL;
	}
	memset(&rep, 0, sizeof(rep));
	rep.tag = req.tag;
	fake_wr(&wr, &sge, f->send, (uint32_t)rb_reply_encode(f->send, &rep), f->send_mr->lkey,
		IBV_WR_SEND);
	if (!no_inv && (h.flags & RB_HELLO_SEND_INV)) {
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = req.rkey;
	}
	printf("fake target: reply with %s\n", wr.opcode == IBV_WR_SEND_WITH_INV ?
	       "SEND_WITH_INV" : "a plain SEND");
	if (fake_send(f, &wr) < 0 || f->send_status != IBV_WC_SUCCESS) {
		fake_fail("reply");
		return NULL;
	}
	/* After the initiator saw the reply: the old key again. */
	if (fake_wait(&go_stale) < 0)
		return NULL;
	fake_wr(&wr, &sge, stale, req.length, f->data_mr->lkey, IBV_WR_RDMA_WRITE);
	wr.wr.rdma.remote_addr = req.addr;
	wr.wr.rdma.rkey = req.rkey;
	if (fake_send(f, &wr) < 0) {
		fake_fail("stale RDMA WRITE");
		return NULL;
	}
	fake_set(&stale_done);
	return NULL;
}

static int
pool_has_stale(const struct rb_conn *conn)
{
	const uint8_t *p = conn->data.base;
	size_t i;

	for (i = 0; i < conn->data.size; i++)
		if (p[i] == 0xee)
			return 1;
	return 0;
}

int
main(int argc, char **argv)
{
	struct rb_stats stats;
	struct rb_conn *conn = NULL;
	pthread_t th;
	uint8_t buf[LEN], want[LEN];
	uint64_t v;
	int opt, r, modified, ok;

	while ((opt = getopt(argc, argv, "a:p:M:n")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p':
			if (rb_parse_uint(optarg, 1, 65535, &v) < 0)
				return 2;
			port = (uint16_t)v;
			break;
		case 'M': mr_static = strcmp(optarg, "static") == 0; break;
		case 'n': no_inv = 1; break;
		default:
			fprintf(stderr, "usage: rdmablk-mw-check -a ADDR [-p PORT] "
				"[-M window|static] [-n]\n");
			return 2;
		}
	}
	if (addr == NULL)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (fake_start(fake_target, &th, &listening) < 0 ||
	    fake_initiator("rdmablk-mw-check", addr, port, 65536, mr_static, &stats, &conn) < 0)
		return 1;
	printf("initiator: %s\n", conn->use_mw ? "memory windows" : "static pool MR");
	r = fake_read(conn, buf, LEN, FAKE_DEADLINE_S);
	memset(want, 0xab, sizeof(want));
	if (r < 0 || memcmp(buf, want, LEN) != 0) {
		fprintf(stderr, "rdmablk-mw-check: READ failed (%d) or wrong data\n", r);
		return 1;
	}
	printf("initiator: READ returned the right data\n");

	fake_set(&go_stale);
	if (fake_wait(&stale_done) < 0) {
		fprintf(stderr, "rdmablk-mw-check: the fake target did not finish\n");
		return 1;
	}
	modified = pool_has_stale(conn) || memcmp(buf, want, LEN) != 0;
	printf("stale write: %s; initiator memory: %s\n", ibv_wc_status_str(fake_mem.send_status),
	       modified ? "MODIFIED" : "untouched");
	if (mr_static)
		ok = fake_mem.send_status == IBV_WC_SUCCESS && modified;
	else
		ok = fake_mem.send_status == IBV_WC_REM_ACCESS_ERR && !modified && conn->use_mw;
	rb_conn_unref(conn);
	pthread_join(th, NULL);
	return ok ? 0 : 1;
}
