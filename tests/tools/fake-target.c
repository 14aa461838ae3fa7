/* fake-target: the passive side of one rdmablk connection, for test tools
 * (tests/tools/fake-target.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

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
fake_hello(struct fake_target *f, int read_inline, struct rb_hello_info *h, const char **why)
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
	if (read_inline && (h->flags & RB_HELLO_READ_INLINE))
		e.flags |= RB_EXP_READ_INLINE;
	memset(&sge, 0, sizeof(sge));
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)f->send;
	sge.length = (uint32_t)rb_hello_reply_encode(f->send, &e);
	sge.lkey = f->send_mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
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
