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

#include "internal.h"
#include "raw-client.h"
#include "util.h"

#define LEN        4096
#define NRECV      4
#define DEADLINE_S 60

static const char *addr;
static uint16_t port = 10899;
static int mr_static, no_inv;

/* Fake target -> main, and back, under lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int listening, go_stale, stale_done, target_failed;
static enum ibv_wc_status stale_status = IBV_WC_SUCCESS;

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
	ts.tv_sec += DEADLINE_S;
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

struct fake {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *recv_mr, *send_mr, *data_mr;
	struct raw_stash stash;     /* receives seen while waiting for a send */
	uint8_t recv[NRECV][RB_MSG_BUF_SIZE];
	uint8_t send[RB_CTRL_MSG_MAX];
	uint8_t data[LEN], stale[LEN];
};

static int
post_recv(struct fake *f, unsigned i)
{
	return raw_post_recv(f->id->qp, i, f->recv[i], RB_MSG_BUF_SIZE, f->recv_mr->lkey);
}

/* Wait for a receive. */
static int
recv_msg(struct fake *f, uint32_t *len, unsigned *idx)
{
	struct ibv_wc wc;

	if (raw_poll_kind(f->cq, &f->stash, 1, &wc, deadline_after_s(DEADLINE_S)) < 0)
		return -1;
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rdmablk-mw-check: fake target: wc %s\n",
			ibv_wc_status_str(wc.status));
		return -1;
	}
	*len = wc.byte_len;
	*idx = (unsigned)wc.wr_id;
	return 0;
}

static int
post_send(struct fake *f, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(f->id->qp, wr, &bad) != 0 ||
	    raw_poll_kind(f->cq, &f->stash, 0, &wc, deadline_after_s(DEADLINE_S)) < 0)
		return -1;
	stale_status = wc.status;
	return 0;
}

/* Static: the verbs objects stay reachable until the process exits. */
static struct fake fake_mem;
static struct rdma_event_channel *ch;
static struct rdma_cm_id *listen_id;

