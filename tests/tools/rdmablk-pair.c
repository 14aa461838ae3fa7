/* rdmablk-pair: two clients of one export in one process, as the queues
 * of one ublk device or the NBD connections of one nbdkit are, each
 * writing its own block every 200 ms (verified by reading it back), so that
 * a test can see them fail over together (initiator/group.c).
 *
 *   rdmablk-pair [-b BASE] SECONDS KEY=VALUE... [-- KEY=VALUE...]
 *
 * The first list configures client 1, the second client 2 (the keys of
 * rb_opts_set: hostname=A,B export= timeout= keepalive= ...); without
 * "--" there is one client (a negative control: clients of two processes
 * do not move together).  Client n writes block BASE + n (4 KiB blocks;
 * BASE 0 by default), so that two processes can run side by side.  Prints
 * "ready" once both are connected, then a line "N: failed over" when
 * client N's failover count rises, and at the end "done" and exits 0, or
 * "error N: ..." and exits 1 at the first failed request.  SIGUSR1 ends
 * the run early, after the round under way, as if SECONDS were up. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pattern.h"
#include "rdmablk.h"
#include "util.h"

#define BLOCK 4096

static void
usage(void)
{
	fprintf(stderr, "usage: rdmablk-pair [-b BASE] SECONDS KEY=VALUE... [-- KEY=VALUE...]\n");
	exit(2);
}

static void
log_fn(enum rb_log_level level, const char *msg)
{
	if (level != RB_LOG_DEBUG)
		fprintf(stderr, "rdmablk-pair: %s: %s\n", rb_log_level_name(level), msg);
}

/* Client n's options from argv[*i] up to "--" or the end. */
static void
opts_from(struct rb_opts *o, int argc, char **argv, int *i)
{
	char err[256], *eq;

	rb_opts_init(o);
	for (; *i < argc && strcmp(argv[*i], "--") != 0; (*i)++) {
		eq = strchr(argv[*i], '=');
		if (eq == NULL)
			usage();
		*eq = '\0';
		if (rb_opts_set(o, argv[*i], eq + 1, err, sizeof(err)) < 0) {
			fprintf(stderr, "rdmablk-pair: %s\n", err);
			exit(2);
		}
		*eq = '=';
	}
	if (rb_opts_resolve(o, err, sizeof(err)) < 0) {
		fprintf(stderr, "rdmablk-pair: %s\n", err);
		exit(2);
	}
}

static uint64_t base;

/* SIGUSR1: the run ends as if its time were up.  The handler may run on
 * any thread (the library's own threads do not block signals), so the
 * flag is atomic; errno is the interrupted code's. */
static int stop;

static void
on_usr1(int sig)
{
	int saved = errno;

	(void)sig;
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	errno = saved;
}

/* Client n writes its block (base + n) with seed round and reads it back. */
static int
round_trip(struct rb_client *c, int n, uint64_t round)
{
	static uint8_t buf[BLOCK];
	uint64_t off = (base + (uint64_t)n) * BLOCK;
	int r;

	pattern_fill(buf, off, BLOCK, round);
	r = rb_write(c, buf, BLOCK, off, 0);
	if (r == 0)
		r = rb_read(c, buf, BLOCK, off);
	if (r == 0 && pattern_check(buf, off, BLOCK, round) >= 0)
		r = -EILSEQ;
	if (r < 0)
		printf("error %d: %s\n", n, r == -EILSEQ ? "data mismatch" : strerror(-r));
	return r;
}

int
main(int argc, char **argv)
{
	struct rb_opts o[2];
	struct rb_client *c[2];
	struct rb_stats st;
	uint64_t seconds, end, failovers[2] = { 0, 0 }, round;
	struct timespec tick = { .tv_sec = 0, .tv_nsec = 200000000 };
	int i = 2, n, r, nclients = 1;

	if (argc > 2 && strcmp(argv[1], "-b") == 0) {
		if (rb_parse_uint(argv[2], 0, 1u << 20, &base) < 0)
			usage();
		argc -= 2;
		argv += 2;
	}
	if (argc < 3 || rb_parse_uint(argv[1], 1, 3600, &seconds) < 0)
		usage();
	rb_set_log(log_fn);
	setvbuf(stdout, NULL, _IOLBF, 0);
	opts_from(&o[0], argc, argv, &i);
	if (i < argc) {
		i++;
		opts_from(&o[1], argc, argv, &i);
		nclients = 2;
	}
	for (n = 0; n < nclients; n++) {
		r = rb_client_open(&o[n], &c[n]);
		if (r < 0) {
			printf("error %d: connect: %s\n", n + 1, strerror(-r));
			return 1;
		}
	}
	signal(SIGUSR1, on_usr1);
	printf("ready\n");
	end = rb_now_ns() + seconds * 1000000000u;
	for (round = 1; rb_now_ns() < end && !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); round++) {
		for (n = 0; n < nclients; n++) {
			if (round_trip(c[n], n + 1, round) < 0)
				return 1;
			rb_client_stats(c[n], &st);
			if (st.failovers > failovers[n]) {
				failovers[n] = st.failovers;
				printf("%d: failed over\n", n + 1);
			}
		}
		nanosleep(&tick, NULL);
	}
	for (n = 0; n < nclients; n++) {
		rb_client_close(c[n]);
		rb_opts_free(&o[n]);
	}
	printf("done\n");
	return 0;
}
