/* The connection as one end sees it (common/qpview.h). */
#include <stdio.h>
#include <string.h>

#include "qpview.h"

int
rb_qp_view(struct ibv_qp *qp, struct rdma_cm_id *id, int is_target,
	   struct rb_auth_bind *b, char *err, size_t errlen)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	union ibv_gid local, remote;
	uint8_t port;
	int rc;

	memset(&attr, 0, sizeof(attr));
	rc = ibv_query_qp(qp, &attr, IBV_QP_AV | IBV_QP_DEST_QPN, &init);
	if (rc != 0) {
		snprintf(err, errlen, "ibv_query_qp (address vector): %s", strerror(rc));
		return -1;
	}
	if (attr.ah_attr.is_global) {
		/* RoCE, and IB across subnets: the GIDs in every packet. */
		port = attr.ah_attr.port_num != 0 ? attr.ah_attr.port_num : id->port_num;
		rc = ibv_query_gid(qp->context, port, attr.ah_attr.grh.sgid_index, &local);
		if (rc != 0) {
			snprintf(err, errlen, "ibv_query_gid (port %u, index %u) failed",
				 (unsigned)port, (unsigned)attr.ah_attr.grh.sgid_index);
			return -1;
		}
		remote = attr.ah_attr.grh.dgid;
	} else {
		/* IB within a subnet has no GRH: the GIDs of the CM's path. */
		memcpy(&local, &id->route.addr.addr.ibaddr.sgid, sizeof(local));
		memcpy(&remote, &id->route.addr.addr.ibaddr.dgid, sizeof(remote));
	}
	memset(b, 0, sizeof(*b));
	if (is_target) {
		memcpy(b->initiator_gid, remote.raw, 16);
		b->initiator_qpn = attr.dest_qp_num;
		memcpy(b->target_gid, local.raw, 16);
		b->target_qpn = qp->qp_num;
	} else {
		memcpy(b->initiator_gid, local.raw, 16);
		b->initiator_qpn = qp->qp_num;
		memcpy(b->target_gid, remote.raw, 16);
		b->target_qpn = attr.dest_qp_num;
	}
	return 0;
}
