/* rdmablk-io: a command-line client over the initiator library, for tests.
 *
 *   rdmablk-io -H HOST [-p PORT] -e EXPORT [-q QD] [-t TIMEOUT_S]
 *              [-k KEEPALIVE_S] [-i PAUSE_MS] [-b] [-s] [-v] CMD ...
 *   info | write OFF LEN SEED|@FILE [--fua] | read OFF LEN SEED | dump OFF LEN |
 *   flush | trim OFF LEN | zero OFF LEN | stress SECONDS THREADS [MAXLEN] |
 *   list | pattern OFF LEN SEED   (no connection)
 *
 * stress ends after SECONDS, or earlier on SIGUSR1 (each thread finishes
 * and verifies the pair it is doing), with the same report and status.
 * With -i (stress only) each thread pauses PAUSE_MS (0..60000, never past
 * SECONDS) after each verified pair: a bystander that keeps a connection
 * busy without taking the CPUs its test needs (under TCG a flat-out client
 * costs a CPU).
 *
 * Exit 0 on success; otherwise "rdmablk-io: CMD: strerror (ERRNO-NAME)" on
 * stderr and exit 1.  -s prints the library's counters (copy time...) to
 * stderr at the end; -v prints the library's debug messages.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conn-opts.h"
#include "pattern.h"
#include "payload.h"
#include "protocol.h"
#include "rdmablk.h"
#include "util.h"

#define CHUNK (8u << 20)
#define STRESS_REGION (64ull << 20)

static const char *cmd = "";
static int verbose;

static void
log_fn(enum rb_log_level level, const char *msg)
{
	if (level == RB_LOG_ERROR)
		fprintf(stderr, "rdmablk-io: %s\n", msg);
	else if (level != RB_LOG_DEBUG || verbose)
		fprintf(stderr, "rdmablk-io: %s: %s\n", rb_log_level_name(level), msg);
}

static int
fail(int err)
{
	const char *name = strerrorname_np(err);

	fprintf(stderr, "rdmablk-io: %s: %s (%s)\n", cmd, strerror(err),
		name ? name : "?");
	return 1;
}

static void
usage(void)
{
	fprintf(stderr,
		"usage: rdmablk-io -H HOST [-p PORT] -e EXPORT [-q QD] [-t TIMEOUT_S]\n"
		"                  [-k KEEPALIVE_S] [-S SECRET_FILE] [-M window|static]\n"
		"                  [-B SOURCE_ADDR] [-i PAUSE_MS] [-b | -a] [-s] [-v] CMD ...\n"
		"  info | write OFF LEN SEED [--fua] | read OFF LEN SEED | dump OFF LEN\n"
		"  flush | trim OFF LEN | zero OFF LEN | stress SECONDS THREADS [MAXLEN]\n"
		"  (-i: stress pauses PAUSE_MS after each verified pair)\n"
		"  list | pattern OFF LEN SEED\n");
	exit(2);
}

static uint64_t
num(const char *s)
{
	uint64_t v;

	if (rb_parse_size(s, &v) < 0) {
		fprintf(stderr, "rdmablk-io: %s: '%s' is not a number\n", cmd, s);
		exit(2);
	}
	return v;
}

static uint64_t
seed_arg(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || end == s) {
		fprintf(stderr, "rdmablk-io: %s: bad seed '%s'\n", cmd, s);
		exit(2);
	}
	return v;
}

static void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL) {
		fprintf(stderr, "rdmablk-io: out of memory\n");
		exit(1);
	}
	return p;
}

static int
cmd_pattern(uint64_t off, uint64_t len, uint64_t seed)
{
	uint8_t *buf = xmalloc(CHUNK);

	while (len > 0) {
		size_t n = len > CHUNK ? CHUNK : (size_t)len;

		pattern_fill(buf, off, n, seed);
		if (fwrite(buf, 1, n, stdout) != n) {
			free(buf);
			return fail(errno ? errno : EIO);
		}
		off += n;
		len -= n;
	}
	free(buf);
	return fflush(stdout) == 0 ? 0 : fail(errno);
}

static void
print_flag(uint32_t flags, uint32_t bit, const char *name, int *first)
{
	if (flags & bit) {
		printf("%s%s", *first ? "" : ",", name);
		*first = 0;
	}
}

static int
cmd_info(struct rb_client *c)
{
	const struct rb_export_desc *d = rb_client_export(c);
	int first = 1;

	printf("size=%" PRIu64 "\n", d->size);
	printf("flags=0x%x\n", d->flags);
	printf("flag_names=");
	print_flag(d->flags, RB_EXP_READ_ONLY, "read_only", &first);
	print_flag(d->flags, RB_EXP_FLUSH, "flush", &first);
	print_flag(d->flags, RB_EXP_FUA, "fua", &first);
	print_flag(d->flags, RB_EXP_TRIM, "trim", &first);
	print_flag(d->flags, RB_EXP_ZEROES, "zeroes", &first);
	print_flag(d->flags, RB_EXP_MULTI_CONN, "multi_conn", &first);
	print_flag(d->flags, RB_EXP_DURABLE_ALL, "durable_all", &first);
	print_flag(d->flags, RB_EXP_FAST_ZERO, "fast_zero", &first);
	print_flag(d->flags, RB_EXP_SHARED, "shared", &first);
	print_flag(d->flags, RB_EXP_TTL, "ttl", &first);
	printf("\n");
	printf("read_only=%d\n", (d->flags & RB_EXP_READ_ONLY) != 0);
	printf("qd=%u\n", d->queue_depth);
	printf("max_io=%u\n", d->max_io);
	printf("min_block=%u\n", d->min_block);
	printf("pref_block=%u\n", d->pref_block);
	printf("inline_max=%u\n", d->inline_max);
	printf("description=%s\n", d->description);
	return 0;
}

/* SEED's pattern, or with file (write OFF LEN @FILE) that file's bytes. */
static int
cmd_write(struct rb_client *c, uint64_t off, uint64_t len, uint64_t seed,
	  const char *file, unsigned flags)
{
	uint8_t *buf = xmalloc(CHUNK);
	uint64_t pos = 0;
	int r = 0;

	while (len > 0 && r == 0) {
		size_t n = len > CHUNK ? CHUNK : (size_t)len;

		if (payload_fill(buf, off, pos, n, seed, file) < 0) {
			r = -errno;
			fprintf(stderr, "rdmablk-io: write: %s: %s\n", file, strerror(errno));
			break;
		}
		r = rb_write(c, buf, n, off, flags);
		off += n;
		pos += n;
		len -= n;
	}
	free(buf);
	return r < 0 ? fail(-r) : 0;
}

