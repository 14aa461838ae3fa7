/* Unit test for rb_wc_invalidated (initiator/cq.c): a memory window counts
 * as invalidated by the reply only when the provider flagged the receive
 * completion as carrying an invalidate, never from the key field alone (a
 * plain SEND leaves that field unwritten). */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#include "check.h"

int
main(void)
{
	struct ibv_wc wc;
	const uint32_t key = 0x1234ab;

	memset(&wc, 0, sizeof(wc));
	wc.status = IBV_WC_SUCCESS;
	wc.opcode = IBV_WC_RECV;
	/* A plain SEND whose key field happens to hold our key (an earlier
	 * completion's value, or garbage): the window is still live.  The
	 * code before this test trusted exactly this case. */
	wc.invalidated_rkey = key;
	CHECK(!rb_wc_invalidated(&wc, key, 0));
	CHECK(!rb_wc_invalidated(&wc, key, 1));
	/* SEND_WITH_INV of our key, flagged as the verbs API says */
	wc.wc_flags = IBV_WC_WITH_INV;
	CHECK(rb_wc_invalidated(&wc, key, 0));
	/* ... of another key */
	CHECK(!rb_wc_invalidated(&wc, key + 1, 0));
	/* an immediate shares the field */
	wc.wc_flags = IBV_WC_WITH_INV | IBV_WC_WITH_IMM;
	CHECK(!rb_wc_invalidated(&wc, key, 0));
	/* rxe's flag (the kernel's bit) counts only on rxe */
	wc.wc_flags = IBV_WC_GRH | IBV_WC_IP_CSUM_OK;
	CHECK(!rb_wc_invalidated(&wc, key, 0));
	CHECK(rb_wc_invalidated(&wc, key, 1));
	printf("test-initiator-inv: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
