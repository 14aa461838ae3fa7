/* rdmablk-hostile: the scenarios about requests: malformed messages,
 * requests the target must refuse with an error code, and bogus keys
 * and addresses (hostile.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"
#include "pattern.h"
#include "util.h"

/* ---- malformed messages ---- */

static int
sc_empty_message(void)
{
	return message_expect_closed("an empty SEND", "", 0, 1);
}

static int
sc_short_header(void)
{
	const char msg[2] = { RB_MSG_REQUEST, 0 };

	return message_expect_closed("a 2-byte message", msg, sizeof(msg), 1);
}

static int
sc_length_mismatch(void)
{
	char msg[sizeof(struct rb_request) + 8];

	memset(msg, 0, sizeof(msg));
	req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0);   /* header says 40 */
	return message_expect_closed("a NOP whose header length disagrees with its size", msg,
				     sizeof(msg), 1);
}

static int
sc_trailing_bytes(void)
{
	char msg[sizeof(struct rb_request) + 8];
	struct rb_request *m = (struct rb_request *)msg;

	memset(msg, 0, sizeof(msg));
	req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0);
	m->hdr.length = htole16(sizeof(msg));
	return message_expect_closed("a NOP with 8 trailing bytes", msg, sizeof(msg), 1);
}

static int
sc_oversized_message(void)
{
	static char msg[H_SEND_SLOT];
	struct hconn h;

	memset(msg, 0, sizeof(msg));
	req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0);
	if (h_session(&h, 4) < 0)
		return 1;
	/* Larger than any receive buffer: the target's receive fails. */
	if (h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the message");
	}
	return expect_closed(&h, "an 8 KiB message (receive buffers are 4160 bytes)");
}

static int
sc_unknown_type(void)
{
	char msg[sizeof(struct rb_request)];
	struct rb_request *m = (struct rb_request *)msg;

	req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0);
	m->hdr.type = 99;
	return message_expect_closed("a message of type 99", msg, sizeof(msg), 1);
}

static int
sc_wrong_type(void)
{
	char msg[sizeof(struct rb_reply)];
	struct rb_rep_info r = { .flags = 0, .error = RB_OK, .tag = 1 };

	return message_expect_closed("a REPLY sent to the target", msg,
				     rb_reply_encode(msg, &r), 1);
}

static int
sc_reserved_header(void)
{
	char msg[sizeof(struct rb_request)];
	struct rb_request *m = (struct rb_request *)msg;

	req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0);
	m->hdr.reserved = 1;
	return message_expect_closed("a NOP with a non-zero header reserved byte", msg,
				     sizeof(msg), 1);
}

static int
sc_truncated_request(void)
{
	char msg[sizeof(struct rb_request)];
	struct rb_request *m = (struct rb_request *)msg;

	req_msg(msg, RB_OP_READ, 0, 1, 0, 4096, 0, 0);
	m->hdr.length = htole16(24);
	return message_expect_closed("a 24-byte REQUEST", msg, 24, 1);
}

static int
sc_inline_mismatch(void)
{
	char msg[sizeof(struct rb_request) + 512];

	memset(msg, 0, sizeof(msg));
	req_msg(msg, RB_OP_WRITE, RB_REQ_INLINE, 1, 0, 1024, 0, 0);
	((struct rb_request *)msg)->hdr.length = htole16(sizeof(msg));
	return message_expect_closed("an inline WRITE of 1024 bytes carrying 512", msg,
				     sizeof(msg), 1);
}

/* ---- requests the target must refuse with an error code ---- */

/* A header-only request the target must answer with EINVAL (tag 7);
 * lenient: closing the connection instead is accepted too. */
#define BAD_REQUEST(fn, did, op, flags, off, len, rkey, addr, lenient)		\
static int									\
fn(void)									\
{										\
	char msg[sizeof(struct rb_request)];					\
										\
	return request_expect_error(did, msg, req_msg(msg, op, flags, 7, off,	\
						      len, rkey, addr),		\
				    7, RB_EINVAL, lenient);			\
}

/* BAD_REQUEST(scenario, what it sends, op, flags, offset, length, rkey, addr, lenient) */
BAD_REQUEST(sc_unknown_opcode, "opcode 42",
	    42, 0, 0, 4096, 0, 0, 1)
BAD_REQUEST(sc_unknown_flag, "a WRITE with flag 0x100",
	    RB_OP_WRITE, 0x100, 0, 4096, 1, 4096, 1)