static int
cmd_read(struct rb_client *c, uint64_t off, uint64_t len, uint64_t seed)
{
	uint8_t *buf = xmalloc(CHUNK);
	long long bad;
	int r = 0;

	while (len > 0) {
		size_t n = len > CHUNK ? CHUNK : (size_t)len;

		r = rb_read(c, buf, n, off);
		if (r < 0)
			break;
		bad = pattern_check(buf, off, n, seed);
		if (bad >= 0) {
			fprintf(stderr, "rdmablk-io: read: data mismatch at offset "
				"%" PRIu64 " (got 0x%02x, expected 0x%02x)\n",
				off + (uint64_t)bad, buf[bad],
				pattern_byte(seed, off + (uint64_t)bad));
			free(buf);
			return 1;
		}
		off += n;
		len -= n;
	}
	free(buf);
	return r < 0 ? fail(-r) : 0;
}

static int
cmd_dump(struct rb_client *c, uint64_t off, uint64_t len)
{
	uint8_t *buf = xmalloc(CHUNK);
	int r = 0;

	while (len > 0) {
		size_t n = len > CHUNK ? CHUNK : (size_t)len;

		r = rb_read(c, buf, n, off);
		if (r < 0)
			break;
		if (fwrite(buf, 1, n, stdout) != n) {
			r = -(errno ? errno : EIO);
			break;
		}
		off += n;
		len -= n;
	}
	free(buf);
	if (r == 0 && fflush(stdout) != 0)
		r = -errno;
	return r < 0 ? fail(-r) : 0;
}

