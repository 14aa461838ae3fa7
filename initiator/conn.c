/* One RDMA connection: verbs resources, matched create/destroy, refcount. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"
#include "qpcaps.h"
#include "util.h"

/* Per-request memory windows unless mr=static, when the device has type-2
 * windows for every slot; otherwise the static pool MR, with a warning. */
static void
choose_mr_mode(struct rb_conn *conn)
{
	struct ibv_device_attr attr;
	uint64_t type2 = IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	const char *env;
	uint64_t n;

	conn->use_mw = 0;
	if (conn->cfg.mr_static)
		return;
	if (ibv_query_device(conn->id->verbs, &attr) != 0) {
		rb_log(RB_LOG_WARN, "ibv_query_device failed; exposing the "
		       "static pool MR (mr=static)");
		return;
	}
	if (!(attr.device_cap_flags & type2) ||
	    attr.max_mw < (int)conn->cfg.queue_depth) {
		rb_log(RB_LOG_WARN, "%s has no type-2 memory windows "
		       "(max_mw %d); exposing the static pool MR (mr=static)",
		       ibv_get_device_name(conn->id->verbs->device), attr.max_mw);
		return;
	}
	conn->use_mw = 1;
	/* Soft-RoCE: vendor 0xffffff, its own driver name (rb_wc_invalidated). */
	conn->rxe_quirk = attr.vendor_id == 0xffffff;
	rb_log(RB_LOG_DEBUG, "%s: a type-2 memory window per request (mr=window)",
	       ibv_get_device_name(conn->id->verbs->device));
	/* Test hook (docs/testing.md): make the device refuse every Nth
	 * bind, to exercise recovery from a failed bind over real RDMA. */
	env = getenv("RDMABLK_TEST_FAULT_BIND");
	if (env != NULL && rb_parse_uint(env, 1, UINT32_MAX, &n) == 0) {
		conn->fault_bind = (unsigned)n;
		rb_log(RB_LOG_WARN, "test hook: the device will refuse every "
		       "%u-th memory window bind", conn->fault_bind);
	}
	/* Test hook: every window deallocation and direct-region
	 * deregistration fails, to exercise a fence that cannot revoke. */
	if (rb_test_hook_on("RDMABLK_TEST_FAULT_FENCE")) {
		conn->fault_fence = 1;
		rb_log(RB_LOG_WARN, "test hook: no memory window or region can be revoked");
	}
}

/* PD, completion channel, CQ and an RC QP; the caps the provider returns
 * are checked against what we need. */
static int
create_qp(struct rb_conn *conn, char *errbuf)
{
	struct ibv_qp_init_attr attr;
	struct ibv_qp_cap want;
	char short_caps[160];
	/* Windows: a bind, the SEND and a local invalidate per slot. */
	unsigned want_send = conn->nsend_bufs * (conn->use_mw ? 3 : 1);
	unsigned want_recv = conn->nrecv;

	conn->pd = ibv_alloc_pd(conn->id->verbs);
	if (conn->pd == NULL) {
		rb_seterr(errbuf, "ibv_alloc_pd: %s", strerror(errno));
		return -EIO;
	}
	conn->comp_ch = ibv_create_comp_channel(conn->id->verbs);
	if (conn->comp_ch == NULL || rb_fd_set_nonblock(conn->comp_ch->fd) < 0) {
		rb_seterr(errbuf, "ibv_create_comp_channel: %s", strerror(errno));
		return -EIO;
	}
	/* Every send-side WR can complete with an error (even an unsignaled
	 * BIND), so the send CQ holds the whole send queue. */
	conn->send_cq = ibv_create_cq(conn->id->verbs, (int)want_send, conn,
				      conn->comp_ch, 0);
	conn->recv_cq = conn->send_cq == NULL ? NULL :
		ibv_create_cq(conn->id->verbs, (int)want_recv, conn, conn->comp_ch, 0);
	if (conn->send_cq == NULL || conn->recv_cq == NULL) {
		rb_seterr(errbuf, "ibv_create_cq %u + %u entries: %s",
			  want_send, want_recv, strerror(errno));
		return -EIO;
	}
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = conn->send_cq;
	attr.recv_cq = conn->recv_cq;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 0;
	attr.cap.max_send_wr = want_send;
	attr.cap.max_recv_wr = want_recv;
	attr.cap.max_send_sge = 2;    /* a direct inline WRITE: header + the caller's bytes */
	attr.cap.max_recv_sge = 1;
	want = attr.cap;
	if (rdma_create_qp(conn->id, conn->pd, &attr) != 0) {
		rb_seterr(errbuf, "rdma_create_qp (%u send, %u recv): %s",
			  want_send, want_recv, strerror(errno));
		return -EIO;
	}
	conn->qp_created = 1;
	if (rb_qp_caps_check(&attr.cap, &want, short_caps, sizeof(short_caps)) < 0) {
		rb_seterr(errbuf, "rdma_create_qp: capabilities short (granted/needed): %s",
			  short_caps);
		return -ENOMEM;
	}
	return 0;
}