static void *
fake_target(void *arg)
{
	struct fake *f = &fake_mem;
	struct rdma_cm_event *ev;
	struct sockaddr_storage ss;
	socklen_t sslen;
	const char *what = "ibv_alloc_pd";
	struct rdma_conn_param param;
	uint8_t priv[sizeof(struct rb_conn_priv)];
	struct rb_hello_info h;
	struct rb_export_info e;
	struct rb_req_info req;
	struct rb_rep_info rep;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	const char *why = "";
	uint32_t len;
	unsigned i, idx;

	(void)arg;
	ch = rdma_create_event_channel();
	if (ch == NULL || rb_sockaddr_parse(addr, port, &ss, &sslen) < 0 ||
	    rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_bind_addr(listen_id, (struct sockaddr *)&ss) != 0 ||
	    rdma_listen(listen_id, 1) != 0) {
		tfail("listen");
		return NULL;
	}
	set_flag(&listening);
	if (rdma_get_cm_event(ch, &ev) != 0 || ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		tfail("no CONNECT_REQUEST");
		return NULL;
	}
	f->id = ev->id;
	rdma_ack_cm_event(ev);
	f->pd = ibv_alloc_pd(f->id->verbs);
	if (f->pd == NULL || raw_qp_create(f->id, f->pd, NULL, 8, NRECV, 64, &f->cq, &what) < 0) {
		tfail(what);
		return NULL;
	}
	memset(f->data, 0xab, LEN);
	memset(f->stale, 0xee, LEN);
	f->recv_mr = ibv_reg_mr(f->pd, f->recv, sizeof(f->recv), IBV_ACCESS_LOCAL_WRITE);
	f->send_mr = ibv_reg_mr(f->pd, f->send, sizeof(f->send), 0);
	f->data_mr = ibv_reg_mr(f->pd, f->data, sizeof(f->data) + sizeof(f->stale),
				IBV_ACCESS_LOCAL_WRITE);
	if (f->recv_mr == NULL || f->send_mr == NULL || f->data_mr == NULL) {
		tfail("ibv_reg_mr");
		return NULL;
	}
	for (i = 0; i < NRECV; i++)
		if (post_recv(f, i) != 0) {
			tfail("ibv_post_recv");
			return NULL;
		}
	rb_conn_priv_encode(priv, RB_OK, 2);
	memset(&param, 0, sizeof(param));
	param.private_data = priv;
	param.private_data_len = sizeof(priv);
	param.initiator_depth = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_accept(f->id, &param) != 0) {
		tfail("rdma_accept");
		return NULL;
	}
	/* HELLO -> HELLO_REPLY */
	if (recv_msg(f, &len, &idx) < 0 || rb_hello_decode(f->recv[idx], len, &h, &why) < 0) {
		fprintf(stderr, "rdmablk-mw-check: fake target: HELLO: %s\n", why);
		tfail("HELLO");
		return NULL;
	}
	printf("fake target: HELLO flags %#x (SEND_INV %s)\n", h.flags,
	       h.flags & RB_HELLO_SEND_INV ? "yes" : "no");
	post_recv(f, idx);
	memset(&e, 0, sizeof(e));
	e.status = RB_OK;
	e.queue_depth = 2;
	e.size = 1 << 20;
	e.min_block = 512;
	e.pref_block = 4096;
	e.max_io = h.max_io < 65536 ? h.max_io : 65536;
	e.inline_max = 0;
	memset(&sge, 0, sizeof(sge));
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)f->send;
	sge.length = (uint32_t)rb_hello_reply_encode(f->send, &e);
	sge.lkey = f->send_mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	if (post_send(f, &wr) < 0 || stale_status != IBV_WC_SUCCESS) {
		tfail("HELLO_REPLY");
		return NULL;
	}
	/* REQUEST (READ) -> RDMA WRITE + reply */
	if (recv_msg(f, &len, &idx) < 0 || rb_request_decode(f->recv[idx], len, &req, &why) < 0 ||
	    req.opcode != RB_OP_READ || req.length > LEN) {
		fprintf(stderr, "rdmablk-mw-check: fake target: REQUEST: %s\n", why);
		tfail("REQUEST");
		return NULL;
	}
	printf("fake target: READ %u bytes to addr %#llx rkey %#x\n", req.length,
	       (unsigned long long)req.addr, req.rkey);
	post_recv(f, idx);
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)f->data;
	sge.length = req.length;
	sge.lkey = f->data_mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = req.addr;
	wr.wr.rdma.rkey = req.rkey;
	if (post_send(f, &wr) < 0 || stale_status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rdmablk-mw-check: fake target: first write: %s\n",
			ibv_wc_status_str(stale_status));
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
	if (post_send(f, &wr) < 0 || stale_status != IBV_WC_SUCCESS) {
		tfail("reply");
		return NULL;
	}
	/* After the initiator saw the reply: the old key again. */
	if (wait_flag(&go_stale) < 0)
		return NULL;
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)f->stale;
	sge.length = req.length;
	sge.lkey = f->data_mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = req.addr;
	wr.wr.rdma.rkey = req.rkey;
	if (post_send(f, &wr) < 0) {
		tfail("stale RDMA WRITE");
		return NULL;
	}
	set_flag(&stale_done);
	/* Leak the verbs objects: the process exits right after. */
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
	r = rb_conn_create(&cfg, 0, rb_now_ns() + DEADLINE_S * 1000000000ull, &conn, errbuf);
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
	r = rb_conn_request(conn, &io, rb_now_ns() + DEADLINE_S * 1000000000ull);
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
	printf("stale write: %s; initiator memory: %s\n", ibv_wc_status_str(stale_status),
	       modified ? "MODIFIED" : "untouched");
	if (mr_static)
		ok = stale_status == IBV_WC_SUCCESS && modified;
	else
		ok = stale_status == IBV_WC_REM_ACCESS_ERR && !modified && conn->use_mw;
	rb_conn_unref(conn);
	pthread_join(th, NULL);
	return ok ? 0 : 1;
}
