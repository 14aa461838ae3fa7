/* rdmablk-history: a register workload on a block device, and the checker
 * of its history (tests/test-failover-history.sh; the model is Jepsen's
 * register checker, one register per block).
 *
 *   rdmablk-history run DEV NBLOCKS SECONDS THREADS HISTORY
 *   rdmablk-history check DEV NBLOCKS HISTORY
 *   rdmablk-history forge DEV BLOCK GENERATION
 *   rdmablk-history image FILE COUNT GENERATION
 *
 * run: THREADS threads write 4 KiB blocks 0..NBLOCKS-1 of DEV (O_DIRECT),
 * thread t only the blocks b with b % THREADS == t, one write at a time,
 * so the writes to one block are sequential.  A write of block b carries
 * generation g (1, 2, ... per block) and the writer's id in every 512-byte
 * sector, with a checksum.  Every so often a thread calls fdatasync (a
 * FLUSH).  Each write's invocation and outcome go to HISTORY, flushed line
 * by line:  "I b g", then "A b g" (acknowledged) or "E b g ERRNO"; a flush
 * is "F t" then "FA t" or "FE t ERRNO".  An error does not stop a thread.
 *
 * check: reads every block and judges it against HISTORY.  For block b,
 * with its writes W1..Wn in order and Wk the last acknowledged one, the
 * block must hold Wk's generation, or that of a later write Wj (j > k) whose
 * outcome is unknown (an error or no outcome: it may have landed).  An
 * anomaly is a block that holds
 *   - an older generation than Wk: an acknowledged write was undone;
 *   - a generation never written, or sectors that disagree or are torn;
 *   - nothing (zeros) although a write was acknowledged.
 * A write acknowledged before a FLUSH that was acknowledged is durable; a
 * lost one is an "acknowledged write undone" too, counted apart.  Prints
 * one line per anomaly and a summary "history: N writes (A acknowledged,
 * E failed, U unknown), F flushes, B blocks checked, X anomalies"; exits
 * 0 when there is none, 1 otherwise.
 *
 * forge: writes BLOCK as the write of GENERATION made it, as a stale write
 * landing late would: the checker's negative control.
 *
 * image: blocks 0..COUNT-1 of GENERATION into a regular file, for a tool
 * that writes a file's bytes (rdmablk-io write OFF LEN @FILE). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define BLOCK   4096
#define SECTOR  512
#define MAGIC   0x5448424bu   /* "KBHT" */

struct sector {
	uint32_t magic;
	uint32_t block;
	uint64_t gen;
	uint32_t writer;
	uint32_t sum;              /* of the fields above */
	uint8_t  fill[SECTOR - 24];
};
_Static_assert(sizeof(struct sector) == SECTOR, "sector");

static uint32_t
sector_sum(const struct sector *s)
{
	return s->magic ^ s->block ^ (uint32_t)s->gen ^ (uint32_t)(s->gen >> 32) ^
	       (s->writer * 2654435761u);
}

static void
usage(void)
{
	fprintf(stderr, "usage: rdmablk-history run DEV NBLOCKS SECONDS THREADS HISTORY\n"
		"       rdmablk-history check DEV NBLOCKS HISTORY\n"
		"       rdmablk-history forge DEV BLOCK GENERATION\n"
		"       rdmablk-history image FILE COUNT GENERATION\n");
	exit(2);
}

static uint64_t
num(const char *s, uint64_t max)
{
	uint64_t v;

	if (rb_parse_uint(s, 1, max, &v) < 0)
		usage();
	return v;
}

static void fill_block(struct sector *buf, uint64_t b, uint64_t g, uint32_t w);

/* ---- run ---- */

static int dev_fd;
static uint64_t nblocks, nthreads, end_ns;
static FILE *hist;
static pthread_mutex_t hist_mu = PTHREAD_MUTEX_INITIALIZER;

static void
hist_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void
hist_line(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&hist_mu);
	va_start(ap, fmt);
	vfprintf(hist, fmt, ap);
	va_end(ap);
	fflush(hist);
	pthread_mutex_unlock(&hist_mu);
}

