/* The check after creating a QP: ibv_create_qp (and rdma_create_qp) write
 * the granted capabilities back into the init attributes, and a provider
 * may round up but must not give less than was asked. */
#ifndef RDMABLK_QPCAPS_H
#define RDMABLK_QPCAPS_H

#include <stddef.h>

#include <infiniband/verbs.h>

/* 0 when got covers want in every field; -1 when something is short, with
 * "send_wr GOT/WANT recv_wr GOT/WANT send_sge ... recv_sge ... inline ..."
 * in err. */
int rb_qp_caps_check(const struct ibv_qp_cap *got, const struct ibv_qp_cap *want,
		     char *err, size_t errlen);

#endif
