/* Unit tests for the wire codec: every message round-trips, and truncated,
 * oversized and hostile messages are refused with a reason. */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

#include "check.h"

static unsigned char buf[RB_MSG_BUF_SIZE + 64];

/* Rewrite the header's length field, as a hostile peer could. */
static void
set_len(size_t len)
{
	((struct rb_msg_hdr *)buf)->length = htole16((uint16_t)len);
}

static void
test_conn_priv(void)
{
	uint16_t st, qd;
	const char *why = NULL;

	rb_conn_priv_encode(buf, RB_EACCES, 77);
	CHECK(rb_conn_priv_decode(buf, sizeof(struct rb_conn_priv), &st, &qd, &why) == 0);
	CHECK(st == RB_EACCES && qd == 77);
	/* RDMA CM pads private data to 56 bytes: longer is accepted. */
	CHECK(rb_conn_priv_decode(buf, 56, &st, &qd, &why) == 0);
	CHECK(rb_conn_priv_decode(buf, sizeof(struct rb_conn_priv) - 1, &st, &qd, &why) == -EBADMSG);
	CHECK(rb_conn_priv_decode(NULL, 0, &st, &qd, &why) == -EBADMSG);
	buf[0] ^= 1;
	why = NULL;
	CHECK(rb_conn_priv_decode(buf, 16, &st, &qd, &why) == -EPROTO && why != NULL);
	rb_conn_priv_encode(buf, RB_OK, 1);
	((struct rb_conn_priv *)buf)->version = htole16(2);
	CHECK(rb_conn_priv_decode(buf, 16, &st, &qd, &why) == -EPROTO);
	/* reserved fields are refused when not zero */
	rb_conn_priv_encode(buf, RB_OK, 1);
	((struct rb_conn_priv *)buf)->reserved0 = htole16(1);
	CHECK(rb_conn_priv_decode(buf, 16, &st, &qd, &why) == -EPROTO);
	rb_conn_priv_encode(buf, RB_OK, 1);
	((struct rb_conn_priv *)buf)->reserved1 = htole32(0x100);
	CHECK(rb_conn_priv_decode(buf, 16, &st, &qd, &why) == -EPROTO);
}

static void
test_hello(void)
{
	struct rb_hello_info in, out;
	const char *why;
	size_t len;

	memset(&in, 0, sizeof(in));
	in.flags = RB_HELLO_SEND_INV;
	in.queue_depth = 32;
	in.max_io = 1 << 20;
	memset(in.nonce, 0xab, sizeof(in.nonce));
	strcpy(in.export_name, "disk0");
	len = rb_hello_encode(buf, &in);
	CHECK(len == sizeof(struct rb_hello));
	CHECK(rb_hello_decode(buf, len, &out, &why) == 0);
	CHECK(out.flags == in.flags && out.queue_depth == 32 && out.max_io == 1u << 20);
	CHECK(memcmp(out.nonce, in.nonce, RB_NONCE_LEN) == 0);
	CHECK(strcmp(out.export_name, "disk0") == 0);

	/* truncated: header says len-1 and so does the receive */
	set_len(len - 1);
	CHECK(rb_hello_decode(buf, len - 1, &out, &why) == -EBADMSG);
	/* header disagrees with the received count */
	set_len(len);
	CHECK(rb_hello_decode(buf, len - 1, &out, &why) == -EBADMSG);
	/* oversized */
	set_len(len + 1);
	CHECK(rb_hello_decode(buf, len + 1, &out, &why) == -EBADMSG);
	set_len(len);
	/* an unterminated export name */
	memset(((struct rb_hello *)buf)->export_name, 'x', RB_EXPORT_NAME_MAX + 1);
	CHECK(rb_hello_decode(buf, len, &out, &why) == -EINVAL);
	rb_hello_encode(buf, &in);
	((struct rb_hello *)buf)->flags = htole16(0x8000);
	CHECK(rb_hello_decode(buf, len, &out, &why) == -EINVAL);
	rb_hello_encode(buf, &in);
	((struct rb_hello *)buf)->queue_depth = 0;
	CHECK(rb_hello_decode(buf, len, &out, &why) == -EINVAL);
	rb_hello_encode(buf, &in);
	((struct rb_hello *)buf)->reserved1 = 1;
	CHECK(rb_hello_decode(buf, len, &out, &why) == -EPROTO);
	rb_hello_encode(buf, &in);
	((struct rb_hello *)buf)->hdr.type = RB_MSG_REQUEST;
	CHECK(rb_hello_decode(buf, len, &out, &why) == -EPROTO);
	rb_hello_encode(buf, &in);
	((struct rb_hello *)buf)->version = htole16(9);
	CHECK(rb_hello_decode(buf, len, &out, &why) == -EPROTO);
	/* the header alone */
	CHECK(rb_hello_decode(buf, 3, &out, &why) == -EBADMSG);
	/* export names are checked like the config's: no control characters
	 * reach the target's log */
	strcpy(in.export_name, "disk\x1b[2Jx");
	rb_hello_encode(buf, &in);
	why = NULL;
	CHECK(rb_hello_decode(buf, len, &out, &why) == -EINVAL && why != NULL);
	strcpy(in.export_name, "-opt");
	rb_hello_encode(buf, &in);
	CHECK(rb_hello_decode(buf, len, &out, &why) == -EINVAL);
	in.export_name[0] = '\0';
	rb_hello_encode(buf, &in);
	CHECK(rb_hello_decode(buf, len, &out, &why) == -EINVAL);
}