static void *
writer(void *arg)
{
	uint64_t t = (uintptr_t)arg, b, g, *gens, n = 0;
	struct timespec nap = { 0, 20 * 1000000 };
	struct sector *buf;
	ssize_t r;

	gens = calloc(nblocks, sizeof(*gens));
	if (gens == NULL || posix_memalign((void **)&buf, BLOCK, BLOCK) != 0) {
		fprintf(stderr, "rdmablk-history: out of memory\n");
		exit(1);
	}
	srandom((unsigned)(t * 7919 + (uint64_t)getpid()));
	while (rb_now_ns() < end_ns) {
		do
			b = (uint64_t)random() % nblocks;
		while (b % nthreads != t);
		g = ++gens[b];
		fill_block(buf, b, g, (uint32_t)t);
		hist_line("I %" PRIu64 " %" PRIu64 "\n", b, g);
		r = pwrite(dev_fd, buf, BLOCK, (off_t)(b * BLOCK));
		if (r == BLOCK)
			hist_line("A %" PRIu64 " %" PRIu64 "\n", b, g);
		else
			hist_line("E %" PRIu64 " %" PRIu64 " %d\n", b, g, r < 0 ? errno : EIO);
		if (++n % 16 == 0) {
			hist_line("F %" PRIu64 "\n", t);
			if (fdatasync(dev_fd) == 0)
				hist_line("FA %" PRIu64 "\n", t);
			else
				hist_line("FE %" PRIu64 " %d\n", t, errno);
		}
		nanosleep(&nap, NULL);
	}
	free(gens);
	free(buf);
	return NULL;
}

static int
cmd_run(char **argv)
{
	pthread_t tid[64];
	uint64_t secs, t;

	nblocks = num(argv[1], 1u << 20);
	secs = num(argv[2], 86400);
	nthreads = num(argv[3], 64);
	if (nthreads > nblocks)
		usage();
	dev_fd = open(argv[0], O_RDWR | O_DIRECT);
	if (dev_fd < 0) {
		fprintf(stderr, "rdmablk-history: %s: %s\n", argv[0], strerror(errno));
		return 1;
	}
	hist = fopen(argv[4], "w");
	if (hist == NULL) {
		fprintf(stderr, "rdmablk-history: %s: %s\n", argv[4], strerror(errno));
		return 1;
	}
	end_ns = rb_now_ns() + secs * 1000000000u;
	for (t = 0; t < nthreads; t++)
		if (pthread_create(&tid[t], NULL, writer, (void *)(uintptr_t)t) != 0) {
			fprintf(stderr, "rdmablk-history: pthread_create failed\n");
			return 1;
		}
	for (t = 0; t < nthreads; t++)
		pthread_join(tid[t], NULL);
	fclose(hist);
	close(dev_fd);
	return 0;
}

/* Block b's 4 KiB as the write of generation g by writer 0 made it. */
static void
fill_block(struct sector *buf, uint64_t b, uint64_t g, uint32_t w)
{
	unsigned i;

	for (i = 0; i < BLOCK / SECTOR; i++) {
		memset(&buf[i], 0, sizeof(buf[i]));
		buf[i].magic = MAGIC;
		buf[i].block = (uint32_t)b;
		buf[i].gen = g;
		buf[i].writer = w;
		buf[i].sum = sector_sum(&buf[i]);
	}
}

/* forge DEV B G: write block B as generation G would have (a negative
 * control: a stale write landing late). */
static int
cmd_forge(char **argv)
{
	struct sector *buf;
	uint64_t b = 0, g = num(argv[2], UINT32_MAX);
	int fd;

	if (rb_parse_uint(argv[1], 0, 1u << 20, &b) < 0)
		usage();
	if (posix_memalign((void **)&buf, BLOCK, BLOCK) != 0)
		return 1;
	fill_block(buf, b, g, 0);
	fd = open(argv[0], O_RDWR | O_DIRECT);
	if (fd < 0 || pwrite(fd, buf, BLOCK, (off_t)(b * BLOCK)) != BLOCK || fdatasync(fd) < 0) {
		fprintf(stderr, "rdmablk-history: forge %s: %s\n", argv[0], strerror(errno));
		return 1;
	}
	close(fd);
	free(buf);
	return 0;
}

