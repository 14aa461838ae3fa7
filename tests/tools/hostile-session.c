/* rdmablk-hostile: verdict lines, what the target did, and the helpers that
 * judge it (hostile.h). */
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"
#include "pattern.h"
#include "util.h"

struct hostile_opts opt = { .port = RB_DEFAULT_PORT, .qd = 16, .seed = 1 };
unsigned nfailed;

int __attribute__((format(printf, 2, 3)))
verdict(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: %s: ", ok ? "ok" : "FAIL", raw.cur);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		nfailed++;
	return ok ? 0 : 1;
}

uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- what the target did ---- */

void
h_outcome(struct hconn *h, uint64_t deadline, struct outcome *o)
{
	static struct hev ev;
	struct rb_rep_info rep;
	struct rb_export_info ei;
	const char *why = "?";
	uint8_t type;

	memset(o, 0, sizeof(*o));
	switch (h_wait(h, deadline, &ev)) {
	case EV_CLOSED:
		o->kind = OUT_CLOSED;
		snprintf(o->what, sizeof(o->what), "connection closed (%s)", h->closed_why);
		return;
	case EV_TIMEOUT:
		o->kind = OUT_TIMEOUT;
		snprintf(o->what, sizeof(o->what), "no reaction within %u s", raw.timeout_s);
		return;
	case EV_ERROR:
		o->kind = OUT_ERROR;
		snprintf(o->what, sizeof(o->what), "polling failed");
		return;
	case EV_MSG:
		break;
	}
	o->kind = OUT_MSG;
	if (rb_msg_peek(ev.buf, ev.len, &type, &why) < 0) {
		snprintf(o->what, sizeof(o->what), "a malformed message from the target (%s)", why);
		return;
	}
	if (type == RB_MSG_REPLY) {
		if (rb_reply_decode(ev.buf, ev.len, &rep, &why) < 0) {
			snprintf(o->what, sizeof(o->what), "a malformed REPLY (%s)", why);
			return;
		}
		o->kind = OUT_REPLY;
		o->error = rep.error;
		o->flags = rep.flags;
		o->tag = rep.tag;
		o->nextents = rep.nextents;
		if (rep.nextents > 0) {
			struct rb_extent_info e;
			unsigned i;

			for (i = 0; i < rep.nextents; i++) {
				rb_extent_get(&rep, i, &e);
				o->ext_bytes += e.length;
			}
			if (rb_extents_check(&rep, UINT32_MAX, 512, &why) != RB_OK)
				o->ext_bad = why;
		}
		snprintf(o->what, sizeof(o->what), "REPLY %s to tag %" PRIu64,
			 rb_error_name(rep.error), rep.tag);
		return;
	}
	if (type == RB_MSG_HELLO_REPLY) {
		if (rb_hello_reply_decode(ev.buf, ev.len, &ei, &why) < 0) {
			snprintf(o->what, sizeof(o->what), "a malformed HELLO_REPLY (%s)", why);
			return;
		}
		o->kind = OUT_HELLO_REPLY;
		o->error = ei.status;
		if (ei.status == RB_OK)
			h->exp = ei;
		snprintf(o->what, sizeof(o->what), "HELLO_REPLY %s", rb_error_name(ei.status));
		return;
	}
	snprintf(o->what, sizeof(o->what), "an unexpected message of type %u", type);
}

uint64_t
wait_deadline(void)
{
	return deadline_after_s(raw.timeout_s);
}

/* HELLO with the given depth; 0 on HELLO_REPLY OK (h->exp filled), else -1
 * with the outcome in *o. */
int
h_hello_qd(struct hconn *h, uint16_t qd, struct outcome *o)
{
	char msg[sizeof(struct rb_hello)];
	size_t len = hello_msg(msg, opt.export_name, qd, H_MAX_IO);

	if (h_send(h, msg, len) < 0) {
		snprintf(o->what, sizeof(o->what), "cannot post HELLO");
		o->kind = OUT_ERROR;
		return -1;
	}
	h_outcome(h, wait_deadline(), o);
	if (o->kind == OUT_HELLO_REPLY && o->error == RB_OK)
		return 0;
	return -1;
}

/* Connect and HELLO; reports a failure and returns -1 when that fails. */
int
h_session(struct hconn *h, uint16_t qd)
{
	struct outcome o;

	if (h_connect(h) < 0)
		return -1;
	if (h_hello_qd(h, qd, &o) < 0) {
		verdict(0, "HELLO to export '%s' failed: %s", opt.export_name, o.what);
		h_close(h);
		return -1;
	}
	if (h->exp.size < (16u << 20) || h->exp.max_io < 8192) {
		verdict(0, "export '%s' too small for these tests (size %" PRIu64 ", max_io %u)",
			opt.export_name, h->exp.size, h->exp.max_io);
		h_close(h);
		return -1;
	}
	return 0;
}

/* Send one request message and wait for its reply.  Returns the outcome. */
void
h_roundtrip(struct hconn *h, const void *msg, size_t len, struct outcome *o)
{
	if (h_send(h, msg, len) < 0) {
		memset(o, 0, sizeof(*o));
		o->kind = h->closed ? OUT_CLOSED : OUT_ERROR;
		snprintf(o->what, sizeof(o->what), "cannot post the message%s",
			 h->closed ? " (connection closed)" : "");
		return;
	}
	h_outcome(h, wait_deadline(), o);
}