static void
test_auth(void)
{
	struct rb_auth_info in, out;
	const char *why;
	size_t len;

	memset(&in, 0x5a, sizeof(in));
	len = rb_challenge_encode(buf, &in);
	CHECK(len == sizeof(struct rb_challenge));
	CHECK(rb_challenge_decode(buf, len, &out, &why) == 0);
	CHECK(memcmp(&in, &out, sizeof(in)) == 0);
	set_len(len - 1);
	CHECK(rb_challenge_decode(buf, len - 1, &out, &why) == -EBADMSG);

	len = rb_auth_encode(buf, &in);
	CHECK(len == sizeof(struct rb_auth));
	CHECK(rb_auth_decode(buf, len, &out, &why) == 0);
	CHECK(memcmp(in.mac, out.mac, RB_MAC_LEN) == 0);
	((struct rb_auth *)buf)->reserved = 1;
	CHECK(rb_auth_decode(buf, len, &out, &why) == -EPROTO);
	rb_auth_encode(buf, &in);
	CHECK(rb_challenge_decode(buf, len, &out, &why) == -EPROTO);
}

static struct rb_export_info
good_export(void)
{
	struct rb_export_info e;

	memset(&e, 0, sizeof(e));
	e.status = RB_OK;
	e.queue_depth = 64;
	e.flags = RB_EXP_FLUSH | RB_EXP_FUA | RB_EXP_MULTI_CONN;
	e.size = 64ull << 20;
	e.min_block = 512;
	e.pref_block = 4096;
	e.max_io = 1 << 20;
	e.inline_max = 4096;
	strcpy(e.description, "test disk");
	return e;
}

static void
test_hello_reply(void)
{
	struct rb_export_info in = good_export(), out;
	const char *why;
	size_t len;

	len = rb_hello_reply_encode(buf, &in);
	CHECK(len == sizeof(struct rb_hello_reply));
	CHECK(rb_hello_reply_decode(buf, len, &out, &why) == 0);
	CHECK(memcmp(&in, &out, sizeof(in)) == 0);

	/* an error reply carries nothing else */
	in.status = RB_ENOENT;
	len = rb_hello_reply_encode(buf, &in);
	CHECK(rb_hello_reply_decode(buf, len, &out, &why) == 0 && out.status == RB_ENOENT);
	CHECK(out.size == 0);

	/* hostile values */
	in = good_export();
	in.queue_depth = 0;
	rb_hello_reply_encode(buf, &in);
	CHECK(rb_hello_reply_decode(buf, len, &out, &why) == -EINVAL);
	in = good_export();
	in.min_block = 513;
	rb_hello_reply_encode(buf, &in);
	CHECK(rb_hello_reply_decode(buf, len, &out, &why) == -EINVAL);
	in = good_export();
	in.pref_block = 2 << 20;
	rb_hello_reply_encode(buf, &in);
	CHECK(rb_hello_reply_decode(buf, len, &out, &why) == -EINVAL);
	in = good_export();
	in.size = (64ull << 20) + 1;
	rb_hello_reply_encode(buf, &in);
	CHECK(rb_hello_reply_decode(buf, len, &out, &why) == -EINVAL);
	in = good_export();
	in.inline_max = RB_INLINE_MAX + 1;
	rb_hello_reply_encode(buf, &in);
	CHECK(rb_hello_reply_decode(buf, len, &out, &why) == -EINVAL);
	in = good_export();
	in.flags = 0x10000;
	rb_hello_reply_encode(buf, &in);
	CHECK(rb_hello_reply_decode(buf, len, &out, &why) == -EINVAL);
	in = good_export();
	rb_hello_reply_encode(buf, &in);
	memset(((struct rb_hello_reply *)buf)->description, 'd', RB_DESCRIPTION_MAX + 1);
	CHECK(rb_hello_reply_decode(buf, len, &out, &why) == -EINVAL);
	rb_hello_reply_encode(buf, &in);
	set_len(len - 10);
	CHECK(rb_hello_reply_decode(buf, len - 10, &out, &why) == -EBADMSG);
}

