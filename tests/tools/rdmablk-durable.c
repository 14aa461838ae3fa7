/* rdmablk-durable: the power-cut test's writer and checker.
 *
 *   rdmablk-durable -H HOST [-p PORT] -e EXPORT [-F | -U] [-i MS] write BLOCKS SEED
 *       Forever: pick a block, write its next generation, and once the
 *       target acknowledged it as durable print "ACK <block> <gen>" on
 *       stdout (flushed at once: the host reads it from the serial console
 *       after it kills the guest).  -F sets FUA on each write; without it the
 *       export must be durability = always (the library fails a FUA write
 *       whose reply lacks the durable bit, and without FUA we check the
 *       export's DURABLE_ALL flag before writing anything).
 *       -U is the power-cut test's negative control: plain writes on any
 *       export, each plain acknowledgement printed as ACK although nothing
 *       promised it durable.  On durability = fua the check must then find
 *       lost writes, or the check is blind.
 *       -i MS pauses MS milliseconds after each acknowledged write: a writer
 *       that only has to keep its target writing (and holding an RBD
 *       image's lock) need not keep two emulated CPUs busy.
 *   rdmablk-durable -H HOST ... check BLOCKS SEED
 *       Read every block and print "HAVE <block> <gen>" or "TORN <block>
 *       <sector> <why>" for a sector that is not a whole, self-consistent
 *       generation of its block.
 *
 * Each 4 KiB block is 8 sectors of 512 bytes; every sector starts with
 * (magic, seed, block, sector, gen) and the rest is a pattern of those, so
 * a sector can be recognised on its own after a torn write.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"
#include "protocol.h"
#include "rdmablk.h"
#include "util.h"

#define BLOCK   4096u
#define SECTOR  512u
#define MAGIC   0x5244424c4b445552ull  /* "RUDKLBDR" */

struct sector_hdr {
	uint64_t magic, seed, block, sector, gen;
};

static void
fill_block(uint8_t *buf, uint64_t seed, uint64_t block, uint64_t gen)
{
	for (unsigned s = 0; s < BLOCK / SECTOR; s++) {
		struct sector_hdr h = { MAGIC, seed, block, s, gen };
		uint8_t *p = buf + s * SECTOR;

		memcpy(p, &h, sizeof(h));
		pattern_fill(p + sizeof(h), 0, SECTOR - sizeof(h),
			     seed ^ (block << 20) ^ (gen << 36) ^ s);
	}
}

/* Generation held by one sector, or -1 (never written: all zeros), or -2
 * (garbage: a torn or misplaced sector). */
static long long
sector_gen(const uint8_t *p, uint64_t seed, uint64_t block, unsigned s)
{
	struct sector_hdr h;
	size_t i;

	memcpy(&h, p, sizeof(h));
	if (h.magic != MAGIC) {
		for (i = 0; i < SECTOR; i++)
			if (p[i] != 0)
				return -2;
		return -1;
	}
	if (h.seed != seed || h.block != block || h.sector != s)
		return -2;
	if (pattern_check(p + sizeof(h), 0, SECTOR - sizeof(h),
			  seed ^ (block << 20) ^ (h.gen << 36) ^ s) >= 0)
		return -2;
	return (long long)h.gen;
}

static int
do_write(struct rb_client *c, uint64_t blocks, uint64_t seed, int fua, int unsafe,
	 unsigned pause_ms)
{
	struct timespec pause = { .tv_sec = pause_ms / 1000,
				  .tv_nsec = (long)(pause_ms % 1000) * 1000000 };
	uint64_t *gen = calloc(blocks, sizeof(*gen));
	uint8_t *buf = aligned_alloc(BLOCK, BLOCK);
	uint64_t x = seed | 1;
	int r;

	if (gen == NULL || buf == NULL) {
		fprintf(stderr, "rdmablk-durable: out of memory\n");
		goto out_free;
	}
	if (!fua && !unsafe && !(rb_client_export(c)->flags & RB_EXP_DURABLE_ALL)) {
		fprintf(stderr, "rdmablk-durable: export is not durability = always; use -F\n");
		goto out_free;
	}
	printf("START %" PRIu64 " %" PRIu64 "\n", blocks, seed);
	fflush(stdout);
	for (;;) {
		uint64_t b;

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		b = x % blocks;
		fill_block(buf, seed, b, gen[b] + 1);
		r = rb_write(c, buf, BLOCK, b * BLOCK, fua ? RB_IO_FUA : 0);
		if (r < 0) {
			fprintf(stderr, "rdmablk-durable: write block %" PRIu64 ": %s\n",
				b, strerror(-r));
			goto out_free;
		}
		gen[b]++;
		printf("ACK %" PRIu64 " %" PRIu64 "\n", b, gen[b]);
		fflush(stdout);
		if (pause_ms > 0)
			nanosleep(&pause, NULL);
	}
out_free:
	free(buf);
	free(gen);
	return 1;
}