static int
list_cb(void *opaque, const char *name, const char *desc)
{
	(void)opaque;
	printf("%s\t%s\n", name, desc);
	return 0;
}

/* ---- stress: THREADS threads, each owning one slice of the region and a
 * shadow of which seed last wrote each block of it. ---- */

struct stress {
	struct rb_client *c;
	uint64_t          deadline_ns;
	uint64_t          maxlen;
	uint32_t          block;
	uint64_t          slice_off;
	uint64_t          slice_len;
	unsigned          id;
	uint64_t         *seeds;      /* per block; 0: never written */
	uint64_t          ops;
	uint64_t          bytes;
	int               err;        /* errno, or -1 for a data mismatch */
};

/* SIGUSR1: stress stops as if its time were up.  Set by the handler, read
 * by the stress threads: atomic, so the threads see it (a volatile
 * sig_atomic_t is enough for the handler's own thread, not for them). */
static int stress_stop;
/* -i: each stress thread's pause after a verified pair, in ms. */
static uint64_t stress_pause_ms;

static void
stress_on_usr1(int sig)
{
	int saved = errno;

	(void)sig;
	__atomic_store_n(&stress_stop, 1, __ATOMIC_RELEASE);
	errno = saved;
}

static uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Verify [off, off+len) of the slice against the shadow. */
static int
stress_verify(struct stress *st, const uint8_t *buf, uint64_t off, uint64_t len)
{
	uint64_t b;

	for (b = 0; b < len / st->block; b++) {
		uint64_t boff = off + b * st->block;
		uint64_t seed = st->seeds[(boff - st->slice_off) / st->block];
		long long bad;

		if (seed == 0)
			continue;
		bad = pattern_check(buf + b * st->block, boff, st->block, seed);
		if (bad >= 0) {
			fprintf(stderr, "rdmablk-io: stress: data mismatch at offset "
				"%" PRIu64 " (thread %u)\n", boff + (uint64_t)bad, st->id);
			return -1;
		}
	}
	return 0;
}

static void *
stress_thread(void *arg)
{
	struct stress *st = arg;
	uint64_t rng = 0x1234567ull * (st->id + 1) ^ rb_now_ns();
	uint64_t nblocks = st->slice_len / st->block, maxb = st->maxlen / st->block;
	uint8_t *buf = xmalloc(st->maxlen);
	uint64_t iter = 0;
	int r;

	if (maxb > nblocks)
		maxb = nblocks;
	while (rb_now_ns() < st->deadline_ns && !__atomic_load_n(&stress_stop, __ATOMIC_ACQUIRE)) {
		uint64_t nb = 1 + xorshift(&rng) % maxb;
		uint64_t first = xorshift(&rng) % (nblocks - nb + 1);
		uint64_t off = st->slice_off + first * st->block, len = nb * st->block;
		uint64_t seed = ((uint64_t)(st->id + 1) << 40) | ++iter, b;

		pattern_fill(buf, off, len, seed);
		r = rb_write(st->c, buf, len, off, 0);
		if (r < 0) {
			st->err = -r;
			break;
		}
		for (b = 0; b < nb; b++)
			st->seeds[first + b] = seed;
		/* Read back a random range that overlaps what was just written. */
		nb = 1 + xorshift(&rng) % maxb;
		first = first + nb > nblocks ? nblocks - nb : first;
		off = st->slice_off + first * st->block;
		len = nb * st->block;
		r = rb_read(st->c, buf, len, off);
		if (r < 0) {
			st->err = -r;
			break;
		}
		if (stress_verify(st, buf, off, len) < 0) {
			st->err = -1;
			break;
		}
		st->ops += 2;
		st->bytes += len * 2;
		if (stress_pause_ms > 0) {
			uint64_t now = rb_now_ns(), ns = stress_pause_ms * 1000000u;
			struct timespec nap;

			if (now >= st->deadline_ns)
				break;
			if (ns > st->deadline_ns - now)
				ns = st->deadline_ns - now;   /* not past SECONDS */
			nap.tv_sec = (time_t)(ns / 1000000000u);
			nap.tv_nsec = (long)(ns % 1000000000u);
			nanosleep(&nap, NULL);   /* EINTR (SIGUSR1): stop sooner */
		}
	}
	free(buf);
	return NULL;
}