BAD_REQUEST(sc_inline_not_write, "INLINE on a READ of 0 bytes",
	    RB_OP_READ, RB_REQ_INLINE, 0, 0, 0, 0, 1)
BAD_REQUEST(sc_wrong_flags, "a READ with FUA",
	    RB_OP_READ, RB_REQ_FUA, 0, 4096, 1, 4096, 0)
BAD_REQUEST(sc_write_no_hole, "a WRITE with NO_HOLE",
	    RB_OP_WRITE, RB_REQ_NO_HOLE, 0, 4096, 1, 4096, 0)
BAD_REQUEST(sc_nop_with_offset, "a NOP with an offset",
	    RB_OP_NOP, 0, 4096, 0, 0, 0, 0)
BAD_REQUEST(sc_flush_with_length, "a FLUSH with a length",
	    RB_OP_FLUSH, 0, 0, 4096, 0, 0, 0)
BAD_REQUEST(sc_nop_with_rkey, "a NOP with an rkey",
	    RB_OP_NOP, 0, 0, 0, 0x1234, 0, 0)
BAD_REQUEST(sc_flush_with_addr, "a FLUSH with an addr",
	    RB_OP_FLUSH, 0, 0, 0, 0, 4096, 0)
BAD_REQUEST(sc_trim_no_hole, "a TRIM with NO_HOLE",
	    RB_OP_TRIM, RB_REQ_NO_HOLE, 0, 4096, 0, 0, 0)
BAD_REQUEST(sc_zero_length, "a READ of 0 bytes",
	    RB_OP_READ, 0, 0, 0, 1, 4096, 0)

static int
sc_inline_with_rkey(void)
{
	char msg[sizeof(struct rb_request) + 512];

	memset(msg, 0, sizeof(msg));
	return request_expect_error("an inline WRITE with an rkey and addr", msg,
				    req_msg(msg, RB_OP_WRITE, RB_REQ_INLINE, 7, 0, 512, 0x1234,
					    4096), 7, RB_EINVAL, 0);
}

/* Requests that need the granted limits: built on the session itself. */
static int
session_request_error(const char *did, uint8_t op, uint16_t flags, uint64_t off,
		      uint32_t len, uint16_t err)
{
	char msg[sizeof(struct rb_request)];
	struct hconn h;

	if (h_session(&h, 4) < 0)
		return 1;
	req_msg(msg, op, flags, 7, off, len, h.data_mr->rkey, (uintptr_t)h.data);
	if (h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the request");
	}
	return expect_error(&h, did, 7, err, 0);
}

/* Limits come from a HELLO_REPLY: ask once. */
static struct rb_export_info limits;

static int
get_limits(void)
{
	struct hconn h;
	const char *saved = raw.cur;

	if (limits.size != 0)
		return 0;
	raw.cur = "limits";
	if (h_session(&h, 4) < 0) {
		raw.cur = saved;
		return -1;
	}
	limits = h.exp;
	h_close(&h);
	raw.cur = saved;
	debug("export size %" PRIu64 ", max_io %u, inline_max %u", limits.size, limits.max_io,
	      limits.inline_max);
	return 0;
}

static int
sc_too_long(void)
{
	char did[80];

	if (get_limits() < 0)
		return 1;
	snprintf(did, sizeof(did), "a READ of max_io + 512 (%u bytes)", limits.max_io + 512);
	return session_request_error(did, RB_OP_READ, 0, 0, limits.max_io + 512, RB_EINVAL);
}

static int
sc_misaligned_offset(void)
{
	return session_request_error("a READ at offset 100", RB_OP_READ, 0, 100, 4096, RB_EINVAL);
}

static int
sc_misaligned_length(void)
{
	return session_request_error("a WRITE of 1000 bytes", RB_OP_WRITE, 0, 0, 1000, RB_EINVAL);
}

static int
sc_out_of_range(void)
{
	if (get_limits() < 0)
		return 1;
	return session_request_error("a READ at the export size", RB_OP_READ, 0, limits.size,
				     4096, RB_EOVERFLOW);
}

static int
sc_far_out_of_range(void)
{
	return session_request_error("a READ at offset 2^62", RB_OP_READ, 0, 1ull << 62, 4096,
				     RB_EOVERFLOW);
}

static int
sc_past_end(void)
{
	if (get_limits() < 0)
		return 1;
	return session_request_error("a WRITE of 1 KiB at size - 512", RB_OP_WRITE, 0,
				     limits.size - 512, 1024, RB_EOVERFLOW);
}

