/* What a test tool writes: a seed's pattern (pattern.h), or "@FILE", the
 * bytes of FILE (rdmablk-history makes such files: blocks in its register
 * format, for tests/test-rbd-stale-write.sh). */
#ifndef RDMABLK_PAYLOAD_H
#define RDMABLK_PAYLOAD_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "pattern.h"

/* Fill buf with len bytes: the pattern of seed at absolute offset off, or,
 * when file is not NULL, the file's bytes at pos.  0, or -1 (errno; a file
 * too short is EIO). */
static inline int
payload_fill(void *buf, uint64_t off, uint64_t pos, size_t len, uint64_t seed,
	     const char *file)
{
	ssize_t n;
	int fd;

	if (file == NULL) {
		pattern_fill(buf, off, len, seed);
		return 0;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = pread(fd, buf, len, (off_t)pos);
	close(fd);
	if (n != (ssize_t)len) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

#endif
