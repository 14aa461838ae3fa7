/* rdmablk-hostile: the positive control and the credit scenarios, then the
 * scenarios about the handshake: the connect's private data, disconnects
 * mid-handshake, garbage HELLOs and messages out of order (hostile.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"
#include "pattern.h"
#include "util.h"

/* ---- scenarios ---- */

/* Positive control: a well-behaved session through this tool works, so the
 * closes seen elsewhere are the target's doing, not the tool's. */
static int
sc_good(void)
{
	char msg[sizeof(struct rb_request)], why[256];
	struct outcome o;
	struct hconn h;
	const uint64_t off = 4u << 20;
	const uint32_t len = 64 * 1024;

	if (h_session(&h, 4) < 0)
		return 1;
	pattern_fill(h.data, off, len, opt.seed);
	h_roundtrip(&h, msg, data_req(&h, msg, RB_OP_WRITE, 1, off, len, 0), &o);
	if (o.kind != OUT_REPLY || o.error != RB_OK) {
		h_close(&h);
		return verdict(0, "WRITE got %s", o.what);
	}
	memset(h.data + len, 0, len);
	h_roundtrip(&h, msg, data_req(&h, msg, RB_OP_READ, 2, off, len, len), &o);
	if (o.kind != OUT_REPLY || o.error != RB_OK) {
		h_close(&h);
		return verdict(0, "READ got %s", o.what);
	}
	if (memcmp(h.data, h.data + len, len) != 0) {
		h_close(&h);
		return verdict(0, "READ returned other data than was written");
	}
	h_roundtrip(&h, msg, req_msg(msg, RB_OP_FLUSH, 0, 3, 0, 0, 0, 0), &o);
	if (o.kind != OUT_REPLY || o.error != RB_OK || !(o.flags & RB_REP_DURABLE)) {
		h_close(&h);
		return verdict(0, "FLUSH got %s (flags 0x%x)", o.what, o.flags);
	}
	if (h_nop_ok(&h, why, sizeof(why)) < 0) {
		h_close(&h);
		return verdict(0, "%s", why);
	}
	h_close(&h);
	return verdict(1, "WRITE, READ (data verified), FLUSH (durable) and NOP all OK");
}

/* Exactly the granted depth in flight at once: all must succeed. */
static int
sc_credits_full(void)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	unsigned i, qd, nok;

	if (h_session(&h, 8) < 0)
		return 1;
	qd = h.exp.queue_depth;
	for (i = 0; i < qd; i++)
		if (h_send(&h, msg, data_req(&h, msg, RB_OP_READ, 100 + i, (uint64_t)i * 8192,
					     8192, (size_t)i * 8192)) < 0) {
			h_close(&h);
			return verdict(0, "cannot post request %u", i);
		}
	nok = h_replies_ok(&h, qd, &o);
	h_close(&h);
	if (nok != qd)
		return verdict(0, "%u of %u requests in flight at once succeeded; then %s",
			       nok, qd, o.what);
	return verdict(1, "all %u requests in flight at once (the granted depth) succeeded", qd);
}


/* More requests in flight than granted: HELLO asks for depth 1, then 8
 * READs of max-io go out at once. */
static int
sc_too_many_requests(void)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	unsigned i, nreplies = 0, n = 8;
	uint32_t len;

	if (h_session(&h, 1) < 0)
		return 1;
	if (h.exp.queue_depth != 1) {
		h_close(&h);
		return verdict(0, "asked for depth 1, granted %u", h.exp.queue_depth);
	}
	len = h.exp.max_io < H_DATA_SIZE / n ? h.exp.max_io : H_DATA_SIZE / n;
	for (i = 0; i < n; i++)
		if (h_send(&h, msg, data_req(&h, msg, RB_OP_READ, 200 + i, (uint64_t)i * len,
					     len, (size_t)i * len)) < 0)
			break;
	for (;;) {
		h_outcome(&h, wait_deadline(), &o);
		if (o.kind != OUT_REPLY)
			break;
		nreplies++;
	}
	h_close(&h);
	if (o.kind == OUT_CLOSED)
		return verdict(1, "%u requests on 1 credit: %u replies, then %s", n, nreplies,
			       o.what);
	if (nreplies == n)
		return verdict(0, "%u requests on 1 credit all served: the credit limit is "
			       "not enforced", n);
	return verdict(0, "%u requests on 1 credit: %u replies, then %s", n, nreplies, o.what);
}