/* Receive ring and send buffers, and every receive posted before connect. */
static int
create_buffers(struct rb_conn *conn, char *errbuf)
{
	unsigned i;
	int r;

	r = rb_region_create(&conn->recv, conn->pd,
			     (size_t)conn->nrecv * RB_MSG_BUF_SIZE,
			     IBV_ACCESS_LOCAL_WRITE, errbuf);
	if (r < 0)
		return r;
	r = rb_region_create(&conn->send, conn->pd,
			     (size_t)conn->nsend_bufs * RB_MSG_BUF_SIZE,
			     IBV_ACCESS_LOCAL_WRITE, errbuf);
	if (r < 0)
		return r;
	conn->recv_ctx = calloc(conn->nrecv, sizeof(*conn->recv_ctx));
	if (conn->recv_ctx == NULL) {
		rb_seterr(errbuf, "out of memory");
		return -ENOMEM;
	}
	conn->ctrl_ctx.kind = RB_WR_SEND_CTRL;
	for (i = 0; i < conn->nrecv; i++) {
		conn->recv_ctx[i].kind = RB_WR_RECV;
		conn->recv_ctx[i].index = i;
		r = rb_conn_post_recv(conn, i);
		if (r < 0) {
			rb_seterr(errbuf, "ibv_post_recv: %s", strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Undo whatever rb_conn_create got to, in reverse order, except that the
 * windows go first (rb_slots_revoke). The QP is destroyed before any
 * memory region is deregistered: after that no work request and no target
 * RDMA can touch our buffers. */
static void
conn_destroy(struct rb_conn *conn)
{
	uint64_t t0 = rb_now_ns();

	rb_timer_stop(conn);
	if (conn->connected && !conn->disconnect_sent)
		rdma_disconnect(conn->id);
	rb_slots_revoke(conn);
	if (conn->qp_created)
		rdma_destroy_qp(conn->id);
	rb_slots_destroy(conn);
	if (conn->direct_mr != NULL)
		ibv_dereg_mr(conn->direct_mr);
	rb_region_destroy(&conn->send);
	rb_region_destroy(&conn->recv);
	free(conn->recv_ctx);
	if (conn->recv_cq != NULL)
		ibv_destroy_cq(conn->recv_cq);
	if (conn->send_cq != NULL)
		ibv_destroy_cq(conn->send_cq);
	if (conn->comp_ch != NULL)
		ibv_destroy_comp_channel(conn->comp_ch);
	if (conn->pd != NULL)
		ibv_dealloc_pd(conn->pd);
	if (conn->id != NULL)
		rdma_destroy_id(conn->id);
	if (conn->cm_ch != NULL)
		rdma_destroy_event_channel(conn->cm_ch);
	if (conn->wake_fd >= 0)
		close(conn->wake_fd);
	pthread_cond_destroy(&conn->slot_cond);
	pthread_mutex_destroy(&conn->pool_lock);
	pthread_mutex_destroy(&conn->lock);
	free(conn);
	if (rb_now_ns() - t0 > 1000000000u)
		rb_log(RB_LOG_DEBUG, "tearing a connection down took %llu ms",
		       (unsigned long long)((rb_now_ns() - t0) / 1000000));
}

int
rb_conn_create(const struct rb_conn_cfg *cfg, int list_only, uint64_t deadline_ns,
	       struct rb_conn **out, char *errbuf)
{
	struct rb_conn *conn;
	pthread_condattr_t ca;
	socklen_t len;
	int r;

	conn = calloc(1, sizeof(*conn));
	if (conn == NULL) {
		rb_seterr(errbuf, "out of memory");
		return -ENOMEM;
	}
	conn->cfg = *cfg;
	conn->refs = 1;
	/* Test hook (docs/testing.md): send no ttl, as initiators that
	 * predate it do, to exercise the target's rule for them. */
	if (rb_test_hook_on("RDMABLK_TEST_NO_TTL")) {
		conn->test_no_ttl = 1;
		rb_log(RB_LOG_WARN, "test hook: requests carry no ttl (RDMABLK_TEST_NO_TTL)");
	}
	/* Test hook (docs/testing.md): do not ask for inline reads, as
	 * initiators that predate them do. */
	if (rb_test_hook_on("RDMABLK_TEST_NO_READ_INLINE")) {
		conn->test_no_read_inline = 1;
		rb_log(RB_LOG_WARN, "test hook: no inline reads (RDMABLK_TEST_NO_READ_INLINE)");
	}
	/* Test hook: inline reads with their reply header, as initiators
	 * that predate READ_IMM take them. */
	if (rb_test_hook_on("RDMABLK_TEST_NO_READ_IMM")) {
		conn->test_no_read_imm = 1;
		rb_log(RB_LOG_WARN, "test hook: no inline reads with immediate "
		       "(RDMABLK_TEST_NO_READ_IMM)");
	}
	SLIST_INIT(&conn->free_slots);
	conn->kick_fd = -1;
	conn->leader = -1;
	STAILQ_INIT(&conn->aio_done);
	conn->nrecv = cfg->queue_depth + 1;
	conn->nsend_bufs = cfg->queue_depth + 1;
	pthread_mutex_init(&conn->lock, NULL);
	pthread_mutex_init(&conn->pool_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&conn->slot_cond, &ca);
	pthread_condattr_destroy(&ca);

	conn->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (conn->wake_fd < 0) {
		r = -errno;
		rb_seterr(errbuf, "eventfd: %s", strerror(errno));
		goto out_destroy;
	}
	if (rb_sockaddr_parse(cfg->host, cfg->port, &conn->dst, &conn->dst_len) < 0) {
		rb_seterr(errbuf, "%s: not a numeric IPv4 or IPv6 address", cfg->host);
		r = -EINVAL;
		goto out_destroy;
	}
	if (cfg->source[0] != '\0' &&
	    rb_sockaddr_parse(cfg->source, 0, &conn->src, &len) < 0) {
		rb_seterr(errbuf, "source address %s: not a numeric IPv4 or IPv6 address",
			  cfg->source);
		r = -EINVAL;
		goto out_destroy;
	}
	conn->cm_ch = rdma_create_event_channel();
	if (conn->cm_ch == NULL) {
		/* No /dev/infiniband/rdma_cm: no RDMA stack at all. */
		rb_seterr(errbuf, "no RDMA device is visible (no RDMA CM device "
			  "/dev/infiniband/rdma_cm), so none can reach %s: %s", cfg->host,
			  RB_NO_RDMA_HINT);
		r = -ENODEV;
		goto out_destroy;
	}
	if (rb_fd_set_nonblock(conn->cm_ch->fd) < 0 ||
	    rdma_create_id(conn->cm_ch, &conn->id, conn, RDMA_PS_TCP) != 0) {
		r = -errno;
		rb_seterr(errbuf, "rdma_create_id: %s", strerror(errno));
		conn->id = NULL;
		goto out_destroy;
	}
	r = rb_cm_resolve(conn, deadline_ns, errbuf);
	if (r < 0)
		goto out_destroy;
	choose_mr_mode(conn);
	r = create_qp(conn, errbuf);
	if (r < 0)
		goto out_destroy;
	r = create_buffers(conn, errbuf);
	if (r < 0)
		goto out_destroy;
	r = rb_cm_connect(conn, deadline_ns, errbuf);
	if (r < 0)
		goto out_destroy;
	conn->last_rx_ns = rb_now_ns();
	if (!list_only) {
		r = rb_handshake_hello(conn, deadline_ns, errbuf);
		if (r < 0)
			goto out_destroy;
		/* A slow handshake must not count against the keepalive. */
		conn->last_rx_ns = rb_now_ns();
		r = rb_slots_create(conn, errbuf);
		if (r < 0)
			goto out_destroy;
		r = rb_timer_start(conn, errbuf);
		if (r < 0)
			goto out_destroy;
	}
	*out = conn;
	return 0;

out_destroy:
	conn_destroy(conn);
	return r;
}

void
rb_conn_ref(struct rb_conn *conn)
{
	pthread_mutex_lock(&conn->lock);
	conn->refs++;
	pthread_mutex_unlock(&conn->lock);
}

/* The last reference destroys; the housekeeping thread never holds one. */
void
rb_conn_unref(struct rb_conn *conn)
{
	int last;

	pthread_mutex_lock(&conn->lock);
	last = --conn->refs == 0;
	pthread_mutex_unlock(&conn->lock);
	if (last)
		conn_destroy(conn);
}