/* image FILE COUNT G: blocks 0..COUNT-1 as generation G wrote them, into
 * the regular file FILE: a payload for `rdmablk-io write OFF LEN @FILE`,
 * whose blocks are then checked as blocks 0..COUNT-1 of a copy of that
 * range (tests/test-rbd-stale-write.sh). */
static int
cmd_image(char **argv)
{
	uint64_t count = num(argv[1], 4096), g = num(argv[2], UINT32_MAX), b;
	struct sector buf[BLOCK / SECTOR];
	FILE *f = fopen(argv[0], "w");

	if (f == NULL) {
		fprintf(stderr, "rdmablk-history: image %s: %s\n", argv[0], strerror(errno));
		return 1;
	}
	for (b = 0; b < count; b++) {
		fill_block(buf, b, g, 0);
		if (fwrite(buf, 1, BLOCK, f) != BLOCK)
			break;
	}
	if (fclose(f) != 0 || b < count) {
		fprintf(stderr, "rdmablk-history: image %s: %s\n", argv[0], strerror(errno));
		return 1;
	}
	return 0;
}

/* ---- check ---- */

enum outcome { UNKNOWN, ACKED, FAILED };

struct write_rec {
	uint64_t gen;
	enum outcome out;
	int durable;               /* acknowledged before an acknowledged FLUSH */
};

struct block_hist {
	struct write_rec *w;       /* in generation order: w[g - 1] */
	uint64_t n, cap;
};

static struct write_rec *
rec_of(struct block_hist *h, uint64_t g)
{
	if (g == 0 || g > h->n)
		return NULL;
	return &h->w[g - 1];
}

