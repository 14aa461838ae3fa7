/* BLOCK_STATUS for files and block devices (extents.h). */
#include <errno.h>
#include <unistd.h>

#include "extents.h"

static uint64_t
round_up(uint64_t v, uint32_t block)
{
	return v % block == 0 ? v : v + (block - v % block);
}

int
extents_of_fd(int fd, int is_blockdev, uint64_t off, uint32_t len, uint32_t block,
	      struct rb_extent_list *l)
{
	uint64_t pos = off, end = off + len, data, hole;
	off_t r;

	if (is_blockdev) {
		/* A device says nothing of its allocation: all of it is data. */
		rb_extent_list_add(l, len, RB_EXT_DATA);
		return 0;
	}
	while (pos < end) {
		r = lseek(fd, (off_t)pos, SEEK_DATA);
		if (r < 0 && errno == ENXIO) {
			/* No data from pos to the end of the file. */
			data = end;
		} else if (r < 0 && errno == EINVAL && pos == off) {
			/* A file system without SEEK_DATA: all data. */
			rb_extent_list_add(l, len, RB_EXT_DATA);
			return 0;
		} else if (r < 0) {
			return -errno;
		} else {
			/* A partly allocated block counts as data. */
			data = (uint64_t)r - (uint64_t)r % block;
			if (data < pos)
				data = pos;
		}
		if (data > end)
			data = end;
		if (data > pos && rb_extent_list_add(l, data - pos, RB_EXT_HOLE | RB_EXT_ZERO) < 0)
			return 0;       /* full: the reply covers a prefix */
		if (data >= end)
			return 0;
		r = lseek(fd, (off_t)data, SEEK_HOLE);
		if (r < 0)
			return -errno;
		hole = round_up((uint64_t)r, block);
		if (hole > end)
			hole = end;
		if (hole <= data)
			hole = data + block;    /* cannot happen: move on all the same */
		if (rb_extent_list_add(l, hole - data, RB_EXT_DATA) < 0)
			return 0;
		pos = hole;
	}
	return 0;
}
