/* Unit test for rb_wc_batch_cause (initiator/cq.c): when a QP breaks, the
 * receives it flushes are polled before the send whose error broke it, so
 * the reason a connection is lost for comes from the first error in the
 * batch that is not a flush; a batch of flushes alone says so. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#include "check.h"

int
main(void)
{
	struct ibv_wc wc[4];

	memset(wc, 0, sizeof(wc));
	wc[0].status = IBV_WC_WR_FLUSH_ERR;     /* a receive, polled first */
	wc[1].status = IBV_WC_WR_FLUSH_ERR;
	wc[2].status = IBV_WC_RETRY_EXC_ERR;    /* the send that broke the QP */
	wc[3].status = IBV_WC_WR_FLUSH_ERR;
	check(strcmp(rb_wc_batch_cause(wc, 4), ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR)) == 0,
	      "flushes before a retry error: the retry error is the cause");
	check(strcmp(rb_wc_batch_cause(wc, 2), "queue pair flushed") == 0,
	      "flushes alone: the queue pair was flushed");

	wc[1].status = IBV_WC_SUCCESS;          /* a reply that made it */
	wc[2].status = IBV_WC_REM_ACCESS_ERR;
	wc[3].status = IBV_WC_RETRY_EXC_ERR;
	check(strcmp(rb_wc_batch_cause(wc, 4), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR)) == 0,
	      "two errors: the first one is the cause; a success is none");
	check(strcmp(rb_wc_batch_cause(wc, 0), "queue pair flushed") == 0,
	      "an empty batch names no error");
	printf("test-initiator-cause: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
