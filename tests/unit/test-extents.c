/* Unit test for target/io/extents.c, BLOCK_STATUS of files and block devices:
 * a sparse temporary file (SEEK_DATA/SEEK_HOLE of the host's file system)
 * must come back as exactly its holes and data, a range that starts inside
 * a hole or data too, a partly written block as data, and more extents
 * than a reply holds as a prefix of the range. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../target/io/extents.h"

#include "check.h"

static unsigned char reply[sizeof(struct rb_extent) * RB_EXTENTS_MAX];
static char data[64 * 1024];

/* The extents of [off, off + len) as "length:D|H" words. */
static const char *
map(int fd, int is_blockdev, uint64_t off, uint32_t len, unsigned *n, uint64_t *covered)
{
	static char out[8192];
	struct rb_extent_list l;
	struct rb_rep_info rep = { 0 };
	struct rb_extent_info e;
	size_t at = 0;
	unsigned i;

	rb_extent_list_init(&l, reply);
	CHECK(extents_of_fd(fd, is_blockdev, off, len, 512, &l) == 0);
	rep.nextents = l.n;
	rep.extents = reply;
	out[0] = '\0';
	for (i = 0; i < l.n && at < sizeof(out) - 32; i++) {
		rb_extent_get(&rep, i, &e);
		at += (size_t)snprintf(out + at, sizeof(out) - at, "%s%u:%s", i ? " " : "",
				       e.length, e.flags == RB_EXT_DATA ? "D" :
				       e.flags == (RB_EXT_HOLE | RB_EXT_ZERO) ? "H" : "?");
	}
	*n = l.n;
	*covered = l.covered;
	return out;
}

static void
put(int fd, const void *buf, size_t len, off_t off)
{
	CHECK(pwrite(fd, buf, len, off) == (ssize_t)len);
}

int
main(void)
{
	char path[] = "/tmp/rdmablk-test-extents.XXXXXX";
	uint64_t covered;
	unsigned n, i;
	const char *m;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return 1;
	unlink(path);
	memset(data, 0xa5, sizeof(data));
	CHECK(ftruncate(fd, 4 << 20) == 0);
	put(fd, data, sizeof(data), 1 << 20);           /* 64 KiB of data at 1 MiB */
	put(fd, data, 100, (3 << 20) + 8192);           /* 100 bytes inside a block */
	CHECK(fsync(fd) == 0);

	m = map(fd, 0, 0, 4 << 20, &n, &covered);
	printf("whole file: %s\n", m);
	/* The second data extent is one file-system block (the host's, 4 KiB
	 * on most): take it from the answer, and check everything else. */
	{
		unsigned blk = 0;
		char want[256];

		if (sscanf(m, "%*u:H %*u:D %*u:H %u:D", &blk) != 1)
			blk = 0;
		CHECK(blk >= 512 && blk % 512 == 0);
		snprintf(want, sizeof(want), "1048576:H 65536:D %u:H %u:D %u:H",
			 (3u << 20) + 8192 - (1u << 20) - 65536 - ((3u << 20) + 8192) % blk, blk,
			 (4u << 20) - ((3u << 20) + 8192 - ((3u << 20) + 8192) % blk) - blk);
		checkf(strcmp(m, want) == 0, "extents are exactly the file's (want %s)", want);
	}
	CHECK(covered == 4u << 20);

	/* From inside the hole, and from inside the data. */
	m = map(fd, 0, 512 * 1024, 1 << 20, &n, &covered);
	checkf(strcmp(m, "524288:H 65536:D 458752:H") == 0, "from inside a hole: %s", m);
	m = map(fd, 0, (1 << 20) + 4096, 8192, &n, &covered);
	checkf(strcmp(m, "8192:D") == 0, "inside the data: %s", m);

	/* A block device: all data. */
	m = map(fd, 1, 0, 4 << 20, &n, &covered);
	checkf(strcmp(m, "4194304:D") == 0, "a block device is all data: %s", m);

	/* More extents than a reply holds: a prefix, of exactly RB_EXTENTS_MAX. */
	CHECK(ftruncate(fd, 0) == 0 && ftruncate(fd, 8 << 20) == 0);
	for (i = 0; i < RB_EXTENTS_MAX; i++)
		put(fd, data, 4096, (off_t)i * 16384);
	CHECK(fsync(fd) == 0);
	map(fd, 0, 0, 8 << 20, &n, &covered);
	checkf(n == RB_EXTENTS_MAX && covered < (8u << 20) && covered % 512 == 0,
	       "more extents than a reply holds: a prefix of RB_EXTENTS_MAX");
	close(fd);
	printf("test-extents: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