/* ---- handshake: private data ---- */

static int
connect_expect_rejected(const char *did, const void *priv, uint8_t len)
{
	struct hconn h;
	char why[128];
	enum conn_result r;

	if (h_open(&h) < 0)
		return 1;
	r = h_connect_raw(&h, priv, len, why, sizeof(why));
	h_close(&h);
	if (r == CONN_REJECTED && strcmp(why, rb_error_name(RB_EPROTO)) == 0)
		return verdict(1, "%s: rejected with %s", did, why);
	return verdict(0, "%s: expected a reject with EPROTO, got %s%s", did,
		       r == CONN_OK ? "accepted: " : r == CONN_REJECTED ? "a reject: " : "",
		       why);
}

static int
sc_bad_magic(void)
{
	struct rb_conn_priv p;

	rb_conn_priv_encode(&p, RB_OK, H_CM_QD);
	p.magic ^= 0x01010101u;
	return connect_expect_rejected("private data with a bad magic", &p, sizeof(p));
}

static int
sc_bad_version(void)
{
	struct rb_conn_priv p;

	rb_conn_priv_encode(&p, RB_OK, H_CM_QD);
	p.version = htole16(RB_PROTO_VERSION + 1);
	return connect_expect_rejected("private data with version 2", &p, sizeof(p));
}

static int
sc_no_private_data(void)
{
	return connect_expect_rejected("connect without private data", NULL, 0);
}

static int
sc_short_private_data(void)
{
	struct rb_conn_priv p;

	/* The CM pads to 56 bytes with zeros: the target sees a magic and
	 * then a version of 0. */
	rb_conn_priv_encode(&p, RB_OK, H_CM_QD);
	return connect_expect_rejected("4 bytes of private data", &p, 4);
}

static int
sc_priv_status(void)
{
	struct rb_conn_priv p;

	rb_conn_priv_encode(&p, RB_EACCES, H_CM_QD);
	return connect_expect_rejected("connect private data with a status", &p, sizeof(p));
}

static int
sc_priv_reserved(void)
{
	struct rb_conn_priv p;

	rb_conn_priv_encode(&p, RB_OK, H_CM_QD);
	p.reserved1 = htole32(1);
	return connect_expect_rejected("connect private data with a reserved field set", &p,
				       sizeof(p));
}

static int
sc_zero_queue_depth(void)
{
	struct rb_conn_priv p;

	rb_conn_priv_encode(&p, RB_OK, 0);
	return connect_expect_rejected("private data asking for depth 0", &p, sizeof(p));
}

/* ---- disconnects mid-handshake: the target must clean up and serve on ---- */

static int
sc_connect_destroy(void)
{
	struct hconn h;

	if (h_open(&h) < 0)
		return 1;
	if (h_connect_nowait(&h, H_CM_QD) != 0) {
		h_close(&h);
		return verdict(0, "rdma_connect: %s", strerror(errno));
	}
	h_close(&h);     /* at once, without waiting for the accept */
	return verdict(1, "connected and destroyed the id at once");
}

static int
sc_established_disconnect(void)
{
	struct hconn h;

	if (h_connect(&h) < 0)
		return 1;
	h_close(&h);
	return verdict(1, "established, then disconnected without a HELLO");
}

/* Connected, then nothing: the target must give up on the handshake
 * (handshake-timeout) and close the connection. */
static int
sc_silent(void)
{
	struct hconn h;

	if (h_connect(&h) < 0)
		return 1;
	return expect_closed(&h, "connected and sent nothing");
}

static int
sc_half_hello(void)
{
	char msg[sizeof(struct rb_hello)];
	struct hconn h;

	if (h_connect(&h) < 0)
		return 1;
	hello_msg(msg, opt.export_name, 4, H_MAX_IO);
	if (h_send(&h, msg, sizeof(msg) / 2) < 0) {
		h_close(&h);
		return verdict(0, "cannot post half a HELLO");
	}
	h_close(&h);     /* without waiting for the target's reaction */
	return verdict(1, "sent half a HELLO and disconnected at once");
}

/* ---- garbage handshakes ---- */