static struct rb_req_limits
limits(void)
{
	struct rb_req_limits l = {
		.export_size = 1ull << 30, .max_io = 1 << 20, .min_block = 512,
		.inline_max = 4096, .read_only = 0,
	};
	return l;
}

static struct rb_req_info
req(uint8_t op, uint64_t off, uint32_t len)
{
	struct rb_req_info r;

	memset(&r, 0, sizeof(r));
	r.opcode = op;
	r.tag = 0x1122334455667788ull;
	r.offset = off;
	r.length = len;
	/* Only READ and WRITE name a buffer (NOP and FLUSH must not). */
	if (op == RB_OP_READ || op == RB_OP_WRITE) {
		r.rkey = 0xdeadbeef;
		r.addr = 0x7f0000001000ull;
	}
	return r;
}

static void
test_request(void)
{
	struct rb_req_info in = req(RB_OP_WRITE, 4096, 8192), out;
	struct rb_req_limits lim = limits();
	const char *why;
	size_t len;

	len = rb_request_encode(buf, &in);
	CHECK(len == sizeof(struct rb_request));
	CHECK(rb_request_decode(buf, len, &out, &why) == 0);
	CHECK(out.opcode == RB_OP_WRITE && out.tag == in.tag && out.offset == 4096 &&
	      out.length == 8192 && out.rkey == in.rkey && out.addr == in.addr &&
	      out.inline_data == NULL);
	CHECK(rb_request_validate(&out, &lim, &why) == RB_OK);

	/* inline write */
	in = req(RB_OP_WRITE, 0, 512);
	in.flags = RB_REQ_INLINE | RB_REQ_FUA;
	in.rkey = 0;
	in.addr = 0;
	len = rb_request_encode(buf, &in);
	CHECK(len == sizeof(struct rb_request) + 512);
	memset(buf + sizeof(struct rb_request), 0xee, 512);
	CHECK(rb_request_decode(buf, len, &out, &why) == 0);
	CHECK(out.inline_data == buf + sizeof(struct rb_request));
	CHECK(rb_request_validate(&out, &lim, &why) == RB_OK);
	/* inline data shorter than the length claims */
	set_len(len - 1);
	CHECK(rb_request_decode(buf, len - 1, &out, &why) == -EBADMSG);
	/* inline larger than the grant */
	lim.inline_max = 256;
	set_len(len);
	CHECK(rb_request_decode(buf, len, &out, &why) == 0);
	CHECK(rb_request_validate(&out, &lim, &why) == RB_EINVAL);
	lim = limits();
	/* inline on a TRIM: no data goes either way */
	in = req(RB_OP_TRIM, 0, 512);
	in.flags = RB_REQ_INLINE;
	len = rb_request_encode(buf, &in);
	CHECK(rb_request_decode(buf, len, &out, &why) == -EINVAL);

	/* trailing garbage without INLINE */
	in = req(RB_OP_READ, 0, 512);
	len = rb_request_encode(buf, &in);
	set_len(len + 8);
	CHECK(rb_request_decode(buf, len + 8, &out, &why) == -EBADMSG);
	/* truncated */
	set_len(len - 1);
	CHECK(rb_request_decode(buf, len - 1, &out, &why) == -EBADMSG);
	/* larger than any receive buffer */
	set_len(RB_MSG_BUF_SIZE + 1);
	CHECK(rb_request_decode(buf, RB_MSG_BUF_SIZE + 1, &out, &why) == -EBADMSG);
	/* unknown opcode and flags */
	in = req(RB_OP__COUNT, 0, 512);
	len = rb_request_encode(buf, &in);
	CHECK(rb_request_decode(buf, len, &out, &why) == -EINVAL);
	in = req(0xff, 0, 512);
	rb_request_encode(buf, &in);
	CHECK(rb_request_decode(buf, len, &out, &why) == -EINVAL);
	in = req(RB_OP_READ, 0, 512);
	in.flags = 0x100;
	rb_request_encode(buf, &in);
	CHECK(rb_request_decode(buf, len, &out, &why) == -EINVAL);
	in = req(RB_OP_READ, 0, 512);
	rb_request_encode(buf, &in);
	/* the ttl byte travels as it is */
	((struct rb_request *)buf)->ttl = 7;
	CHECK(rb_request_decode(buf, len, &out, &why) == 0 && out.ttl == 7);
	/* a reply where a request belongs */
	((struct rb_request *)buf)->hdr.type = RB_MSG_REPLY;
	CHECK(rb_request_decode(buf, len, &out, &why) == -EPROTO);
}