static int
do_check(struct rb_client *c, uint64_t blocks, uint64_t seed)
{
	uint8_t *buf = aligned_alloc(BLOCK, BLOCK);
	int bad = 0, r;

	if (buf == NULL)
		return 1;
	for (uint64_t b = 0; b < blocks; b++) {
		long long g0 = 0;

		r = rb_read(c, buf, BLOCK, b * BLOCK);
		if (r < 0) {
			fprintf(stderr, "rdmablk-durable: read block %" PRIu64 ": %s\n",
				b, strerror(-r));
			free(buf);
			return 1;
		}
		for (unsigned s = 0; s < BLOCK / SECTOR; s++) {
			long long g = sector_gen(buf + s * SECTOR, seed, b, s);

			if (g == -2) {
				printf("TORN %" PRIu64 " %u garbage\n", b, s);
				bad = 1;
				g = 0;
			}
			if (g < 0)
				g = 0;
			/* Sectors of one block may differ by one generation
			 * (a torn in-flight write); report the oldest, which
			 * is what the durability promise is checked against. */
			if (s == 0 || g < g0)
				g0 = g;
		}
		printf("HAVE %" PRIu64 " %lld\n", b, g0);
	}
	fflush(stdout);
	free(buf);
	return bad;
}

static void
usage(void)
{
	fprintf(stderr, "usage: rdmablk-durable -H HOST [-p PORT] -e EXPORT [-F | -U] "
		"[-i MS] write|check BLOCKS SEED\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct rb_opts o;
	struct rb_client *c;
	uint64_t blocks, seed;
	int opt, fua = 0, unsafe = 0, r;
	uint64_t pause_ms = 0;

	rb_opts_init(&o);
	o.queue_depth = 4;
	while ((opt = getopt(argc, argv, "H:p:e:FUi:")) != -1) {
		switch (opt) {
		case 'H': o.host = optarg; break;
		case 'p': o.port = (uint16_t)atoi(optarg); break;
		case 'e': o.export_name = optarg; break;
		case 'F': fua = 1; break;
		case 'U': unsafe = 1; break;
		case 'i':
			if (rb_parse_uint(optarg, 0, 60000, &pause_ms) < 0) {
				fprintf(stderr, "rdmablk-durable: -i %s: not a pause of 0 to "
					"60000 ms\n", optarg);
				return 2;
			}
			break;
		default: usage();
		}
	}
	if (o.host == NULL || o.export_name == NULL || argc - optind != 3 ||
	    (fua && unsafe))
		usage();
	blocks = strtoull(argv[optind + 1], NULL, 0);
	seed = strtoull(argv[optind + 2], NULL, 0);
	if (blocks == 0)
		usage();
	r = rb_client_open(&o, &c);
	if (r < 0) {
		fprintf(stderr, "rdmablk-durable: connect: %s\n", strerror(-r));
		return 1;
	}
	if (blocks * BLOCK > rb_client_export(c)->size) {
		fprintf(stderr, "rdmablk-durable: export smaller than %" PRIu64 " blocks\n", blocks);
		return 1;
	}
	if (strcmp(argv[optind], "write") == 0)
		r = do_write(c, blocks, seed, fua, unsafe, (unsigned)pause_ms);
	else if (strcmp(argv[optind], "check") == 0)
		r = do_check(c, blocks, seed);
	else
		usage();
	rb_client_close(c);
	return r;
}