static int
load_history(const char *path, struct block_hist *bh, uint64_t *counts)
{
	char line[128], op[4];
	uint64_t b, g, i, j;
	FILE *f = fopen(path, "r");
	struct write_rec *w;
	int n;

	if (f == NULL) {
		fprintf(stderr, "rdmablk-history: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		n = sscanf(line, "%3s %" SCNu64 " %" SCNu64, op, &b, &g);
		if (n >= 1 && strcmp(op, "FA") == 0) {
			/* Every write acknowledged so far is durable now. */
			counts[4]++;
			for (i = 0; i < nblocks; i++)
				for (j = 0; j < bh[i].n; j++)
					if (bh[i].w[j].out == ACKED)
						bh[i].w[j].durable = 1;
			continue;
		}
		if (n < 3 || b >= nblocks)
			continue;   /* F, FE, or a torn last line */
		if (strcmp(op, "I") == 0) {
			if (g != bh[b].n + 1) {
				fprintf(stderr, "rdmablk-history: %s: block %" PRIu64 " generation %"
					PRIu64 " out of order\n", path, b, g);
				fclose(f);
				return -1;
			}
			if (bh[b].n == bh[b].cap) {
				bh[b].cap = bh[b].cap ? bh[b].cap * 2 : 16;
				bh[b].w = realloc(bh[b].w, bh[b].cap * sizeof(*bh[b].w));
				if (bh[b].w == NULL)
					abort();
			}
			w = &bh[b].w[bh[b].n++];
			memset(w, 0, sizeof(*w));
			w->gen = g;
			counts[0]++;
		} else if ((w = rec_of(&bh[b], g)) != NULL) {
			w->out = strcmp(op, "A") == 0 ? ACKED : FAILED;
		}
	}
	fclose(f);
	for (i = 0; i < nblocks; i++)
		for (j = 0; j < bh[i].n; j++)
			counts[bh[i].w[j].out == ACKED ? 1 : bh[i].w[j].out == FAILED ? 2 : 3]++;
	return 0;
}

/* The generation block b holds: 0 for zeros; -1 (and why) when torn or
 * foreign. */
static int64_t
block_gen(const struct sector *s, uint64_t b, const char **why)
{
	static const uint8_t zero[SECTOR];
	unsigned i;

	if (memcmp(&s[0], zero, SECTOR) == 0) {
		for (i = 1; i < BLOCK / SECTOR; i++)
			if (memcmp(&s[i], zero, SECTOR) != 0) {
				*why = "torn: zeros and data";
				return -1;
			}
		return 0;
	}
	for (i = 0; i < BLOCK / SECTOR; i++) {
		if (s[i].magic != MAGIC || s[i].block != b || s[i].sum != sector_sum(&s[i])) {
			*why = "a sector that no write of this block wrote";
			return -1;
		}
		if (s[i].gen != s[0].gen) {
			*why = "torn: sectors of two generations";
			return -1;
		}
	}
	return (int64_t)s[0].gen;
}

/* The history and the read buffer go back before the check returns: a
 * leak report (SANITIZE=1) would fail it. */
static int
check_done(struct block_hist *bh, struct sector *buf, int fd, int rc)
{
	uint64_t b;

	if (fd >= 0)
		close(fd);
	for (b = 0; bh != NULL && b < nblocks; b++)
		free(bh[b].w);
	free(bh);
	free(buf);
	return rc;
}

static int
cmd_check(char **argv)
{
	struct block_hist *bh;
	struct sector *buf;
	uint64_t counts[5] = { 0 }, b, anomalies = 0, lost_durable = 0, last_ack, j;
	const char *why = "";
	int64_t v;
	int fd;

	nblocks = num(argv[1], 1u << 20);
	bh = calloc(nblocks, sizeof(*bh));
	buf = NULL;
	if (bh == NULL || posix_memalign((void **)&buf, BLOCK, BLOCK) != 0)
		return check_done(bh, NULL, -1, 1);
	if (load_history(argv[2], bh, counts) < 0)
		return check_done(bh, buf, -1, 1);
	fd = open(argv[0], O_RDONLY | O_DIRECT);
	if (fd < 0 && errno == EINVAL)
		fd = open(argv[0], O_RDONLY);   /* a copy on tmpfs */
	if (fd < 0) {
		fprintf(stderr, "rdmablk-history: %s: %s\n", argv[0], strerror(errno));
		return check_done(bh, buf, -1, 1);
	}
	for (b = 0; b < nblocks; b++) {
		if (pread(fd, buf, BLOCK, (off_t)(b * BLOCK)) != BLOCK) {
			printf("block %" PRIu64 ": read failed: %s\n", b, strerror(errno));
			anomalies++;
			continue;
		}
		v = block_gen(buf, b, &why);
		last_ack = 0;
		for (j = 0; j < bh[b].n; j++)
			if (bh[b].w[j].out == ACKED)
				last_ack = bh[b].w[j].gen;
		if (v < 0) {
			printf("block %" PRIu64 ": %s\n", b, why);
			anomalies++;
		} else if ((uint64_t)v > bh[b].n) {
			printf("block %" PRIu64 ": holds generation %" PRId64 ", never written (last "
			       "written %" PRIu64 ")\n", b, v, bh[b].n);
			anomalies++;
		} else if ((uint64_t)v < last_ack) {
			struct write_rec *w = rec_of(&bh[b], last_ack);

			printf("block %" PRIu64 ": holds generation %" PRId64 ", older than the "
			       "acknowledged %" PRIu64 "%s: an acknowledged write was undone\n", b, v,
			       last_ack, w != NULL && w->durable ? " (durable: a FLUSH after it was "
			       "acknowledged)" : "");
			anomalies++;
			if (w != NULL && w->durable)
				lost_durable++;
		}
	}
	printf("history: %" PRIu64 " writes (%" PRIu64 " acknowledged, %" PRIu64 " failed, %"
	       PRIu64 " unknown), %" PRIu64 " flushes acknowledged, %" PRIu64 " blocks checked, %"
	       PRIu64 " anomalies (%" PRIu64 " of durable writes)\n", counts[0], counts[1],
	       counts[2], counts[3], counts[4], nblocks, anomalies, lost_durable);
	return check_done(bh, buf, fd, anomalies == 0 ? 0 : 1);
}

int
main(int argc, char **argv)
{
	if (argc == 7 && strcmp(argv[1], "run") == 0)
		return cmd_run(argv + 2);
	if (argc == 5 && strcmp(argv[1], "check") == 0)
		return cmd_check(argv + 2);
	if (argc == 5 && strcmp(argv[1], "forge") == 0)
		return cmd_forge(argv + 2);
	if (argc == 5 && strcmp(argv[1], "image") == 0)
		return cmd_image(argv + 2);
	usage();
	return 2;
}