static void
test_validate(void)
{
	struct rb_req_limits lim = limits();
	struct rb_req_info r;
	const char *why;

	r = req(RB_OP_READ, (1ull << 30) - 512, 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_OK);
	r = req(RB_OP_READ, (1ull << 30) - 512, 1024);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EOVERFLOW);
	r = req(RB_OP_READ, 1ull << 30, 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EOVERFLOW);
	/* offset + length wraps around 2^64 */
	r = req(RB_OP_WRITE, UINT64_MAX - 511, 1024);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL ||
	      rb_request_validate(&r, &lim, &why) == RB_EOVERFLOW);
	r = req(RB_OP_WRITE, 0xfffffffffffffe00ull, 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EOVERFLOW);
	r = req(RB_OP_READ, 0, (1 << 20) + 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	/* TRIM is not bound by max-io */
	r = req(RB_OP_TRIM, 0, 64 << 20);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_OK);
	r = req(RB_OP_READ, 100, 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r = req(RB_OP_READ, 0, 100);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r = req(RB_OP_READ, 0, 0);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r = req(RB_OP_READ, 0, 512);
	r.flags = RB_REQ_FUA;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r = req(RB_OP_WRITE, 0, 512);
	r.flags = RB_REQ_NO_HOLE;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r = req(RB_OP_FLUSH, 0, 0);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_OK);
	r = req(RB_OP_FLUSH, 0, 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r = req(RB_OP_NOP, 0, 0);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_OK);
	r = req(RB_OP_NOP, 512, 0);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	/* rkey/addr are zero where the spec says so: NOP, FLUSH, inline WRITE,
	 * TRIM and WRITE_ZEROES */
	r = req(RB_OP_NOP, 0, 0);
	r.rkey = 1;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r = req(RB_OP_FLUSH, 0, 0);
	r.addr = 4096;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r = req(RB_OP_WRITE, 0, 512);
	r.flags = RB_REQ_INLINE;
	r.rkey = 0;
	r.addr = 0;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_OK);
	r.rkey = 7;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r.rkey = 0;
	r.addr = 4096;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	/* NO_HOLE belongs to WRITE_ZEROES only */
	r = req(RB_OP_TRIM, 0, 512);
	r.flags = RB_REQ_NO_HOLE;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r = req(RB_OP_WRITE_ZEROES, 0, 512);
	r.flags = RB_REQ_NO_HOLE | RB_REQ_FUA;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_OK);

	lim.read_only = 1;
	r = req(RB_OP_READ, 0, 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_OK);
	r = req(RB_OP_WRITE, 0, 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EPERM);
	r = req(RB_OP_TRIM, 0, 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EPERM);
	r = req(RB_OP_WRITE_ZEROES, 0, 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EPERM);
	r = req(RB_OP_FLUSH, 0, 0);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EPERM);
	/* a bad range on a read-only export is still a range error */
	r = req(RB_OP_WRITE, 1ull << 40, 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EOVERFLOW);
}

/* An inline READ: asked without a buffer, granted per connection, and
 * its reply carrying exactly the data. */