static int
sc_offset_overflow(void)
{
	return session_request_error("a READ of 1 KiB at 2^64 - 512", RB_OP_READ, 0,
				     UINT64_MAX - 511, 1024, RB_EOVERFLOW);
}

static int
sc_trim_overflow(void)
{
	return session_request_error("a TRIM of 4 GiB - 512 at 2^64 - 512", RB_OP_TRIM, 0,
				     UINT64_MAX - 511, UINT32_MAX - 511, RB_EOVERFLOW);
}

static int
sc_zeroes_past_end(void)
{
	if (get_limits() < 0)
		return 1;
	return session_request_error("a WRITE_ZEROES of 4 GiB - 512 at size - 512",
				     RB_OP_WRITE_ZEROES, 0, limits.size - 512, UINT32_MAX - 511,
				     RB_EOVERFLOW);
}

/* ---- BLOCK_STATUS ---- */

/* A BLOCK_STATUS (no key, no address) the target must answer with err. */
static int
block_status_error(const char *did, uint16_t flags, uint64_t off, uint32_t len, uint16_t err)
{
	char msg[sizeof(struct rb_request)];

	return request_expect_error(did, msg, req_msg(msg, RB_OP_BLOCK_STATUS, flags, 7, off,
						      len, 0, 0), 7, err, 0);
}

BAD_REQUEST(sc_bs_with_rkey, "a BLOCK_STATUS with an rkey and addr",
	    RB_OP_BLOCK_STATUS, 0, 0, 4096, 0x1234, 4096, 0)

static int
sc_bs_with_fua(void)
{
	return block_status_error("a BLOCK_STATUS with FUA", RB_REQ_FUA, 0, 4096, RB_EINVAL);
}

static int
sc_bs_zero_length(void)
{
	return block_status_error("a BLOCK_STATUS of 0 bytes", 0, 0, 0, RB_EINVAL);
}

static int
sc_bs_misaligned(void)
{
	return block_status_error("a BLOCK_STATUS at offset 100", 0, 100, 4096, RB_EINVAL);
}

static int
sc_bs_huge(void)
{
	return block_status_error("a BLOCK_STATUS of 4 GiB - 512 at 0 (beyond a 64 MiB export)",
				  0, 0, UINT32_MAX - 511, RB_EOVERFLOW);
}

static int
sc_bs_past_end(void)
{
	if (get_limits() < 0)
		return 1;
	return block_status_error("a BLOCK_STATUS of 1 KiB at size - 512", 0, limits.size - 512,
				  1024, RB_EOVERFLOW);
}

static int
sc_bs_overflow(void)
{
	return block_status_error("a BLOCK_STATUS of 4 GiB - 512 at 2^64 - 512", 0,
				  UINT64_MAX - 511, UINT32_MAX - 511, RB_EOVERFLOW);
}

/* The whole export: an OK reply whose extents keep the protocol's rules
 * and cover a prefix of it. */
static int
sc_bs_whole(void)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	int rc;

	if (get_limits() < 0 || h_session(&h, 4) < 0)
		return 1;
	h_roundtrip(&h, msg, req_msg(msg, RB_OP_BLOCK_STATUS, 0, 7, 0, (uint32_t)limits.size, 0,
				     0), &o);
	if (o.kind != OUT_REPLY || o.tag != 7 || o.error != RB_OK)
		rc = verdict(0, "a BLOCK_STATUS of the whole export: expected REPLY OK, got %s",
			     o.what);
	else if (o.ext_bad != NULL || o.ext_bytes > limits.size)
		rc = verdict(0, "a BLOCK_STATUS of the whole export: %u extents of %" PRIu64
			     " bytes: %s", o.nextents, o.ext_bytes,
			     o.ext_bad != NULL ? o.ext_bad : "more than the export");
	else
		rc = verdict(1, "a BLOCK_STATUS of the whole export: %u extents covering %" PRIu64
			     " of its %" PRIu64 " bytes", o.nextents, o.ext_bytes, limits.size);
	h_close(&h);
	return rc;
}

static int
sc_inline_too_long(void)
{
	static char msg[H_SEND_SLOT];
	uint32_t len;
	struct hconn h;

	if (get_limits() < 0)
		return 1;
	len = limits.inline_max + 512;
	memset(msg, 0, sizeof(msg));
	if (sizeof(struct rb_request) + len > RB_MSG_BUF_SIZE) {
		/* Cannot fit a receive buffer: the receive itself fails. */
		req_msg(msg, RB_OP_WRITE, RB_REQ_INLINE, 7, 0, len, 0, 0);
		if (h_session(&h, 4) < 0)
			return 1;
		h_send(&h, msg, sizeof(struct rb_request) + len);
		return expect_closed(&h, "an inline WRITE larger than a receive buffer");
	}
	return request_expect_error("an inline WRITE of inline_max + 512 bytes", msg,
				    req_msg(msg, RB_OP_WRITE, RB_REQ_INLINE, 7, 0, len, 0, 0), 7,
				    RB_EINVAL, 0);
}

