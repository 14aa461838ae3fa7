/* rdmablk-aio-loop: the library's asynchronous API driven the way
 * rdmablk-ublk's queue thread drives it (direct requests into one
 * registered region, reaped from one thread), with no ublk around it: so
 * that callgrind can count the library's instructions per IO
 * (scripts/probe-aio-callgrind.sh), where rdmablk-ublk itself does not run
 * under valgrind.
 *
 *   rdmablk-aio-loop -H HOST [-p PORT] -e EXPORT [-q CREDITS] [-k KEEPALIVE_S]
 *                    [-b] read|write QD SECONDS [WARMUP_SECONDS]
 *
 * Keeps QD 4 KiB requests outstanding at random 4 KiB-aligned offsets in
 * the export's first 256 MiB.  Between reaps it sleeps on rb_aio_fd()
 * (rdmablk-ublk's busy-poll=no), or with -b polls (rb_aio_poll, as its
 * spin does).  After WARMUP_SECONDS (default 1) it zeroes callgrind's
 * counters, runs SECONDS, dumps them (outside valgrind both are no-ops),
 * and prints "ios N" (requests completed in the measured part).  Exit 0;
 * 1, with the failure on stderr, when a request fails.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s)
#endif

#include "conn-opts.h"
#include "rdmablk.h"
#include "util.h"

#define IO_LEN   4096u
#define SPAN     (256ull << 20)
#define QD_MAX   256u

struct loop {
	struct rb_client *c;
	struct rb_aio     aio[QD_MAX];
	char             *bufs;
	unsigned          op;
	uint64_t          blocks;   /* IO_LEN blocks in the span */
	uint64_t          rnd;
	uint64_t          done;     /* completed in the current phase */
	int               failed;
	int               draining; /* the end: no more submits */
};

static void
usage(void)
{
	fprintf(stderr, "usage: rdmablk-aio-loop -H HOST [-p PORT] -e EXPORT [-q CREDITS] "
		"[-k KEEPALIVE_S] [-b] read|write QD SECONDS [WARMUP_SECONDS]\n");
	exit(2);
}

static void
log_fn(enum rb_log_level level, const char *msg)
{
	if (level != RB_LOG_DEBUG)
		fprintf(stderr, "rdmablk-aio-loop: %s: %s\n", rb_log_level_name(level), msg);
}

static uint64_t
next_rand(struct loop *l)
{
	/* xorshift64: the offsets need no quality, only no cost worth counting */
	l->rnd ^= l->rnd << 13;
	l->rnd ^= l->rnd >> 7;
	l->rnd ^= l->rnd << 17;
	return l->rnd;
}

static int
submit(struct loop *l, unsigned i)
{
	struct rb_aio *a = &l->aio[i];
	int r;

	memset(a, 0, sizeof(*a));
	a->op = l->op;
	a->buf = l->bufs + (size_t)i * IO_LEN;
	a->len = IO_LEN;
	a->off = (next_rand(l) % l->blocks) * IO_LEN;
	a->user = i;
	r = rb_aio_submit(l->c, a);
	if (r < 0)
		fprintf(stderr, "rdmablk-aio-loop: submit %u@%" PRIu64 ": %s\n", IO_LEN, a->off,
			strerror(-r));
	return r;
}

static void
done(void *opaque, struct rb_aio *a)
{
	struct loop *l = opaque;

	if (a->result < 0) {
		fprintf(stderr, "rdmablk-aio-loop: %s %u@%" PRIu64 ": %s\n",
			l->op == RB_AIO_READ ? "read" : "write", a->len, a->off,
			strerror(-a->result));
		l->failed = 1;
		return;
	}
	l->done++;
	if (!l->draining && submit(l, (unsigned)a->user) < 0)
		l->failed = 1;
}