static void
test_read_inline(void)
{
	struct rb_req_info in = req(RB_OP_READ, 4096, 4096), out;
	struct rb_req_limits lim = limits();
	struct rb_rep_info rin = { .error = RB_OK, .tag = 7 }, rout;
	const char *why;
	size_t len;

	in.flags = RB_REQ_INLINE;
	in.rkey = 0;
	in.addr = 0;
	len = rb_request_encode(buf, &in);
	CHECK(len == sizeof(struct rb_request));
	CHECK(rb_request_decode(buf, len, &out, &why) == 0 && out.inline_data == NULL);
	/* not granted on this connection */
	lim.read_inline = 0;
	CHECK(rb_request_validate(&out, &lim, &why) == RB_EINVAL);
	lim.read_inline = 1;
	CHECK(rb_request_validate(&out, &lim, &why) == RB_OK);
	/* larger than the protocol's bound, or with a buffer as well */
	out.length = RB_READ_INLINE_MAX + 512;
	CHECK(rb_request_validate(&out, &lim, &why) == RB_EINVAL);
	out.length = 4096;
	out.rkey = 5;
	CHECK(rb_request_validate(&out, &lim, &why) == RB_EINVAL);
	/* bytes after it: the data comes the other way */
	set_len(len + 512);
	CHECK(rb_request_decode(buf, len + 512, &out, &why) == -EBADMSG);
	/* FUA is a write's flag */
	in.flags = RB_REQ_INLINE | RB_REQ_FUA;
	len = rb_request_encode(buf, &in);
	CHECK(rb_request_decode(buf, len, &out, &why) == 0);
	CHECK(rb_request_validate(&out, &lim, &why) == RB_EINVAL);

	/* the reply: header, then the data */
	memset(buf + sizeof(struct rb_reply), 0xab, 4096);
	len = rb_reply_data_encode(buf, &rin, 4096);
	CHECK(len == sizeof(struct rb_reply) + 4096);
	CHECK(rb_reply_decode(buf, len, &rout, &why) == 0);
	CHECK(rout.tag == 7 && (rout.flags & RB_REP_DATA) && rout.nextents == 0 &&
	      rout.data_len == 4096 && rout.data == buf + sizeof(struct rb_reply));
	/* without data, or more than a READ may inline */
	len = rb_reply_data_encode(buf, &rin, 0);
	CHECK(rb_reply_decode(buf, len, &rout, &why) == -EBADMSG);
	len = rb_reply_data_encode(buf, &rin, RB_READ_INLINE_MAX + 8);
	CHECK(rb_reply_decode(buf, len, &rout, &why) == -EBADMSG);
	/* a failure or a durable claim carries no data */
	rin.error = RB_EIO;
	len = rb_reply_data_encode(buf, &rin, 512);
	CHECK(rb_reply_decode(buf, len, &rout, &why) == -EINVAL);
	rin.error = RB_OK;
	rin.flags = RB_REP_DURABLE;
	len = rb_reply_data_encode(buf, &rin, 512);
	CHECK(rb_reply_decode(buf, len, &rout, &why) == -EINVAL);
	/* a reply without the flag is held to whole extents */
	rin.flags = 0;
	len = rb_reply_encode(buf, &rin);
	CHECK(rb_reply_decode(buf, len, &rout, &why) == 0 && rout.data == NULL &&
	      rout.data_len == 0);
}

/* READ_IMM: the data alone, the tag's low 32 bits in the immediate. */
static void
test_read_imm(void)
{
	struct rb_hello_info h, hout;
	struct rb_export_info e = good_export(), eout;
	struct rb_rep_info rout;
	const char *why = NULL;
	uint32_t imm = rb_reply_imm(UINT64_C(0x123456789abcdef0));
	size_t len;

	/* big-endian on the wire, as every immediate */
	CHECK(memcmp(&imm, "\x9a\xbc\xde\xf0", 4) == 0);
	memset(buf, 0xcd, 4096);
	CHECK(rb_reply_imm_decode(imm, buf, 4096, &rout, &why) == 0);
	CHECK(rout.tag == 0x9abcdef0u && rout.error == RB_OK && rout.flags == RB_REP_DATA &&
	      rout.nextents == 0 && rout.extents == NULL && rout.data_len == 4096 &&
	      rout.data == buf);
	CHECK(rb_reply_imm_decode(imm, buf, 1, &rout, &why) == 0 && rout.data_len == 1);
	/* no data, or more than a READ may inline */
	why = NULL;
	CHECK(rb_reply_imm_decode(imm, buf, 0, &rout, &why) == -EBADMSG && why != NULL);
	CHECK(rb_reply_imm_decode(imm, buf, RB_READ_INLINE_MAX + 1, &rout, &why) == -EBADMSG);
	/* the flags are known on both sides */
	memset(&h, 0, sizeof(h));
	h.flags = RB_HELLO_READ_INLINE | RB_HELLO_READ_IMM | RB_HELLO_AUTH_BIND;
	h.queue_depth = 1;
	h.max_io = 4096;
	strcpy(h.export_name, "disk0");
	len = rb_hello_encode(buf, &h);
	CHECK(rb_hello_decode(buf, len, &hout, &why) == 0 && hout.flags == h.flags);
	e.flags |= RB_EXP_READ_INLINE | RB_EXP_READ_IMM;
	len = rb_hello_reply_encode(buf, &e);
	CHECK(rb_hello_reply_decode(buf, len, &eout, &why) == 0 && eout.flags == e.flags);
}

