/* BLOCK_STATUS: which parts of a backing range hold data.  Files answer
 * from SEEK_DATA/SEEK_HOLE, block devices as all data; RBD images answer
 * in the module (rbd.c, rbd_diff_iterate2).  The extents go straight into
 * the reply buffer, in wire form (common/protocol.h). */
#ifndef RDMABLK_TARGET_EXTENTS_H
#define RDMABLK_TARGET_EXTENTS_H

#include <stdint.h>

#include "protocol.h"

/* [off, off + len) of fd: the extents from off on, at most RB_EXTENTS_MAX,
 * with boundaries rounded to `block` (a partly allocated block is data).
 * They cover a prefix of the range.  0, or -errno from lseek. */
int extents_of_fd(int fd, int is_blockdev, uint64_t off, uint32_t len, uint32_t block,
		  struct rb_extent_list *l);

#endif