/* Until until_ns: reap, resubmitting each finished request. */
static int
run(struct loop *l, int busy, uint64_t until_ns)
{
	struct pollfd pfd = { .fd = rb_aio_fd(l->c), .events = POLLIN };
	int r;

	while (!l->failed && rb_now_ns() < until_ns) {
		if (busy) {
			r = rb_aio_poll(l->c, done, l);
		} else {
			r = rb_aio_reap(l->c, done, l);
			if (r == 0 && poll(&pfd, 1, 1000) < 0 && errno != EINTR) {
				perror("rdmablk-aio-loop: poll");
				return -1;
			}
		}
		if (r < 0) {
			fprintf(stderr, "rdmablk-aio-loop: reap: %s\n", strerror(-r));
			return -1;
		}
	}
	return l->failed ? -1 : 0;
}

int
main(int argc, char **argv)
{
	struct rb_opts o;
	struct loop l;
	uint64_t qd, secs, warm = 1;
	unsigned i;
	int opt, busy = 0, r;

	rb_opts_init(&o);
	while ((opt = getopt(argc, argv, "H:p:e:q:k:b")) != -1) {
		if (opt == 'b') {
			busy = 1;
			continue;
		}
		r = conn_opt(opt, optarg, &o);
		if (r < 0) {
			fprintf(stderr, "rdmablk-aio-loop: -%c %s: out of range\n", opt, optarg);
			return 2;
		}
		if (r == 0)
			usage();
	}
	argc -= optind;
	argv += optind;
	if (argc < 3 || argc > 4 || o.host == NULL || o.export_name == NULL)
		usage();
	memset(&l, 0, sizeof(l));
	if (strcmp(argv[0], "read") == 0)
		l.op = RB_AIO_READ;
	else if (strcmp(argv[0], "write") == 0)
		l.op = RB_AIO_WRITE;
	else
		usage();
	if (rb_parse_uint(argv[1], 1, QD_MAX, &qd) < 0 ||
	    rb_parse_uint(argv[2], 1, 3600, &secs) < 0 ||
	    (argc == 4 && rb_parse_uint(argv[3], 0, 3600, &warm) < 0)) {
		fprintf(stderr, "rdmablk-aio-loop: QD is 1..%u, SECONDS 1..3600 and "
			"WARMUP_SECONDS 0..3600\n", QD_MAX);
		return 2;
	}
	rb_set_log(log_fn);
	r = rb_client_open(&o, &l.c);
	if (r < 0) {
		fprintf(stderr, "rdmablk-aio-loop: connecting: %s\n", strerror(-r));
		return 1;
	}
	l.blocks = (rb_client_export(l.c)->size < SPAN ? rb_client_export(l.c)->size : SPAN) /
		   IO_LEN;
	l.rnd = 0x9e3779b97f4a7c15ull;
	if (l.blocks == 0 || posix_memalign((void **)&l.bufs, 4096, (size_t)qd * IO_LEN) != 0) {
		fprintf(stderr, "rdmablk-aio-loop: export smaller than %u bytes, or out of "
			"memory\n", IO_LEN);
		rb_client_close(l.c);
		return 1;
	}
	memset(l.bufs, 0x5a, (size_t)qd * IO_LEN);
	r = rb_aio_set_region(l.c, l.bufs, (size_t)qd * IO_LEN);
	for (i = 0; r == 0 && i < qd; i++)
		r = submit(&l, i);
	if (r == 0)
		r = run(&l, busy, rb_now_ns() + warm * 1000000000ull);
	if (r == 0) {
		CALLGRIND_ZERO_STATS;
		l.done = 0;
		r = run(&l, busy, rb_now_ns() + secs * 1000000000ull);
		CALLGRIND_DUMP_STATS_AT("measured");
		if (r == 0)
			printf("ios %" PRIu64 "\n", l.done);
	}
	/* What is still out finishes before the close. */
	l.draining = 1;
	while (rb_aio_outstanding(l.c) > 0 && rb_aio_reap(l.c, done, &l) >= 0)
		if (rb_aio_outstanding(l.c) > 0)
			poll(&(struct pollfd){ .fd = rb_aio_fd(l.c), .events = POLLIN }, 1, 1000);
	rb_client_close(l.c);
	free(l.bufs);
	return r == 0 && !l.failed ? 0 : 1;
}
