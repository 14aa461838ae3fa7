/* A connection's verbs resources (target/conn/conn.h): the completion channel
 * and CQs, our own QP and its transitions, the control SEND buffer. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "log.h"
#include "qpcaps.h"
#include "util.h"


int
conn_create_cqs(struct conn *c)
{
	struct ibv_context *verbs = c->cm_id->verbs;

	c->channel = ibv_create_comp_channel(verbs);
	if (c->channel == NULL) {
		log_warn("%s: ibv_create_comp_channel", c->peer);
		return -1;
	}
	if (rb_fd_set_nonblock(c->channel->fd) < 0) {
		log_warn("%s: completion channel O_NONBLOCK", c->peer);
		goto out_destroy_channel;
	}
	/* Sized for the full ring (recvring.c), though the handshake posts
	 * only CONN_HANDSHAKE_RECVS. */
	c->recv_cq = ibv_create_cq(verbs, (int)conn_recv_max(c), c, c->channel, 0);
	if (c->recv_cq == NULL) {
		log_warn("%s: ibv_create_cq (receive, %u entries)", c->peer, conn_recv_max(c));
		goto out_destroy_channel;
	}
	c->send_cq = ibv_create_cq(verbs, (int)c->sq_depth, c, c->channel, 0);
	if (c->send_cq == NULL) {
		log_warn("%s: ibv_create_cq (send, %u entries)", c->peer, c->sq_depth);
		goto out_destroy_recv_cq;
	}
	/* The receive CQ is always armed.  The send CQ is armed only while
	 * something waits for a send completion (conn_send_arm): the
	 * handshake's control SEND here. */
	if (ibv_req_notify_cq(c->recv_cq, 0) != 0 ||
	    ibv_req_notify_cq(c->send_cq, 0) != 0) {
		log_warnx("%s: ibv_req_notify_cq failed", c->peer);
		goto out_destroy_send_cq;
	}
	c->send_armed = 1;
	return 0;

out_destroy_send_cq:
	ibv_destroy_cq(c->send_cq);
out_destroy_recv_cq:
	ibv_destroy_cq(c->recv_cq);
out_destroy_channel:
	ibv_destroy_comp_channel(c->channel);
	c->channel = NULL;
	c->send_cq = c->recv_cq = NULL;
	return -1;
}

void
conn_destroy_cqs(struct conn *c)
{
	ibv_destroy_cq(c->send_cq);
	ibv_destroy_cq(c->recv_cq);
	ibv_destroy_comp_channel(c->channel);
}

/* Move our QP to state with the attributes the CM computed (and the RDMA
 * READ depths we grant), as rdma_accept would for a QP it owned; the send
 * side's RNR retry count is ours, not the initiator's (conn.h). */
int
conn_modify_qp(struct conn *c, enum ibv_qp_state state, uint8_t rd_atomic)
{
	struct ibv_qp_attr attr;
	struct ibv_port_attr port;
	int mask, rc;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = state;
	if (rdma_init_qp_attr(c->cm_id, &attr, &mask) != 0) {
		log_warn("%s: rdma_init_qp_attr (state %d)", c->peer, (int)state);
		return -1;
	}
	switch (state) {
	case IBV_QPS_RTR:
		attr.max_dest_rd_atomic = rd_atomic;
		/* librdmacm's workaround: an IB port's CM sets RoCE-only bits. */
		if (ibv_query_port(c->cm_id->verbs, c->cm_id->port_num, &port) == 0 &&
		    port.link_layer == IBV_LINK_LAYER_INFINIBAND)
			mask &= ~0xe00000;
		break;
	case IBV_QPS_RTS:
		attr.max_rd_atomic = rd_atomic;
		attr.rnr_retry = CONN_RNR_RETRY;
		mask |= IBV_QP_RNR_RETRY;
		break;
	default:
		break;
	}
	rc = ibv_modify_qp(c->qp, &attr, mask);
	if (rc != 0) {
		log_warnx("%s: ibv_modify_qp (state %d): %s", c->peer, (int)state, strerror(rc));
		return -1;
	}
	return 0;
}

int
conn_create_qp(struct conn *c)
{
	struct ibv_qp_init_attr attr;
	struct ibv_qp_cap want;
	char short_caps[160];
	const uint32_t need_inline = sizeof(struct rb_reply);

	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	attr.send_cq = c->send_cq;
	attr.recv_cq = c->recv_cq;
	attr.cap.max_send_wr = c->sq_depth;
	attr.cap.max_recv_wr = conn_recv_max(c);
	/* An inline READ's reply gathers its header and its data. */
	attr.cap.max_send_sge = 2;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = need_inline;
	want = attr.cap;
	/* Our own QP, not rdma_create_qp's: rdma_accept would move it to RTS
	 * with the RNR retry count the initiator asked for (7 = forever),
	 * and a peer that posts no receives could then hold our send queue
	 * and pool buffers forever.  We make every transition ourselves
	 * (conn_modify_qp) and pass its number to rdma_accept. */
	c->qp = ibv_create_qp(c->dev->pd, &attr);
	if (c->qp == NULL) {
		log_warn("%s: ibv_create_qp (send %u, recv %u)", c->peer, c->sq_depth,
			 conn_recv_max(c));
		return -1;
	}
	/* The provider may round up, but must not give less than asked. */
	if (rb_qp_caps_check(&attr.cap, &want, short_caps, sizeof(short_caps)) < 0) {
		log_warnx("%s: QP capabilities short: %s", c->peer, short_caps);
		goto out_destroy_qp;
	}
	/* INIT now, so that the receives can be posted before the accept. */
	if (conn_modify_qp(c, IBV_QPS_INIT, 0) < 0)
		goto out_destroy_qp;
	return 0;

out_destroy_qp:
	ibv_destroy_qp(c->qp);
	c->qp = NULL;
	return -1;
}

/* The control SEND buffer (CHALLENGE, HELLO_REPLY, LIST_REPLY). */
int
conn_create_ctrl(struct conn *c)
{
	c->ctrl_buf = calloc(1, RB_CTRL_MSG_MAX);
	if (c->ctrl_buf == NULL) {
		log_warnx("%s: out of memory for the control buffer", c->peer);
		return -1;
	}
	c->ctrl_mr = ibv_reg_mr(c->dev->pd, c->ctrl_buf, RB_CTRL_MSG_MAX, 0);
	if (c->ctrl_mr == NULL) {
		log_warn("%s: ibv_reg_mr (control buffer)", c->peer);
		goto out_free;
	}
	c->ctrl_ctx.type = WR_CTRL;
	c->ctrl_ctx.obj = c;
	return 0;

out_free:
	free(c->ctrl_buf);
	c->ctrl_buf = NULL;
	return -1;
}

void
conn_destroy_ctrl(struct conn *c)
{
	ibv_dereg_mr(c->ctrl_mr);
	free(c->ctrl_buf);
}
