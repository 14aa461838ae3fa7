/* Caller memory registered for direct (copy-free) requests (rb_aio_set_region).
 *
 * A direct READ or non-inline WRITE names the caller's own bytes to the
 * target, through a window bound over exactly those bytes, instead of a
 * pool buffer of the slot (a READ of at most 4 KiB comes in its reply
 * instead when READ_IMM is granted: request.c, io_inline).  Never with
 * mr=static: one key over the whole region would expose all of it for
 * the connection's lifetime.  The caller's memory is reused as soon as
 * the request is reported, so a connection that dies with direct
 * requests posted must be fenced before they are resent or failed: its
 * windows are deallocated and the region is deregistered, after which no
 * RDMA of that connection, late or not, can reach the memory (on rxe
 * dereg waits for the responder's references).  The pool's rule ("a dead
 * connection's unanswered slots are ORPHANED and never reused") cannot
 * protect memory the library does not own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int
rb_conn_direct_register(struct rb_conn *conn, void *base, size_t len)
{
	if (conn->direct_fenced)
		return -EAGAIN;
	if (conn->direct_mr != NULL)
		return 0;
	if (!conn->use_mw)
		return -EPERM;  /* never remote access to all of it (aio.c) */
	/* No remote access of its own: only a window bound for one live
	 * request over exactly its bytes. */
	conn->direct_mr = ibv_reg_mr(conn->pd, base, len,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (conn->direct_mr == NULL) {
		int err = errno ? errno : ENOMEM;

		rb_log(RB_LOG_ERROR, "ibv_reg_mr of the direct I/O region (%zu bytes): %s "
		       "(is ulimit -l too low?)", len, strerror(err));
		return -err;
	}
	return 0;
}

/* 1 when no RDMA of the peer can reach this side through conn's QP any
 * more: it is in the error (or reset) state.  Its PD is its own, so no
 * other QP can use its windows or regions. */
static int
qp_fenced(struct rb_conn *conn)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	return conn->qp_created &&
	       ibv_query_qp(conn->id->qp, &a, IBV_QP_STATE, &ia) == 0 &&
	       (a.qp_state == IBV_QPS_ERR || a.qp_state == IBV_QPS_RESET);
}

void
rb_conn_direct_fence_locked(struct rb_conn *conn)
{
	int r;

	if (conn->direct_mr == NULL || conn->direct_fenced)
		return;
	conn->direct_fenced = 1;
	rb_slots_revoke(conn);
	r = conn->fault_fence ? EBUSY : ibv_dereg_mr(conn->direct_mr);
	if (r != 0) {
		rb_log(RB_LOG_ERROR, "%s:%u: ibv_dereg_mr of the direct I/O region: %s",
		       conn->cfg.host, conn->cfg.port, strerror(r));
		conn->fence_failed = 1;
	} else {
		conn->direct_mr = NULL;
	}
	if (!conn->fence_failed)
		return;
	/* The caller reuses this memory once its requests are reported: only
	 * a QP that accepts nothing still fences it. */
	if (qp_fenced(conn)) {
		rb_log(RB_LOG_WARN, "%s:%u: the QP is in the error state: the target can no "
		       "longer reach the caller's memory through it", conn->cfg.host,
		       conn->cfg.port);
		return;
	}
	rb_log(RB_LOG_ERROR, "%s:%u: cannot fence the connection (a window or the region "
	       "stays valid and the QP is not in the error state): aborting rather than let "
	       "the target write into memory the caller reuses", conn->cfg.host, conn->cfg.port);
	abort();
}