static void
test_reply(void)
{
	struct rb_rep_info in = { .flags = RB_REP_DURABLE, .error = RB_OK, .tag = 42 }, out;
	const char *why;
	size_t len;

	len = rb_reply_encode(buf, &in);
	CHECK(len == sizeof(struct rb_reply));
	CHECK(rb_reply_decode(buf, len, &out, &why) == 0);
	CHECK(out.flags == RB_REP_DURABLE && out.error == RB_OK && out.tag == 42);
	/* a failure cannot claim durability */
	in.error = RB_EIO;
	rb_reply_encode(buf, &in);
	CHECK(rb_reply_decode(buf, len, &out, &why) == -EINVAL);
	in.flags = 0x80;
	in.error = RB_OK;
	rb_reply_encode(buf, &in);
	CHECK(rb_reply_decode(buf, len, &out, &why) == -EINVAL);
	in.flags = 0;
	rb_reply_encode(buf, &in);
	set_len(len + 4);
	CHECK(rb_reply_decode(buf, len + 4, &out, &why) == -EBADMSG);
	set_len(len - 4);
	CHECK(rb_reply_decode(buf, len - 4, &out, &why) == -EBADMSG);
	((struct rb_msg_hdr *)buf)->reserved = 1;
	set_len(len);
	CHECK(rb_reply_decode(buf, len, &out, &why) == -EPROTO);
}

/* BLOCK_STATUS: validation, the extent list, the reply with extents and
 * what the initiator checks of them. */
