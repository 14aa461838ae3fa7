/* The granted QP capabilities against those asked (common/qpcaps.h). */
#include <stdio.h>

#include "qpcaps.h"

int
rb_qp_caps_check(const struct ibv_qp_cap *got, const struct ibv_qp_cap *want,
		 char *err, size_t errlen)
{
	if (got->max_send_wr >= want->max_send_wr &&
	    got->max_recv_wr >= want->max_recv_wr &&
	    got->max_send_sge >= want->max_send_sge &&
	    got->max_recv_sge >= want->max_recv_sge &&
	    got->max_inline_data >= want->max_inline_data)
		return 0;
	snprintf(err, errlen, "send_wr %u/%u recv_wr %u/%u send_sge %u/%u "
		 "recv_sge %u/%u inline %u/%u",
		 got->max_send_wr, want->max_send_wr, got->max_recv_wr, want->max_recv_wr,
		 got->max_send_sge, want->max_send_sge, got->max_recv_sge, want->max_recv_sge,
		 got->max_inline_data, want->max_inline_data);
	return -1;
}