static int
cmd_stress(struct rb_client *c, uint64_t seconds, uint64_t threads, uint64_t maxlen)
{
	const struct rb_export_desc *d = rb_client_export(c);
	uint64_t region = d->size < STRESS_REGION ? d->size : STRESS_REGION;
	uint64_t slice, ops = 0, bytes = 0, t0 = rb_now_ns();
	struct stress *st;
	pthread_t *tid;
	unsigned i;
	int err = 0;

	if (threads == 0 || threads > 256 || maxlen < d->min_block) {
		fprintf(stderr, "rdmablk-io: stress: need 1..256 threads and "
			"MAXLEN >= %u\n", d->min_block);
		return 2;
	}
	slice = region / threads / d->min_block * d->min_block;
	if (slice == 0)
		return fail(EINVAL);
	maxlen = maxlen / d->min_block * d->min_block;
	st = calloc(threads, sizeof(*st));
	tid = calloc(threads, sizeof(*tid));
	if (st == NULL || tid == NULL)
		return fail(ENOMEM);
	signal(SIGUSR1, stress_on_usr1);
	/* Allocate everything before the first thread starts, so that no
	 * failure can return (and close the client) under running threads. */
	for (i = 0; i < threads; i++) {
		st[i].c = c;
		st[i].deadline_ns = t0 + seconds * 1000000000ull;
		st[i].maxlen = maxlen;
		st[i].block = d->min_block;
		st[i].slice_off = i * slice;
		st[i].slice_len = slice;
		st[i].id = i;
		st[i].seeds = calloc(slice / d->min_block, sizeof(uint64_t));
		if (st[i].seeds == NULL)
			return fail(ENOMEM);
	}
	for (i = 0; i < threads; i++) {
		if (pthread_create(&tid[i], NULL, stress_thread, &st[i]) != 0) {
			/* Stop early: the started threads still finish by their
			 * deadline and are joined below. */
			fprintf(stderr, "rdmablk-io: stress: only %u of %u threads started\n",
				i, (unsigned)threads);
			threads = i;
			err = EAGAIN;
			break;
		}
	}
	for (i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		ops += st[i].ops;
		bytes += st[i].bytes;
		if (st[i].err != 0 && err == 0)
			err = st[i].err;
		free(st[i].seeds);
	}
	free(st);
	free(tid);
	printf("ops=%" PRIu64 " bytes=%" PRIu64 " seconds=%.1f\n", ops, bytes,
	       (double)(rb_now_ns() - t0) / 1e9);
	if (err == -1)
		return 1;
	return err ? fail(err) : 0;
}

static void
print_stats(struct rb_client *c)
{
	struct rb_stats s;

	rb_client_stats(c, &s);
	fprintf(stderr, "stats: requests=%" PRIu64 " resent=%" PRIu64
		" reconnects=%" PRIu64 " failovers=%" PRIu64 " keepalives=%" PRIu64
		" copy_bytes=%" PRIu64 " copy_ns=%" PRIu64 " copy_MBps=%.0f"
		" leader_sleeps=%" PRIu64 " follower_wakes=%" PRIu64
		" handoffs=%" PRIu64 " inline_read_bytes=%" PRIu64
		" imm_read_replies=%" PRIu64 "\n",
		s.requests, s.resent, s.reconnects, s.failovers, s.keepalives, s.copy_bytes,
		s.copy_ns, s.copy_ns ? (double)s.copy_bytes * 1e3 / (double)s.copy_ns : 0.0,
		s.leader_sleeps, s.follower_wakes, s.handoffs, s.inline_read_bytes,
		s.imm_read_replies);
}

static void
need_args(int argc, int n)
{
	if (argc < n)
		usage();
}