unsigned
h_replies_ok(struct hconn *h, unsigned n, struct outcome *o)
{
	unsigned nok;

	for (nok = 0; nok < n; nok++) {
		h_outcome(h, wait_deadline(), o);
		if (o->kind != OUT_REPLY || o->error != RB_OK)
			break;
	}
	return nok;
}

/* A NOP must come back OK: the connection still serves. */
int
h_nop_ok(struct hconn *h, char *why, size_t wsize)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	uint64_t tag = h->next_tag++;

	h_roundtrip(h, msg, req_msg(msg, RB_OP_NOP, 0, tag, 0, 0, 0, 0), &o);
	if (o.kind == OUT_REPLY && o.error == RB_OK && o.tag == tag)
		return 0;
	snprintf(why, wsize, "NOP afterwards got %.200s", o.what);
	return -1;
}

/* ---- verdict helpers ---- */

/* The target must close the connection (and send nothing but, optionally,
 * a HELLO_REPLY refusal first). */
int
expect_closed(struct hconn *h, const char *did)
{
	struct outcome o;
	int rc;

	h_outcome(h, wait_deadline(), &o);
	if (o.kind == OUT_HELLO_REPLY && o.error != RB_OK) {
		char first[256];

		snprintf(first, sizeof(first), "%s", o.what);
		h_outcome(h, wait_deadline(), &o);
		rc = verdict(o.kind == OUT_CLOSED, "%s: %s, then %s", did, first, o.what);
	} else if (o.kind == OUT_CLOSED) {
		rc = verdict(1, "%s: %s", did, o.what);
	} else {
		rc = verdict(0, "%s: expected the connection to be closed, got %s", did, o.what);
	}
	h_close(h);
	return rc;
}

/* The target must answer with a HELLO_REPLY carrying `status`, or one of
 * `alt` (0: none), then disconnect; closing without the reply is accepted
 * when lenient. */
int
expect_hello_refused(struct hconn *h, const char *did, uint16_t status, uint16_t alt,
		     int lenient)
{
	struct outcome o;
	char first[256];
	int rc;

	h_outcome(h, wait_deadline(), &o);
	if (o.kind == OUT_CLOSED && lenient) {
		rc = verdict(1, "%s: %s", did, o.what);
	} else if (o.kind == OUT_HELLO_REPLY && (o.error == status || (alt && o.error == alt))) {
		snprintf(first, sizeof(first), "%s", o.what);
		h_outcome(h, wait_deadline(), &o);
		rc = verdict(o.kind == OUT_CLOSED, "%s: %s, then %s", did, first, o.what);
	} else {
		rc = verdict(0, "%s: expected HELLO_REPLY %s%s, got %s", did,
			     rb_error_name(status), lenient ? " or a close" : "", o.what);
	}
	h_close(h);
	return rc;
}

/* The target must reply `err` to `tag` and keep serving the connection, or
 * (when lenient) close it. */
int
expect_error(struct hconn *h, const char *did, uint64_t tag, uint16_t err, int lenient)
{
	struct outcome o;
	char why[256];
	int rc;

	h_outcome(h, wait_deadline(), &o);
	if (o.kind == OUT_REPLY && o.tag == tag && o.error == err) {
		if (h_nop_ok(h, why, sizeof(why)) == 0)
			rc = verdict(1, "%s: %s; the connection still serves", did, o.what);
		else
			rc = verdict(0, "%s: %s, but then %s", did, o.what, why);
	} else if (o.kind == OUT_CLOSED && lenient) {
		rc = verdict(1, "%s: %s", did, o.what);
	} else {
		rc = verdict(0, "%s: expected REPLY %s to tag %" PRIu64 "%s, got %s", did,
			     rb_error_name(err), tag, lenient ? " or a close" : "", o.what);
	}
	h_close(h);
	return rc;
}

/* Send a request message on a fresh session and expect err (see expect_error). */
int
request_expect_error(const char *did, const void *msg, size_t len, uint64_t tag,
		     uint16_t err, int lenient)
{
	struct hconn h;

	if (h_session(&h, 4) < 0)
		return 1;
	if (h_send(&h, msg, len) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the request");
	}
	return expect_error(&h, did, tag, err, lenient);
}

/* Send a message on a fresh session (after HELLO when hello is set) and
 * expect the connection closed. */
int
message_expect_closed(const char *did, const void *msg, size_t len, int hello)
{
	struct hconn h;

	if (hello ? h_session(&h, 4) < 0 : h_connect(&h) < 0)
		return 1;
	if (h_send(&h, msg, len) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the message");
	}
	return expect_closed(&h, did);
}

/* ---- the target still serves: a fresh, well-behaved session ---- */

int
health_check(void)
{
	char msg[sizeof(struct rb_request)], why[256];
	struct outcome o;
	struct hconn h;
	const char *saved = raw.cur;
	int rc = 0;

	raw.cur = "health";
	if (h_session(&h, 4) < 0) {
		raw.cur = saved;
		return verdict(0, "the target no longer accepts a well-behaved session");
	}
	if (h_nop_ok(&h, why, sizeof(why)) < 0) {
		rc = verdict(0, "after %s: %s", saved, why);
	} else {
		h_roundtrip(&h, msg, data_req(&h, msg, RB_OP_READ, 99, 0, 4096, 0), &o);
		if (o.kind != OUT_REPLY || o.error != RB_OK || o.tag != 99)
			rc = verdict(0, "after %s: READ got %s", saved, o.what);
	}
	h_close(&h);
	debug("still serves");
	raw.cur = saved;
	return rc;
}
