/* Caller memory registered for direct (copy-free) requests (rb_aio_set_region).
 *
 * A direct READ or non-inline WRITE names the caller's own bytes to the
 * target, through a window bound over exactly those bytes, instead of a
 * pool buffer of the slot.  Never with mr=static: one key over the whole
 * region would expose all of it for the connection's lifetime.  The
 * caller's memory is reused as soon as the request is reported, so a
 * connection that dies with direct requests posted must be fenced before
 * they are resent or failed: its windows are deallocated and the region is
 * deregistered, after which no RDMA of that connection, late or not, can
 * reach the memory (on rxe dereg waits for the responder's references).
 * The pool's rule ("a dead connection's POSTED slots stay POSTED") cannot
 * protect memory the library does not own. */
#include <errno.h>
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

void
rb_conn_direct_fence_locked(struct rb_conn *conn)
{
	if (conn->direct_mr == NULL)
		return;
	rb_slots_revoke(conn);
	if (ibv_dereg_mr(conn->direct_mr) != 0)
		rb_log(RB_LOG_ERROR, "ibv_dereg_mr of the direct I/O region failed");
	conn->direct_mr = NULL;
	conn->direct_fenced = 1;
}