static void
test_block_status(void)
{
	struct rb_req_limits lim = limits();
	struct rb_rep_info in = { .error = RB_OK, .tag = 9 }, out;
	struct rb_extent_list l;
	struct rb_extent_info e;
	struct rb_req_info r;
	const char *why;
	size_t len;
	unsigned i;

	r = req(RB_OP_BLOCK_STATUS, 0, 1u << 30);       /* past max-io: allowed */
	CHECK(rb_request_validate(&r, &lim, &why) == RB_OK);
	lim.read_only = 1;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_OK);
	lim.read_only = 0;
	r = req(RB_OP_BLOCK_STATUS, 512, 1u << 30);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EOVERFLOW);
	r = req(RB_OP_BLOCK_STATUS, 0, 0);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r = req(RB_OP_BLOCK_STATUS, 100, 512);
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r = req(RB_OP_BLOCK_STATUS, 0, 512);
	r.flags = RB_REQ_FUA;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	r.flags = 0;
	r.rkey = 5;
	CHECK(rb_request_validate(&r, &lim, &why) == RB_EINVAL);
	CHECK(strcmp(rb_opcode_name(RB_OP_BLOCK_STATUS), "BLOCK_STATUS") == 0);

	/* neighbours with one kind merge; the list stops at RB_EXTENTS_MAX */
	rb_extent_list_init(&l, buf + sizeof(struct rb_reply));
	CHECK(rb_extent_list_add(&l, 4096, RB_EXT_DATA) == 0);
	CHECK(rb_extent_list_add(&l, 4096, RB_EXT_DATA) == 0);
	CHECK(rb_extent_list_add(&l, 1 << 20, RB_EXT_HOLE | RB_EXT_ZERO) == 0);
	CHECK(l.n == 2 && l.covered == 8192 + (1 << 20));
	len = rb_reply_extents_encode(buf, &in, l.n);
	CHECK(len == sizeof(struct rb_reply) + 2 * sizeof(struct rb_extent));
	CHECK(rb_reply_decode(buf, len, &out, &why) == 0 && out.nextents == 2);
	rb_extent_get(&out, 0, &e);
	CHECK(e.length == 8192 && e.flags == RB_EXT_DATA);
	rb_extent_get(&out, 1, &e);
	CHECK(e.length == 1 << 20 && e.flags == (RB_EXT_HOLE | RB_EXT_ZERO));
	CHECK(rb_extents_check(&out, 8192 + (1 << 20), 512, &why) == RB_OK);
	/* more than the range asked */
	CHECK(rb_extents_check(&out, 8192, 512, &why) == RB_EPROTO);
	/* a plain reply has none; a BLOCK_STATUS reply must have one */
	len = rb_reply_encode(buf, &in);
	CHECK(rb_reply_decode(buf, len, &out, &why) == 0 && out.nextents == 0);
	CHECK(rb_extents_check(&out, 512, 512, &why) == RB_EPROTO);
	/* not a whole number of extents, too many, or on a failed reply */
	rb_extent_list_init(&l, buf + sizeof(struct rb_reply));
	for (i = 0; i < RB_EXTENTS_MAX; i++)
		CHECK(rb_extent_list_add(&l, 512, i % 2 ? RB_EXT_DATA : RB_EXT_HOLE) == 0);
	CHECK(rb_extent_list_add(&l, 512, RB_EXT_HOLE) == -1 && l.n == RB_EXTENTS_MAX);
	len = rb_reply_extents_encode(buf, &in, l.n);
	CHECK(rb_reply_decode(buf, len, &out, &why) == 0 && out.nextents == RB_EXTENTS_MAX);
	set_len(len + sizeof(struct rb_extent));
	CHECK(rb_reply_decode(buf, len + sizeof(struct rb_extent), &out, &why) == -EBADMSG);
	set_len(len - 4);
	CHECK(rb_reply_decode(buf, len - 4, &out, &why) == -EBADMSG);
	in.error = RB_EIO;
	len = rb_reply_extents_encode(buf, &in, 1);
	CHECK(rb_reply_decode(buf, len, &out, &why) == -EINVAL);
	/* bad extents: empty, misaligned, both or neither of DATA and HOLE */
	in.error = RB_OK;
	rb_extent_list_init(&l, buf + sizeof(struct rb_reply));
	rb_extent_list_add(&l, 0, RB_EXT_DATA);
	len = rb_reply_extents_encode(buf, &in, l.n);
	CHECK(rb_reply_decode(buf, len, &out, &why) == 0);
	CHECK(rb_extents_check(&out, 4096, 512, &why) == RB_EPROTO);
	rb_extent_list_init(&l, buf + sizeof(struct rb_reply));
	rb_extent_list_add(&l, 100, RB_EXT_DATA);
	rb_reply_extents_encode(buf, &in, l.n);
	CHECK(rb_reply_decode(buf, len, &out, &why) == 0);
	CHECK(rb_extents_check(&out, 4096, 512, &why) == RB_EPROTO);
	rb_extent_list_init(&l, buf + sizeof(struct rb_reply));
	rb_extent_list_add(&l, 512, RB_EXT_DATA | RB_EXT_HOLE);
	rb_reply_extents_encode(buf, &in, l.n);
	CHECK(rb_reply_decode(buf, len, &out, &why) == 0);
	CHECK(rb_extents_check(&out, 4096, 512, &why) == RB_EPROTO);
	rb_extent_list_init(&l, buf + sizeof(struct rb_reply));
	rb_extent_list_add(&l, 512, RB_EXT_ZERO);
	rb_reply_extents_encode(buf, &in, l.n);
	CHECK(rb_reply_decode(buf, len, &out, &why) == 0);
	CHECK(rb_extents_check(&out, 4096, 512, &why) == RB_EPROTO);
	rb_extent_list_init(&l, buf + sizeof(struct rb_reply));
	rb_extent_list_add(&l, 512, RB_EXT_DATA | 0x80);
	rb_reply_extents_encode(buf, &in, l.n);
	CHECK(rb_reply_decode(buf, len, &out, &why) == 0);
	CHECK(rb_extents_check(&out, 4096, 512, &why) == RB_EPROTO);
}