static int
hello_variant_refused(const char *did, void *msg, size_t len, uint16_t status,
		      uint16_t alt)
{
	struct hconn h;

	if (h_connect(&h) < 0)
		return 1;
	if (h_send(&h, msg, len) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the HELLO");
	}
	return expect_hello_refused(&h, did, status, alt, 1);
}

static int
sc_garbage_hello(void)
{
	char msg[sizeof(struct rb_hello)];
	struct rb_hello *m = (struct rb_hello *)msg;
	uint64_t s = opt.seed | 1;
	size_t i;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (char)xorshift(&s);
	m->hdr.type = RB_MSG_HELLO;
	m->hdr.reserved = 0;
	m->hdr.length = htole16(sizeof(msg));
	return hello_variant_refused("a HELLO of random bytes", msg, sizeof(msg), RB_EPROTO,
				     RB_EINVAL);
}

/* The HELLOs that are well formed but for one flaw, by scenario name: each
 * must be refused with status, or with alt where the target may say either. */
enum flaw {
	FLAW_TRUNCATED, FLAW_VERSION, FLAW_RESERVED, FLAW_FLAGS, FLAW_ZERO_DEPTH,
	FLAW_NAME_NO_NUL, FLAW_TINY_MAX_IO, FLAW_NAME_CONTROL,
};
static const struct hello_flaw {
	const char *name, *did;
	enum flaw flaw;
	uint16_t status, alt;
} hello_flaws[] = {
	{ "truncated-hello", "a truncated HELLO", FLAW_TRUNCATED, RB_EPROTO, 0 },
	{ "hello-bad-version", "a HELLO with version 2", FLAW_VERSION, RB_EPROTO, 0 },
	{ "hello-reserved", "a HELLO with a non-zero reserved field", FLAW_RESERVED,
	  RB_EPROTO, 0 },
	{ "hello-bad-flags", "a HELLO with unknown flags", FLAW_FLAGS, RB_EPROTO, RB_EINVAL },
	{ "hello-zero-depth", "a HELLO asking for depth 0", FLAW_ZERO_DEPTH, RB_EPROTO,
	  RB_EINVAL },
	{ "hello-unterminated-name", "a HELLO whose export name has no NUL", FLAW_NAME_NO_NUL,
	  RB_EPROTO, RB_EINVAL },
	{ "hello-tiny-max-io", "a HELLO with max_io 100", FLAW_TINY_MAX_IO, RB_EPROTO,
	  RB_EINVAL },
	{ "hello-control-name", "a HELLO whose export name has control characters",
	  FLAW_NAME_CONTROL, RB_EPROTO, RB_EINVAL },
};

/* The running scenario (raw.cur) names its flaw in hello_flaws. */
static int
sc_hello_flawed(void)
{
	char msg[sizeof(struct rb_hello)];
	struct rb_hello *m = (struct rb_hello *)msg;
	const struct hello_flaw *f = NULL;
	size_t i, len = sizeof(msg);

	for (i = 0; i < sizeof(hello_flaws) / sizeof(hello_flaws[0]) && f == NULL; i++)
		if (strcmp(hello_flaws[i].name, raw.cur) == 0)
			f = &hello_flaws[i];
	if (f == NULL)
		return verdict(0, "no HELLO flaw is named %s", raw.cur);
	/* An escape sequence in the name must never reach the target's log. */
	hello_msg(msg, f->flaw == FLAW_NAME_CONTROL ? "x\x1b[2J\ny" : opt.export_name,
		  f->flaw == FLAW_ZERO_DEPTH ? 0 : 4,
		  f->flaw == FLAW_TINY_MAX_IO ? 100 : H_MAX_IO);
	switch (f->flaw) {
	case FLAW_TRUNCATED:
		len = sizeof(msg) / 2;
		m->hdr.length = htole16(len);
		break;
	case FLAW_VERSION:
		m->version = htole16(RB_PROTO_VERSION + 1);
		break;
	case FLAW_RESERVED:
		m->reserved1 = htole32(1);
		break;
	case FLAW_FLAGS:
		m->flags = htole16(0x8000);
		break;
	case FLAW_NAME_NO_NUL:
		memset(m->export_name, 'x', sizeof(m->export_name));
		break;
	case FLAW_ZERO_DEPTH:
	case FLAW_TINY_MAX_IO:
	case FLAW_NAME_CONTROL:
		break;          /* in the arguments of hello_msg */
	}
	return hello_variant_refused(f->did, msg, len, f->status, f->alt);
}