int
main(int argc, char **argv)
{
	struct rb_opts o;
	struct rb_client *c;
	int opt, stats = 0, r;

	rb_opts_init(&o);
	rb_set_log(log_fn);
	while ((opt = getopt(argc, argv, "+H:p:e:q:t:k:S:M:B:i:absvh")) != -1) {
		cmd = "options";
		r = conn_opt(opt, optarg, &o);
		if (r < 0)
			usage();
		if (r > 0)
			continue;
		switch (opt) {
		case 'S': o.secret_file = optarg; break;
		case 'M':
			if (strcmp(optarg, "static") == 0)
				o.mr = RB_MR_STATIC;
			else if (strcmp(optarg, "window") == 0)
				o.mr = RB_MR_WINDOW;
			else
				usage();
			break;
		case 'i':
			if (rb_parse_uint(optarg, 0, 60000, &stress_pause_ms) < 0) {
				fprintf(stderr, "rdmablk-io: -i %s: not a pause of 0 to "
					"60000 ms\n", optarg);
				return 2;
			}
			break;
		case 'b': o.busy_poll = RB_BUSY_POLL_YES; break;
		case 'a': o.busy_poll = RB_BUSY_POLL_ADAPTIVE; break;
		case 's': stats = 1; break;
		case 'v': verbose = 1; break;
		default: usage();
		}
	}
	argc -= optind;
	argv += optind;
	need_args(argc, 1);
	cmd = argv[0];

	if (strcmp(cmd, "pattern") == 0) {
		need_args(argc, 4);
		return cmd_pattern(num(argv[1]), num(argv[2]), seed_arg(argv[3]));
	}
	if (o.host == NULL)
		usage();
	if (strcmp(cmd, "list") == 0) {
		r = rb_list_exports(&o, list_cb, NULL);
		return r < 0 ? fail(-r) : 0;
	}
	if (o.export_name == NULL)
		usage();
	/* Validate the command line before connecting. */
	if (strcmp(cmd, "write") == 0)
		need_args(argc, 4);
	else if (strcmp(cmd, "read") == 0)
		need_args(argc, 4);
	else if (strcmp(cmd, "dump") == 0 || strcmp(cmd, "trim") == 0 ||
		 strcmp(cmd, "zero") == 0)
		need_args(argc, 3);
	else if (strcmp(cmd, "stress") == 0)
		need_args(argc, 3);
	else if (strcmp(cmd, "info") != 0 && strcmp(cmd, "flush") != 0)
		usage();

	r = rb_client_open(&o, &c);
	if (r < 0)
		return fail(-r);
	if (strcmp(cmd, "info") == 0)
		r = cmd_info(c);
	else if (strcmp(cmd, "write") == 0)
		r = cmd_write(c, num(argv[1]), num(argv[2]),
			      argv[3][0] == '@' ? 0 : seed_arg(argv[3]),
			      argv[3][0] == '@' ? argv[3] + 1 : NULL,
			      argc > 4 && strcmp(argv[4], "--fua") == 0 ? RB_IO_FUA : 0);
	else if (strcmp(cmd, "read") == 0)
		r = cmd_read(c, num(argv[1]), num(argv[2]), seed_arg(argv[3]));
	else if (strcmp(cmd, "dump") == 0)
		r = cmd_dump(c, num(argv[1]), num(argv[2]));
	else if (strcmp(cmd, "flush") == 0)
		r = (r = rb_flush(c)) < 0 ? fail(-r) : 0;
	else if (strcmp(cmd, "trim") == 0)
		r = (r = rb_trim(c, num(argv[2]), num(argv[1]), 0)) < 0 ? fail(-r) : 0;
	else if (strcmp(cmd, "zero") == 0)
		r = (r = rb_zero(c, num(argv[2]), num(argv[1]), 0)) < 0 ? fail(-r) : 0;
	else
		r = cmd_stress(c, num(argv[1]), num(argv[2]),
			       argc > 3 ? num(argv[3]) : 256 * 1024);
	if (stats)
		print_stats(c);
	rb_client_close(c);
	return r;
}
