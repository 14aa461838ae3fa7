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

/* Fake target -> main, and back, under lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int listening, go_stale, stale_done, target_failed;

static void
set_flag(int *flag)
{
	pthread_mutex_lock(&lock);
	*flag = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static int
wait_flag(int *flag)
{
	struct timespec ts;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += FAKE_DEADLINE_S;
	pthread_mutex_lock(&lock);
	while (!*flag && !target_failed && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&cond, &lock, &ts);
	r = *flag ? 0 : -1;
	pthread_mutex_unlock(&lock);
	return r;
}

static void
tfail(const char *what)
{
	fprintf(stderr, "rdmablk-mw-check: fake target: %s: %s\n", what, strerror(errno));
	pthread_mutex_lock(&lock);
	target_failed = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

/* Static: the verbs objects stay reachable until the process exits.  Its
 * data area holds the good data, then the stale bytes. */
static struct fake_target fake_mem;

static void *
fake_target(void *arg)
{
	struct fake_target *f = &fake_mem;
	uint8_t *data = f->data, *stale = f->data + LEN;
	const char *what = "";
	struct rb_hello_info h;
	struct rb_req_info req;
	struct rb_rep_info rep;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	const char *why = "";
	uint32_t len;
	unsigned idx;

	(void)arg;
	if (fake_listen(f, addr, port, &what) < 0) {
		tfail(what);
		return NULL;
	}
	set_flag(&listening);
	if (fake_accept(f, &what) < 0) {
		tfail(what);
		return NULL;
	}
	memset(data, 0xab, LEN);
	memset(stale, 0xee, LEN);
	/* HELLO -> HELLO_REPLY */
	if (fake_hello(f, 0, &h, &why) < 0) {
		fprintf(stderr, "rdmablk-mw-check: fake target: HELLO: %s\n", why);
		tfail("HELLO");
		return NULL;
	}
	printf("fake target: HELLO flags %#x (SEND_INV %s)\n", h.flags,
	       h.flags & RB_HELLO_SEND_INV ? "yes" : "no");
	/* REQUEST (READ) -> RDMA WRITE + reply */
	if (fake_recv(f, &len, &idx) < 0 || rb_request_decode(f->recv[idx], len, &req, &why) < 0 ||
	    req.opcode != RB_OP_READ || req.length > LEN) {
		fprintf(stderr, "rdmablk-mw-check: fake target: REQUEST: %s\n", why);
		tfail("REQUEST");
		return NULL;
	}
	printf("fake target: READ %u bytes to addr %#llx rkey %#x\n", req.length,
	       (unsigned long long)req.addr, req.rkey);
	fake_repost(f, idx);
	memset(&sge, 0, sizeof(sge));
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)data;
	sge.length = req.length;
	sge.lkey = f->data_mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = req.addr;
	wr.wr.rdma.rkey = req.rkey;
	if (fake_send(f, &wr) < 0 || f->send_status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rdmablk-mw-check: fake target: first write: %s\n",
			ibv_wc_status_str(f->send_status));
		tfail("first RDMA WRITE");
		return NULL;
	}
	memset(&rep, 0, sizeof(rep));
	rep.tag = req.tag;
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)f->send;
	sge.length = (uint32_t)rb_reply_encode(f->send, &rep);
	sge.lkey = f->send_mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	if (!no_inv && (h.flags & RB_HELLO_SEND_INV)) {
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = req.rkey;
	}
	printf("fake target: reply with %s\n", wr.opcode == IBV_WR_SEND_WITH_INV ?
	       "SEND_WITH_INV" : "a plain SEND");
	if (fake_send(f, &wr) < 0 || f->send_status != IBV_WC_SUCCESS) {
		tfail("reply");
		return NULL;
	}
	/* After the initiator saw the reply: the old key again. */
	if (wait_flag(&go_stale) < 0)
		return NULL;
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)stale;
	sge.length = req.length;
	sge.lkey = f->data_mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = req.addr;
	wr.wr.rdma.rkey = req.rkey;
	if (fake_send(f, &wr) < 0) {
		tfail("stale RDMA WRITE");
		return NULL;
	}
	set_flag(&stale_done);
	return NULL;
}

static void
log_fn(enum rb_log_level level, const char *msg)
{
	fprintf(stderr, "rdmablk-mw-check: initiator: %s: %s\n",
		rb_log_level_name(level), msg);
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
	struct rb_conn_cfg cfg;
	struct rb_stats stats;
	struct rb_conn *conn = NULL;
	struct rb_io io;
	pthread_t th;
	char errbuf[RB_ERRBUF] = "";
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
	rb_set_log(log_fn);
	if (pthread_create(&th, NULL, fake_target, NULL) != 0 || wait_flag(&listening) < 0)
		return 1;

	memset(&cfg, 0, sizeof(cfg));
	memset(&stats, 0, sizeof(stats));
	snprintf(cfg.host, sizeof(cfg.host), "%s", addr);
	cfg.port = port;
	snprintf(cfg.export_name, sizeof(cfg.export_name), "mw");
	cfg.queue_depth = 2;
	cfg.max_io = 65536;
	cfg.stats = &stats;
	cfg.mr_static = mr_static;
	r = rb_conn_create(&cfg, 0, rb_now_ns() + FAKE_DEADLINE_S * 1000000000ull, &conn, errbuf);
	if (r < 0) {
		fprintf(stderr, "rdmablk-mw-check: connect: %s\n", errbuf);
		return 1;
	}
	printf("initiator: %s\n", conn->use_mw ? "memory windows" : "static pool MR");
	memset(&io, 0, sizeof(io));
	io.opcode = RB_OP_READ;
	io.offset = 0;
	io.length = LEN;
	io.rbuf = buf;
	io.copy_len = LEN;
	r = rb_conn_request(conn, &io, rb_now_ns() + FAKE_DEADLINE_S * 1000000000ull);
	memset(want, 0xab, sizeof(want));
	if (r < 0 || memcmp(buf, want, LEN) != 0) {
		fprintf(stderr, "rdmablk-mw-check: READ failed (%d) or wrong data\n", r);
		return 1;
	}
	printf("initiator: READ returned the right data\n");

	set_flag(&go_stale);
	if (wait_flag(&stale_done) < 0) {
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
