/* Unit test for target/core/stats.h: log2 latency buckets and the percentiles
 * computed from them (a bucket's upper bound, capped at the maximum), and
 * adding one connection's counters into another's.  No RDMA needed. */
#include <stdio.h>
#include <string.h>

#include "../../target/core/stats.h"

#include "check.h"

/* Record one latency of us microseconds without a clock. */
static void
record(struct stats_op *o, uint64_t us)
{
	uint64_t ns = us * 1000;

	o->count++;
	if (ns > o->max_ns)
		o->max_ns = ns;
	o->hist[stats_bucket(ns)]++;
}

int
main(void)
{
	struct stats_io a, b;
	struct stats_op o;
	int i;

	check(stats_bucket(0) == 0 && stats_bucket(999) == 0, "under 1 us: bucket 0");
	check(stats_bucket(1000) == 1 && stats_bucket(1999) == 1, "[1, 2) us: bucket 1");
	check(stats_bucket(2000) == 2 && stats_bucket(3999) == 2, "[2, 4) us: bucket 2");
	check(stats_bucket(1024000) == 11, "1024 us: bucket 11 (up to 2048)");
	check(stats_bucket(~0ull) == STATS_NBUCKETS - 1, "huge: the last bucket");

	memset(&o, 0, sizeof(o));
	check(stats_percentile_us(&o, 50) == 0, "empty: p50 is 0");
	for (i = 0; i < 98; i++)
		record(&o, 10);          /* bucket 4: [8, 16) */
	record(&o, 100);                 /* bucket 7: [64, 128) */
	record(&o, 5000);                /* bucket 13: [4096, 8192) */
	check(stats_percentile_us(&o, 50) == 16, "p50 = upper bound of its bucket");
	check(stats_percentile_us(&o, 99) == 128, "p99: the 99th of 100 is the 100 us one");
	check(stats_percentile_us(&o, 100) == 5000, "p100 capped at the exact maximum");

	memset(&o, 0, sizeof(o));
	record(&o, 3);
	check(stats_percentile_us(&o, 50) == 3 && stats_percentile_us(&o, 99) == 3,
	      "one sample: percentiles never exceed the maximum");

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	stats_reply(&a, RB_OP_WRITE, 4096, RB_OK, rb_now_ns());
	stats_reply(&a, RB_OP_WRITE, 512, RB_ENOSPC, rb_now_ns());
	stats_reply(&b, RB_OP_WRITE, 8192, RB_OK, rb_now_ns());
	stats_reply(&b, RB_OP_READ, 1024, RB_OK, rb_now_ns());
	stats_reply(&b, RB_OP_READ, 1024, RB_EOVERFLOW, rb_now_ns());
	stats_reply(&b, RB_OP__COUNT, 1, RB_OK, rb_now_ns());   /* ignored */
	stats_stage(&a, RB_OP_WRITE, STATS_STAGE_BACKING_WRITE, 5000 * 1000);
	stats_stage(&b, RB_OP_WRITE, STATS_STAGE_BACKING_WRITE, 3 * 1000);
	stats_stage(&b, RB_OP__COUNT, STATS_STAGE_DATA, 1);      /* ignored */
	stats_io_add(&a, &b);
	check(a.op[RB_OP_WRITE].count == 3 && a.op[RB_OP_WRITE].bytes == 12288 &&
	      a.op[RB_OP_WRITE].errors == 1, "add: counts, bytes of successes, errors");
	check(a.op[RB_OP_READ].count == 2 && a.op[RB_OP_READ].bytes == 1024,
	      "add: other opcodes");
	check(a.errors_by[STATS_ERR_NOSPC] == 1 && a.errors_by[STATS_ERR_INVALID] == 1 &&
	      a.errors_by[STATS_ERR_IO] == 0, "add: errors by kind");
	check(a.stage[RB_OP_WRITE][STATS_STAGE_BACKING_WRITE].count == 2 &&
	      a.stage[RB_OP_WRITE][STATS_STAGE_BACKING_WRITE].sum_ns == 5003000 &&
	      a.stage[RB_OP_WRITE][STATS_STAGE_BACKING_WRITE].hist[13] == 1 &&
	      a.stage[RB_OP_WRITE][STATS_STAGE_BACKING_WRITE].hist[2] == 1,
	      "add: stage histograms (5 ms in bucket 13, 3 us in bucket 2)");
	check(stats_error_kind(RB_ESHUTDOWN) == STATS_ERR_SHUTDOWN &&
	      stats_error_kind(RB_EPROTO) == STATS_ERR_OTHER, "error kinds");

	printf("test-stats: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
