/* What one end of an RC connection sees of it: its own and its peer's GID
 * and QP number, as the QP's address vector holds them.  The authentication
 * proofs are bound to these (common/auth.h, docs/security.md). */
#ifndef RDMABLK_QPVIEW_H
#define RDMABLK_QPVIEW_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/rdma_cma.h>

#include "auth.h"

/* Fill b from qp (connected, RTR or later; id is its CM id, for the GIDs of
 * a path without a GRH).  is_target says which end we are, so that b is in
 * initiator/target order on both sides.  0, or -1 with a message in err. */
int rb_qp_view(struct ibv_qp *qp, struct rdma_cm_id *id, int is_target,
	       struct rb_auth_bind *b, char *err, size_t errlen);

#endif