/* ---- bogus keys and addresses ---- */

/* A READ whose data the target cannot place.  Its RDMA WRITE must fail
 * (remote access error) and the connection close; never a successful
 * reply. */
static int
read_bad_target(const char *did, int how)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	uint32_t rkey;
	uint64_t addr;
	int rc;

	if (h_session(&h, 4) < 0)
		return 1;
	rkey = h.data_mr->rkey;
	addr = (uintptr_t)h.data;
	switch (how) {
	case 0:      /* a key never registered */
		rkey ^= 0x5a5a5a00u;
		break;
	case 1:      /* a real key, an address past its region */
		addr += 64ull << 20;
		break;
	case 2:      /* a key of memory registered without REMOTE_WRITE */
		h.extra = calloc(1, 65536);
		h.extra_mr = h.extra != NULL ? ibv_reg_mr(h.pd, h.extra, 65536,
							  IBV_ACCESS_REMOTE_READ) : NULL;
		if (h.extra_mr == NULL) {
			h_close(&h);
			return verdict(0, "ibv_reg_mr (REMOTE_READ only): %s", strerror(errno));
		}
		rkey = h.extra_mr->rkey;
		addr = (uintptr_t)h.extra;
		break;
	}
	h_roundtrip(&h, msg, req_msg(msg, RB_OP_READ, 0, 7, 0, 4096, rkey, addr), &o);
	if (o.kind == OUT_CLOSED)
		rc = verdict(1, "%s: %s", did, o.what);
	else if (o.kind == OUT_REPLY && o.error == RB_EIO)
		rc = verdict(1, "%s: %s", did, o.what);
	else
		rc = verdict(0, "%s: expected the connection closed (or EIO), got %s", did, o.what);
	h_close(&h);
	return rc;
}

static int
sc_read_bad_rkey(void)
{
	return read_bad_target("a READ into an rkey never registered", 0);
}

static int
sc_read_bad_addr(void)
{
	return read_bad_target("a READ into an address 64 MiB past the region", 1);
}

static int
sc_read_no_remote_write(void)
{
	return read_bad_target("a READ into memory registered without REMOTE_WRITE", 2);
}

/* A WRITE whose data the target cannot fetch.  Its RDMA READ must fail:
 * an EIO reply or a close, and the export's data must be unchanged. */
static int
write_bad_source(const char *did, int how)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	const uint64_t off = 8u << 20;
	const uint32_t len = 16384;
	uint32_t rkey;
	uint64_t addr;
	int ok;

	/* Known content first. */
	if (h_session(&h, 4) < 0)
		return 1;
	pattern_fill(h.data, off, len, opt.seed + 1000);
	h_roundtrip(&h, msg, data_req(&h, msg, RB_OP_WRITE, 1, off, len, 0), &o);
	if (o.kind != OUT_REPLY || o.error != RB_OK) {
		h_close(&h);
		return verdict(0, "the preparing WRITE got %s", o.what);
	}
	/* Something else in our buffer: if the target wrote whatever it got,
	 * the check below would see it. */
	pattern_fill(h.data, off, len, opt.seed + 2000);
	rkey = h.data_mr->rkey;
	addr = (uintptr_t)h.data;
	switch (how) {
	case 0:
		rkey ^= 0x00a5a500u;
		break;
	case 1:
		addr = (uintptr_t)h.data + H_DATA_SIZE - 4096;   /* runs off the end */
		break;
	case 2:      /* registered without REMOTE_READ */
		h.extra = calloc(1, 65536);
		h.extra_mr = h.extra != NULL ? ibv_reg_mr(h.pd, h.extra, 65536,
							  IBV_ACCESS_LOCAL_WRITE |
							  IBV_ACCESS_REMOTE_WRITE) : NULL;
		if (h.extra_mr == NULL) {
			h_close(&h);
			return verdict(0, "ibv_reg_mr (REMOTE_WRITE only): %s", strerror(errno));
		}
		rkey = h.extra_mr->rkey;
		addr = (uintptr_t)h.extra;
		break;
	}
	h_roundtrip(&h, msg, req_msg(msg, RB_OP_WRITE, 0, 7, off, len, rkey, addr), &o);
	ok = o.kind == OUT_CLOSED || (o.kind == OUT_REPLY && o.error == RB_EIO);
	h_close(&h);
	if (!ok)
		return verdict(0, "%s: expected EIO or a close, got %s", did, o.what);

	/* The export still holds the known content. */
	char what[256];

	snprintf(what, sizeof(what), "%s", o.what);
	if (h_session(&h, 4) < 0)
		return 1;
	memset(h.data, 0, len);
	h_roundtrip(&h, msg, data_req(&h, msg, RB_OP_READ, 2, off, len, 0), &o);
	if (o.kind != OUT_REPLY || o.error != RB_OK) {
		h_close(&h);
		return verdict(0, "%s: %s, but reading back got %s", did, what, o.what);
	}
	long long bad = pattern_check(h.data, off, len, opt.seed + 1000);

	h_close(&h);
	if (bad >= 0)
		return verdict(0, "%s: %s, but the export changed at offset %" PRIu64, did, what,
			       off + (uint64_t)bad);
	return verdict(1, "%s: %s; the export's data is unchanged", did, what);
}

