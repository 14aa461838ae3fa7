/* Public I/O calls: split into max-io pieces, map flags, check durability. */
#include <errno.h>
#include <string.h>

#include "internal.h"

/* rb_client is opaque here too: reach it only through the public API. */

int
rb_io_check_aligned(const struct rb_export_desc *d, const char *what, uint64_t len,
	      uint64_t off)
{
	if (off % d->min_block != 0 || len % d->min_block != 0) {
		rb_log(RB_LOG_ERROR, "%s %llu@%llu: not aligned to the export's "
		       "%u-byte blocks", what, (unsigned long long)len,
		       (unsigned long long)off, d->min_block);
		return -EINVAL;
	}
	return 0;
}

int
rb_io_check_writable(const struct rb_export_desc *d, const char *what)
{
	if (d->flags & RB_EXP_READ_ONLY) {
		rb_log(RB_LOG_ERROR, "%s: export is read-only", what);
		return -EPERM;
	}
	return 0;
}

/* FUA and FLUSH promise stable storage: believe only the target's bit. */
int
rb_io_check_durable(const struct rb_io *io)
{
	if (!(io->rep_flags & RB_REP_DURABLE)) {
		rb_log(RB_LOG_ERROR, "%s %u@%llu: the target did not confirm "
		       "durability", rb_opcode_name(io->opcode), io->length,
		       (unsigned long long)io->offset);
		return -EIO;
	}
	return 0;
}

int
rb_read(struct rb_client *c, void *buf, size_t len, uint64_t off)
{
	const struct rb_export_desc *d = rb_client_export(c);
	uint64_t mb = d->min_block;
	struct rb_io io;
	int r;

	/* Unaligned edges cost nothing extra: we copy out of the pool anyway. */
	while (len > 0) {
		uint64_t start = off - off % mb;
		uint64_t skip = off - start;
		uint64_t want = skip + len > d->max_io ? d->max_io : skip + len;
		uint64_t span = (want + mb - 1) / mb * mb;

		if (span > d->max_io)
			span = d->max_io;
		memset(&io, 0, sizeof(io));
		io.opcode = RB_OP_READ;
		io.offset = start;
		io.length = (uint32_t)span;
		io.rbuf = buf;
		io.copy_off = (uint32_t)skip;
		io.copy_len = (uint32_t)(want - skip);
		r = rb_client_submit(c, &io);
		if (r < 0)
			return r;
		buf = (char *)buf + io.copy_len;
		off += io.copy_len;
		len -= io.copy_len;
	}
	return 0;
}

int
rb_write(struct rb_client *c, const void *buf, size_t len, uint64_t off,
	 unsigned flags)
{
	const struct rb_export_desc *d = rb_client_export(c);
	struct rb_io io;
	int r;

	r = rb_io_check_writable(d, "write");
	if (r < 0)
		return r;
	r = rb_io_check_aligned(d, "write", len, off);
	if (r < 0)
		return r;
	while (len > 0) {
		memset(&io, 0, sizeof(io));
		io.opcode = RB_OP_WRITE;
		io.flags = flags & RB_IO_FUA ? RB_REQ_FUA : 0;
		io.offset = off;
		io.length = (uint32_t)(len > d->max_io ? d->max_io : len);
		io.wbuf = buf;
		r = rb_client_submit(c, &io);
		if (r == 0 && (flags & RB_IO_FUA))
			r = rb_io_check_durable(&io);
		if (r < 0)
			return r;
		buf = (const char *)buf + io.length;
		off += io.length;
		len -= io.length;
	}
	return 0;
}

int
rb_flush(struct rb_client *c)
{
	struct rb_io io;
	int r;

	memset(&io, 0, sizeof(io));
	io.opcode = RB_OP_FLUSH;
	r = rb_client_submit(c, &io);
	if (r == 0)
		r = rb_io_check_durable(&io);
	return r;
}

/* TRIM and WRITE_ZEROES, in max-io pieces. */
static int
no_data_op(struct rb_client *c, uint8_t opcode, uint16_t req_flags, int fua,
	   uint64_t len, uint64_t off)
{
	const struct rb_export_desc *d = rb_client_export(c);
	const char *what = rb_opcode_name(opcode);
	struct rb_io io;
	int r;

	r = rb_io_check_writable(d, what);
	if (r < 0)
		return r;
	r = rb_io_check_aligned(d, what, len, off);
	if (r < 0)
		return r;
	while (len > 0) {
		memset(&io, 0, sizeof(io));
		io.opcode = opcode;
		io.flags = req_flags | (fua ? RB_REQ_FUA : 0);
		io.offset = off;
		io.length = (uint32_t)(len > d->max_io ? d->max_io : len);
		r = rb_client_submit(c, &io);
		if (r == 0 && fua)
			r = rb_io_check_durable(&io);
		if (r < 0)
			return r;
		off += io.length;
		len -= io.length;
	}
	return 0;
}

int
rb_block_status(struct rb_client *c, uint64_t len, uint64_t off,
		struct rb_extent_info *ext, unsigned max, unsigned *n)
{
	const struct rb_export_desc *d = rb_client_export(c);
	uint64_t mb = d->min_block, start, end;
	/* The largest aligned length the request's 32 bits hold. */
	uint64_t most = (UINT32_MAX / mb) * mb;
	struct rb_io io;
	int r;

	*n = 0;
	if (!(d->flags & RB_EXP_EXTENTS)) {
		rb_log(RB_LOG_ERROR, "block status: the target does not answer it "
		       "for this export (no EXTENTS flag)");
		return -ENOTSUP;
	}
	if (len == 0 || max == 0 || off >= d->size || len > d->size - off) {
		rb_log(RB_LOG_ERROR, "block status %llu@%llu: empty, or not within "
		       "the export's %llu bytes", (unsigned long long)len,
		       (unsigned long long)off, (unsigned long long)d->size);
		return -EINVAL;
	}
	start = off - off % mb;
	end = off + len;
	end = end % mb == 0 ? end : end + (mb - end % mb);
	memset(&io, 0, sizeof(io));
	io.opcode = RB_OP_BLOCK_STATUS;
	io.offset = start;
	io.length = (uint32_t)(end - start > most ? most : end - start);
	io.ext = ext;
	io.ext_max = max;
	r = rb_client_submit(c, &io);
	if (r < 0)
		return r;
	*n = io.ext_n;
	return 0;
}

int
rb_trim(struct rb_client *c, uint64_t len, uint64_t off, unsigned flags)
{
	return no_data_op(c, RB_OP_TRIM, 0, (flags & RB_IO_FUA) != 0, len, off);
}

int
rb_zero(struct rb_client *c, uint64_t len, uint64_t off, unsigned flags)
{
	return no_data_op(c, RB_OP_WRITE_ZEROES,
			  flags & RB_IO_NO_HOLE ? RB_REQ_NO_HOLE : 0,
			  (flags & RB_IO_FUA) != 0, len, off);
}
