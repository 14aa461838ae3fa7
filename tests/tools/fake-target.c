/* fake-target: the passive side of one rdmablk connection, for test tools
 * (tests/tools/fake-target.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fake-target.h"
#include "util.h"

int
fake_listen(struct fake_target *f, const char *addr, uint16_t port, const char **what)
{
	struct sockaddr_storage ss;
	socklen_t sslen;

	*what = "rdma_create_event_channel";
	f->ch = rdma_create_event_channel();
	if (f->ch == NULL)
		return -1;
	*what = "the address";
	if (rb_sockaddr_parse(addr, port, &ss, &sslen) < 0)
		return -1;
	*what = "rdma_create_id";
	if (rdma_create_id(f->ch, &f->listen_id, NULL, RDMA_PS_TCP) != 0)
		return -1;
	*what = "rdma_bind_addr";
	if (rdma_bind_addr(f->listen_id, (struct sockaddr *)&ss) != 0)
		return -1;
	*what = "rdma_listen";
	return rdma_listen(f->listen_id, 1) != 0 ? -1 : 0;
}

int
fake_repost(struct fake_target *f, unsigned idx)
{
	return raw_post_recv(f->id->qp, idx, f->recv[idx], RB_MSG_BUF_SIZE, f->recv_mr->lkey);
}

int
fake_accept(struct fake_target *f, const char **what)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param param;
	uint8_t priv[sizeof(struct rb_conn_priv)];
	unsigned i;

	*what = "no CONNECT_REQUEST";
	if (rdma_get_cm_event(f->ch, &ev) != 0)
		return -1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(ev);
		return -1;
	}
	f->id = ev->id;
	rdma_ack_cm_event(ev);
	*what = "ibv_alloc_pd";
	f->pd = ibv_alloc_pd(f->id->verbs);
	if (f->pd == NULL || raw_qp_create(f->id, f->pd, NULL, 8, FAKE_NRECV, 64, &f->cq, what) < 0)
		return -1;
	*what = "ibv_reg_mr";
	f->recv_mr = ibv_reg_mr(f->pd, f->recv, sizeof(f->recv), IBV_ACCESS_LOCAL_WRITE);
	f->send_mr = ibv_reg_mr(f->pd, f->send, sizeof(f->send), 0);
	f->data_mr = ibv_reg_mr(f->pd, f->data, sizeof(f->data), IBV_ACCESS_LOCAL_WRITE);
	if (f->recv_mr == NULL || f->send_mr == NULL || f->data_mr == NULL)
		return -1;
	*what = "ibv_post_recv";
	for (i = 0; i < FAKE_NRECV; i++)
		if (fake_repost(f, i) != 0)
			return -1;
	rb_conn_priv_encode(priv, RB_OK, 2);
	memset(&param, 0, sizeof(param));
	param.private_data = priv;
	param.private_data_len = sizeof(priv);
	param.initiator_depth = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	*what = "rdma_accept";
	return rdma_accept(f->id, &param) != 0 ? -1 : 0;
}

int
fake_recv(struct fake_target *f, uint32_t *len, unsigned *idx)
{
	struct ibv_wc wc;

	if (raw_poll_kind(f->cq, &f->stash, 1, &wc, deadline_after_s(FAKE_DEADLINE_S)) < 0) {
		fprintf(stderr, "fake target: no message within %d s\n", FAKE_DEADLINE_S);
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "fake target: receive: %s\n", ibv_wc_status_str(wc.status));
		return -1;
	}
	*len = wc.byte_len;
	*idx = (unsigned)wc.wr_id;
	return 0;
}

int
fake_send(struct fake_target *f, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(f->id->qp, wr, &bad) != 0 ||
	    raw_poll_kind(f->cq, &f->stash, 0, &wc, deadline_after_s(FAKE_DEADLINE_S)) < 0)
		return -1;
	f->send_status = wc.status;
	return 0;
}

int
fake_hello(struct fake_target *f, unsigned grants, struct rb_hello_info *h, const char **why)
{
	struct rb_export_info e;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	uint32_t len;
	unsigned idx;

	*why = "no HELLO";
	if (fake_recv(f, &len, &idx) < 0 || rb_hello_decode(f->recv[idx], len, h, why) < 0)
		return -1;
	if (fake_repost(f, idx) != 0) {
		*why = "ibv_post_recv";
		return -1;
	}
	memset(&e, 0, sizeof(e));
	e.status = RB_OK;
	e.queue_depth = 2;
	e.size = 1 << 20;
	e.min_block = 512;
	e.pref_block = 4096;
	e.max_io = h->max_io < 65536 ? h->max_io : 65536;
	if ((grants & FAKE_READ_INLINE) && (h->flags & RB_HELLO_READ_INLINE)) {
		e.flags |= RB_EXP_READ_INLINE;
		if ((grants & FAKE_READ_IMM) && (h->flags & RB_HELLO_READ_IMM))
			e.flags |= RB_EXP_READ_IMM;
	}
	fake_wr(&wr, &sge, f->send, (uint32_t)rb_hello_reply_encode(f->send, &e),
		f->send_mr->lkey, IBV_WR_SEND);
	*why = "HELLO_REPLY not sent";
	return fake_send(f, &wr) < 0 || f->send_status != IBV_WC_SUCCESS ? -1 : 0;
}

int
fake_wait_disconnect(struct fake_target *f, unsigned s)
{
	struct pollfd p = { .fd = f->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	uint64_t deadline = deadline_after_s(s), now;
	int gone = 0;

	while (!gone && (now = rb_now_ns()) < deadline) {
		if (poll(&p, 1, (int)((deadline - now) / 1000000) + 1) <= 0)
			continue;
		if (rdma_get_cm_event(f->ch, &ev) != 0)
			break;
		gone = ev->event == RDMA_CM_EVENT_DISCONNECTED;
		rdma_ack_cm_event(ev);
	}
	return gone;
}

void
fake_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, const void *addr, uint32_t len,
	uint32_t lkey, enum ibv_wr_opcode opcode)
{
	memset(sge, 0, sizeof(*sge));
	memset(wr, 0, sizeof(*wr));
	sge->addr = (uintptr_t)addr;
	sge->length = len;
	sge->lkey = lkey;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = opcode;
}

static pthread_mutex_t flag_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flag_cond = PTHREAD_COND_INITIALIZER;
static int failed;

void
fake_set(int *flag)
{
	pthread_mutex_lock(&flag_lock);
	*flag = 1;
	pthread_cond_broadcast(&flag_cond);
	pthread_mutex_unlock(&flag_lock);
}

int
fake_wait(int *flag)
{
	struct timespec ts;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += FAKE_DEADLINE_S;
	pthread_mutex_lock(&flag_lock);
	while (!*flag && !failed && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&flag_cond, &flag_lock, &ts);
	r = *flag ? 0 : -1;
	pthread_mutex_unlock(&flag_lock);
	return r;
}

void
fake_fail(const char *what)
{
	fprintf(stderr, "fake target: %s (errno: %s)\n", what, strerror(errno));
	fake_set(&failed);
}

int
fake_start(void *(*fn)(void *), pthread_t *th, int *listening)
{
	if (pthread_create(th, NULL, fn, NULL) != 0)
		return -1;
	return fake_wait(listening);
}

static const char *log_tool = "";

static void
log_fn(enum rb_log_level level, const char *msg)
{
	fprintf(stderr, "%s: initiator: %s: %s\n", log_tool, rb_log_level_name(level), msg);
}

int
fake_initiator(const char *tool, const char *addr, uint16_t port, uint32_t max_io,
	       int mr_static, struct rb_stats *stats, struct rb_conn **conn)
{
	struct rb_conn_cfg cfg;
	char errbuf[RB_ERRBUF] = "";

	log_tool = tool;
	rb_set_log(log_fn);
	memset(&cfg, 0, sizeof(cfg));
	memset(stats, 0, sizeof(*stats));
	snprintf(cfg.host, sizeof(cfg.host), "%s", addr);
	cfg.port = port;
	snprintf(cfg.export_name, sizeof(cfg.export_name), "fake");
	cfg.queue_depth = 2;
	cfg.max_io = max_io;
	cfg.stats = stats;
	cfg.mr_static = mr_static;
	if (rb_conn_create(&cfg, 0, rb_now_ns() + FAKE_DEADLINE_S * 1000000000ull, conn,
			   errbuf) < 0) {
		fprintf(stderr, "%s: connect: %s\n", tool, errbuf);
		return -1;
	}
	return 0;
}

int
fake_open(struct fake_target *f, const char *addr, uint16_t port, int *listening,
	  unsigned grants, struct rb_hello_info *h)
{
	const char *what = "";

	if (fake_listen(f, addr, port, &what) < 0)
		goto fail;
	fake_set(listening);
	if (fake_accept(f, &what) < 0 || fake_hello(f, grants, h, &what) < 0)
		goto fail;
	return 0;
fail:
	fake_fail(what);
	return -1;
}

int
fake_read_request(struct fake_target *f, uint32_t max_len, struct rb_req_info *req)
{
	const char *why = "not a READ";
	uint32_t len;
	unsigned idx;

	if (fake_recv(f, &len, &idx) < 0 || rb_request_decode(f->recv[idx], len, req, &why) < 0 ||
	    req->opcode != RB_OP_READ || req->length > max_len) {
		fprintf(stderr, "fake target: the request: %s\n", why);
		fake_fail("no READ");
		return -1;
	}
	if (fake_repost(f, idx) != 0) {
		fake_fail("ibv_post_recv");
		return -1;
	}
	return 0;
}

int
fake_read(struct rb_conn *conn, void *buf, uint32_t len, unsigned s)
{
	struct rb_io io;

	memset(&io, 0, sizeof(io));
	io.opcode = RB_OP_READ;
	io.offset = 0;
	io.length = len;
	io.rbuf = buf;
	io.copy_len = len;
	return rb_conn_request(conn, &io, rb_now_ns() + s * 1000000000ull);
}