static void
test_list(void)
{
	const char *why, *name, *desc;
	size_t len, pos = 0;
	uint16_t count, flags;
	char nm[32];
	int i, r;

	len = rb_list_encode(buf);
	CHECK(rb_list_decode(buf, len, &why) == 0);
	((struct rb_list *)buf)->version = htole16(5);
	CHECK(rb_list_decode(buf, len, &why) == -EPROTO);

	len = rb_list_reply_init(buf);
	CHECK(rb_list_reply_add(buf, &len, "disk0", "first") == 0);
	CHECK(rb_list_reply_add(buf, &len, "disk1", "") == 0);
	CHECK(rb_list_reply_decode(buf, len, &count, &flags, &why) == 0);
	CHECK(count == 2 && flags == 0);
	CHECK(rb_list_reply_next(buf, len, &pos, &name, &desc) == 1);
	CHECK(strcmp(name, "disk0") == 0 && strcmp(desc, "first") == 0);
	CHECK(rb_list_reply_next(buf, len, &pos, &name, &desc) == 1);
	CHECK(strcmp(name, "disk1") == 0 && strcmp(desc, "") == 0);
	CHECK(rb_list_reply_next(buf, len, &pos, &name, &desc) == 0);

	/* a count that lies */
	((struct rb_list_reply *)buf)->count = htole16(3);
	CHECK(rb_list_reply_decode(buf, len, &count, &flags, &why) == -EBADMSG);
	((struct rb_list_reply *)buf)->count = htole16(2);
	/* an unterminated last string */
	buf[len - 1] = 'x';
	CHECK(rb_list_reply_decode(buf, len, &count, &flags, &why) == -EBADMSG);

	/* filling it up sets TRUNCATED and never overruns */
	len = rb_list_reply_init(buf);
	for (i = 0, r = 0; i < 1000 && r == 0; i++) {
		snprintf(nm, sizeof(nm), "export-%04d", i);
		r = rb_list_reply_add(buf, &len, nm, "a description of this export");
	}
	CHECK(r == -1 && len <= RB_CTRL_MSG_MAX);
	CHECK(rb_list_reply_decode(buf, len, &count, &flags, &why) == 0);
	CHECK(flags & RB_LIST_TRUNCATED);
	CHECK(count == i - 1);
}

static void
test_names_and_errors(void)
{
	char longname[RB_EXPORT_NAME_MAX + 2];
	const char *why;

	CHECK(rb_export_name_valid("disk0", &why) == 0);
	CHECK(rb_export_name_valid("vol/a_b-c.1", &why) == 0);
	CHECK(rb_export_name_valid("", &why) == -EINVAL);
	CHECK(rb_export_name_valid("has space", &why) == -EINVAL);
	CHECK(rb_export_name_valid("-opt", &why) == -EINVAL);
	CHECK(rb_export_name_valid(".hidden", &why) == -EINVAL);
	CHECK(rb_export_name_valid("tab\there", &why) == -EINVAL);
	CHECK(rb_export_name_valid("caf\xc3\xa9", &why) == -EINVAL);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK(rb_export_name_valid(longname, &why) == -EINVAL);
	longname[RB_EXPORT_NAME_MAX] = '\0';
	CHECK(rb_export_name_valid(longname, &why) == 0);

	CHECK(rb_error_to_errno(RB_EPERM) == EPERM);
	CHECK(rb_error_to_errno(RB_ENOSPC) == ENOSPC);
	CHECK(rb_error_to_errno(RB_OK) == 0);
	CHECK(rb_error_to_errno(999) == EIO);
	CHECK(rb_errno_to_error(EDQUOT) == RB_ENOSPC);
	CHECK(rb_errno_to_error(EIO) == RB_EIO);
	CHECK(rb_errno_to_error(EROFS) == RB_EIO);
	CHECK(rb_errno_to_error(EINVAL) == RB_EINVAL);
	/* librbd's osd op timeout: the write started, so not "resend" */
	CHECK(rb_errno_to_error(ETIMEDOUT) == RB_EIO);
	CHECK(strcmp(rb_error_name(RB_EOVERFLOW), "EOVERFLOW") == 0);
	CHECK(strcmp(rb_opcode_name(RB_OP_WRITE_ZEROES), "WRITE_ZEROES") == 0);
	CHECK(strcmp(rb_opcode_name(200), "UNKNOWN") == 0);
}

static void
test_peek(void)
{
	uint8_t type;
	const char *why;

	CHECK(rb_msg_peek(buf, 0, &type, &why) == -EBADMSG);
	rb_list_encode(buf);
	CHECK(rb_msg_peek(buf, sizeof(struct rb_list), &type, &why) == 0 && type == RB_MSG_LIST);
	/* random garbage never decodes as a valid request */
	srand(1);
	for (int i = 0; i < 10000; i++) {
		struct rb_req_info r;
		size_t n = (size_t)rand() % 64;

		for (size_t j = 0; j < n; j++)
			buf[j] = (unsigned char)rand();
		if (rb_request_decode(buf, n, &r, &why) == 0) {
			/* only if it happens to be self-consistent */
			CHECK(n >= sizeof(struct rb_request));
		}
	}
}

int
main(void)
{
	test_conn_priv();
	test_hello();
	test_auth();
	test_hello_reply();
	test_request();
	test_validate();
	test_reply();
	test_read_inline();
	test_read_imm();
	test_block_status();
	test_list();
	test_names_and_errors();
	test_peek();
	printf("test-protocol: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