static int
sc_hello_unknown_export(void)
{
	char msg[sizeof(struct rb_hello)];
	struct hconn h;

	if (h_connect(&h) < 0)
		return 1;
	hello_msg(msg, "no-such-export-here", 4, H_MAX_IO);
	if (h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the HELLO");
	}
	return expect_hello_refused(&h, "HELLO for an unknown export", RB_ENOENT, 0, 0);
}

/* A refused HELLO, with requests sent right behind it: they are dropped. */
static int
sc_requests_after_refusal(void)
{
	char msg[sizeof(struct rb_hello)], req[sizeof(struct rb_request)];
	struct hconn h;
	unsigned i;

	if (h_connect(&h) < 0)
		return 1;
	hello_msg(msg, "no-such-export-here", 4, H_MAX_IO);
	if (h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the HELLO");
	}
	for (i = 0; i < 4; i++)
		h_send(&h, req, data_req(&h, req, RB_OP_READ, 300 + i, 0, 4096, 0));
	return expect_hello_refused(&h, "HELLO for an unknown export, then 4 READs",
				    RB_ENOENT, 0, 0);
}

static int
sc_second_hello(void)
{
	char msg[sizeof(struct rb_hello)];
	struct hconn h;

	if (h_session(&h, 4) < 0)
		return 1;
	if (h_send(&h, msg, hello_msg(msg, opt.export_name, 4, H_MAX_IO)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the second HELLO");
	}
	return expect_closed(&h, "a second HELLO");
}

static int
sc_request_before_hello(void)
{
	char msg[sizeof(struct rb_request)];

	return message_expect_closed("a NOP before HELLO", msg,
				     req_msg(msg, RB_OP_NOP, 0, 1, 0, 0, 0, 0), 0);
}

static int
sc_list_after_hello(void)
{
	char msg[sizeof(struct rb_list)];

	return message_expect_closed("LIST after HELLO", msg, rb_list_encode(msg), 1);
}

static int
sc_list_reserved(void)
{
	char msg[sizeof(struct rb_list)];
	struct rb_list *m = (struct rb_list *)msg;

	rb_list_encode(msg);
	m->reserved = htole16(7);
	return message_expect_closed("LIST with a non-zero reserved field", msg, sizeof(msg), 0);
}

const struct scenario handshake_scenarios[] = {
	{ "good", sc_good },
	{ "credits-full", sc_credits_full },
	{ "too-many-requests", sc_too_many_requests },
	/* handshake: private data */
	{ "bad-magic", sc_bad_magic },
	{ "bad-version", sc_bad_version },
	{ "no-private-data", sc_no_private_data },
	{ "short-private-data", sc_short_private_data },
	{ "zero-queue-depth", sc_zero_queue_depth },
	{ "priv-status", sc_priv_status },
	{ "priv-reserved", sc_priv_reserved },
	/* disconnects mid-handshake */
	{ "connect-destroy", sc_connect_destroy },
	{ "established-disconnect", sc_established_disconnect },
	{ "half-hello", sc_half_hello },
	{ "silent", sc_silent },
	/* garbage HELLOs */
	{ "garbage-hello", sc_garbage_hello },
	{ "truncated-hello", sc_hello_flawed },
	{ "hello-bad-version", sc_hello_flawed },
	{ "hello-reserved", sc_hello_flawed },
	{ "hello-bad-flags", sc_hello_flawed },
	{ "hello-zero-depth", sc_hello_flawed },
	{ "hello-unterminated-name", sc_hello_flawed },
	{ "hello-tiny-max-io", sc_hello_flawed },
	{ "hello-control-name", sc_hello_flawed },
	{ "hello-unknown-export", sc_hello_unknown_export },
	{ "requests-after-refusal", sc_requests_after_refusal },
	/* sequence violations */
	{ "second-hello", sc_second_hello },
	{ "request-before-hello", sc_request_before_hello },
	{ "list-after-hello", sc_list_after_hello },
	{ "list-reserved", sc_list_reserved },
};
const size_t n_handshake_scenarios = sizeof(handshake_scenarios) / sizeof(handshake_scenarios[0]);