static int
sc_write_bad_rkey(void)
{
	return write_bad_source("a WRITE from an rkey never registered", 0);
}

static int
sc_write_bad_addr(void)
{
	return write_bad_source("a WRITE from a range running past the region", 1);
}

static int
sc_write_no_remote_read(void)
{
	return write_bad_source("a WRITE from memory registered without REMOTE_READ", 2);
}


const struct scenario request_scenarios[] = {
	{ "empty-message", sc_empty_message },
	{ "short-header", sc_short_header },
	{ "length-mismatch", sc_length_mismatch },
	{ "trailing-bytes", sc_trailing_bytes },
	{ "oversized-message", sc_oversized_message },
	{ "unknown-type", sc_unknown_type },
	{ "wrong-type", sc_wrong_type },
	{ "reserved-header", sc_reserved_header },
	{ "truncated-request", sc_truncated_request },
	{ "inline-mismatch", sc_inline_mismatch },
	/* invalid requests: error replies */
	{ "unknown-opcode", sc_unknown_opcode },
	{ "unknown-flag", sc_unknown_flag },
	{ "inline-not-write", sc_inline_not_write },
	{ "wrong-flags", sc_wrong_flags },
	{ "write-no-hole", sc_write_no_hole },
	{ "nop-with-offset", sc_nop_with_offset },
	{ "flush-with-length", sc_flush_with_length },
	{ "zero-length", sc_zero_length },
	{ "nop-with-rkey", sc_nop_with_rkey },
	{ "flush-with-addr", sc_flush_with_addr },
	{ "inline-with-rkey", sc_inline_with_rkey },
	{ "trim-no-hole", sc_trim_no_hole },
	{ "too-long", sc_too_long },
	{ "misaligned-offset", sc_misaligned_offset },
	{ "misaligned-length", sc_misaligned_length },
	{ "inline-too-long", sc_inline_too_long },
	{ "out-of-range", sc_out_of_range },
	{ "far-out-of-range", sc_far_out_of_range },
	{ "past-end", sc_past_end },
	{ "offset-overflow", sc_offset_overflow },
	{ "trim-overflow", sc_trim_overflow },
	{ "zeroes-past-end", sc_zeroes_past_end },
	/* BLOCK_STATUS: bad ranges, a huge one, one past the end, and a good one */
	{ "bs-with-rkey", sc_bs_with_rkey },
	{ "bs-with-fua", sc_bs_with_fua },
	{ "bs-zero-length", sc_bs_zero_length },
	{ "bs-misaligned", sc_bs_misaligned },
	{ "bs-huge", sc_bs_huge },
	{ "bs-past-end", sc_bs_past_end },
	{ "bs-overflow", sc_bs_overflow },
	{ "bs-whole", sc_bs_whole },
	/* bogus keys and addresses */
	{ "read-bad-rkey", sc_read_bad_rkey },
	{ "read-bad-addr", sc_read_bad_addr },
	{ "read-no-remote-write", sc_read_no_remote_write },
	{ "write-bad-rkey", sc_write_bad_rkey },
	{ "write-bad-addr", sc_write_bad_addr },
	{ "write-no-remote-read", sc_write_no_remote_read },
};
const size_t n_request_scenarios = sizeof(request_scenarios) / sizeof(request_scenarios[0]);
