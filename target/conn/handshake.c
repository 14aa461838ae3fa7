/* The HELLO / AUTH / LIST handshake of a connection (target/conn/conn.h),
 * before any request: export checks, the challenge, HELLO_REPLY. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "conn.h"
#include "log.h"
#include "qpview.h"
#include "req/request.h"

static void
conn_post_ctrl(struct conn *c, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->ctrl_buf,
		.length = (uint32_t)len,
		.lkey = c->ctrl_mr->lkey,
	};
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&c->ctrl_ctx;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (conn_post_own(c, &wr, "control message") == 0)
		c->ctrl_busy++;   /* CHALLENGE and HELLO_REPLY may both be in flight */
}

void
auth_abandon(struct conn *c, const char *why)
{
	if (!c->auth_pending)
		return;
	if (why != NULL)
		log_warnx("%s: export %s: authentication failed: %s", c->peer,
			  c->auth_hello.export_name, why);
	stats_refused(c->t, STATS_REFUSED_AUTH);
	rb_auth_wipe(c->auth_expect, sizeof(c->auth_expect));
	c->auth_pending = 0;
}

static void
hello_refuse(struct conn *c, uint16_t status, const char *name, const char *why)
{
	struct rb_export_info info;

	log_warnx("%s: HELLO for export '%s' refused: %s (%s)", c->peer, name,
		  rb_error_name(status), why);
	/* A refusal after the challenge counts as a failed authentication
	 * (the caller said why). */
	if (c->auth_pending)
		auth_abandon(c, NULL);
	else
		stats_refused_status(c->t, status, 1);
	memset(&info, 0, sizeof(info));
	info.status = status;
	conn_post_ctrl(c, rb_hello_reply_encode(c->ctrl_buf, &info));
	if (c->state != CONN_ERROR)
		c->state = CONN_LINGER;
}

static uint32_t
pow2_floor(uint32_t v)
{
	uint32_t p = 1;

	while (p <= v / 2)
		p *= 2;
	return p;
}

/* The export name of a HELLO: the target not shutting down, the export
 * there, the peer's address allowed.  The export, or NULL after refusing
 * the HELLO.  Run at HELLO and again after AUTH. */
static struct export *
hello_check_export(struct conn *c, const char *name)
{
	struct target *t = c->t;
	struct export *e = export_find(t, name);

	if (t->shutting_down) {
		hello_refuse(c, RB_ESHUTDOWN, name, "target is shutting down");
		return NULL;
	}
	if (e == NULL) {
		hello_refuse(c, RB_ENOENT, name, "no such export");
		return NULL;
	}
	if (!cfg_export_allows(e->cfg, (struct sockaddr *)&c->peer_sa)) {
		hello_refuse(c, RB_EACCES, name, "address not allowed");
		return NULL;
	}
	return e;
}

/* The export-level checks, run at HELLO and again after AUTH (a reload or
 * another connection may have changed things meanwhile), then commit: the
 * request slots, the export's connection count, HELLO_REPLY OK. */
static void
conn_hello_finish(struct conn *c, struct recv_buf *rb, const struct rb_hello_info *hp)
{
	struct target *t = c->t;
	struct rb_hello_info h = *hp;
	struct rb_export_info info;
	struct export *e;
	uint32_t max_io;
	unsigned i;

	e = hello_check_export(c, h.export_name);
	if (e == NULL)
		return;
	if (export_take_conn(t, e) < 0) {
		hello_refuse(c, RB_EBUSY, h.export_name, "max-connections reached");
		return;
	}
	c->rq.exp = e;     /* holds its count from here: conn_destroy gives it back */
	max_io = h.max_io < t->cfg->max_io ? h.max_io : t->cfg->max_io;
	max_io -= max_io % CONFIG_BLOCK;
	if (max_io < CONFIG_BLOCK) {
		hello_refuse(c, RB_EPROTO, h.export_name, "max_io below 512 bytes");
		return;
	}
	c->qd = h.queue_depth < c->cm_qd ? h.queue_depth : c->cm_qd;
	/* Proved (or no secret asked): every request the initiator may now
	 * send needs a posted buffer before HELLO_REPLY goes out. */
	if (recvring_grow(c, c->qd + 1) < 0) {
		hello_refuse(c, RB_ENOMEM, h.export_name, "cannot grow the receive ring");
		return;
	}
	c->rq.nreqs = 2 * c->qd;
	c->rq.reqs = calloc(c->rq.nreqs, sizeof(*c->rq.reqs));
	if (c->rq.reqs == NULL) {
		hello_refuse(c, RB_ENOMEM, h.export_name, "out of memory");
		return;
	}
	for (i = c->rq.nreqs; i-- > 0;) {
		req_init(&c->rq.reqs[i], &c->rq);
		SLIST_INSERT_HEAD(&c->rq.free_reqs, &c->rq.reqs[i], free_link);
	}
	/* No connection may hold more than half of the device's pool, nor
	 * run more TRIM/WRITE_ZEROES than half of the worker threads. */
	c->rq.buf_cap = pool_nbufs(c->rq.pool) / 2 > 0 ? pool_nbufs(c->rq.pool) / 2 : 1;
	c->rq.slow_quota = t->cfg->io_threads / 2 > 0 ? t->cfg->io_threads / 2 : 1;
	c->auth_pending = 0;
	c->rq.send_inv = (h.flags & RB_HELLO_SEND_INV) != 0;
	c->inline_max = t->cfg->inline_max < max_io ? t->cfg->inline_max : max_io;
	/* O_DIRECT wants aligned memory: every WRITE's data comes by RDMA
	 * READ into an aligned pool buffer, none inline in a receive. */
	if (e->cfg->direct_io)
		c->inline_max = 0;
	c->rq.lim.export_size = e->cfg->size;
	c->rq.lim.max_io = max_io;
	c->rq.lim.min_block = CONFIG_BLOCK;
	c->rq.lim.inline_max = c->inline_max;
	/* A small READ's data in its reply, for an initiator that takes it;
	 * inline-max = 0 turns it off with inline writes.  It goes out of
	 * the aligned pool buffer, so O_DIRECT does not rule it out. */
	c->rq.lim.read_inline = (h.flags & RB_HELLO_READ_INLINE) && t->cfg->inline_max > 0;
	/* ... and, when the initiator takes it, as its data alone: one
	 * packet for 4 KiB at a 4096-byte MTU instead of two. */
	c->rq.read_imm = c->rq.lim.read_inline && (h.flags & RB_HELLO_READ_IMM);
	c->rq.lim.read_only = e->cfg->read_only;

	memset(&info, 0, sizeof(info));
	info.status = RB_OK;
	info.queue_depth = (uint16_t)c->qd;
	info.flags = export_flags(e) | (c->rq.lim.read_inline ? RB_EXP_READ_INLINE : 0) |
		(c->rq.read_imm ? RB_EXP_READ_IMM : 0);
	info.size = e->cfg->size;
	info.min_block = CONFIG_BLOCK;
	info.pref_block = pow2_floor(max_io < 4096 ? max_io : 4096);
	info.max_io = max_io;
	info.inline_max = c->inline_max;
	snprintf(info.description, sizeof(info.description), "%s", e->cfg->description);
	c->state = CONN_READY;
	conn_handshake_done(c);
	if (conn_post_recv(c, rb) < 0)
		return;
	stats_count(t, &e->sessions);
	log_info("%s: connected to export %s, queue depth %u, max-io %u, inline %u%s",
		 c->peer, e->cfg->name, c->qd, max_io, c->inline_max,
		 !c->rq.lim.read_inline ? "" : c->rq.read_imm ? ", inline reads with immediate" :
		 ", inline reads");
	conn_post_ctrl(c, rb_hello_reply_encode(c->ctrl_buf, &info));
}

/* The CHALLENGE for HELLO h under key k: a fresh nonce Nt, our proof Mt, and
 * the Mi we expect (kept in c->auth_expect), both over the connection as we
 * see it, so that proofs relayed from another connection do not match.
 * 0, or -1 with a reason in why. */
static int
conn_challenge(struct conn *c, const struct rb_secret *k, const struct rb_hello_info *h,
	       struct rb_auth_info *ch, char *why, size_t whylen)
{
	struct rb_auth_bind b;

	if (rb_qp_view(c->qp, c->cm_id, 1, &b, why, whylen) < 0)
		return -1;
	memset(ch, 0, sizeof(*ch));
	if (rb_auth_nonce(ch->nonce) < 0 ||
	    rb_auth_mac_target(k, h->nonce, ch->nonce, &b, h->export_name, ch->mac) < 0 ||
	    rb_auth_mac_initiator(k, h->nonce, ch->nonce, &b, h->export_name,
				  c->auth_expect) < 0) {
		rb_auth_wipe(ch, sizeof(*ch));
		rb_auth_wipe(c->auth_expect, sizeof(c->auth_expect));
		snprintf(why, whylen, "cannot compute the challenge");
		return -1;
	}
	return 0;
}

/* HELLO: refusals that need no secret first (nothing is committed for
 * them), then CHALLENGE when this peer needs a secret, else finish. */
static void
conn_hello(struct conn *c, struct recv_buf *rb)
{
	struct rb_hello_info h;
	struct rb_auth_info ch;
	const struct rb_secret *k;
	struct export *e;
	const char *why = "?";
	char cwhy[192];

	if (rb_hello_decode(rb->msg.buf, rb->msg.len, &h, &why) < 0) {
		hello_refuse(c, RB_EPROTO, "?", why);
		return;
	}
	e = hello_check_export(c, h.export_name);
	if (e == NULL)
		return;
	k = cfg_export_secret(e->cfg, (struct sockaddr *)&c->peer_sa);
	if (k == NULL) {
		conn_hello_finish(c, rb, &h);
		return;
	}
	if (!(h.flags & RB_HELLO_AUTH_BIND)) {
		hello_refuse(c, RB_EPROTO, h.export_name, "the export needs a secret and "
			     "the initiator does not bind authentication to the connection "
			     "(no AUTH_BIND flag in HELLO: an initiator older than it; "
			     "upgrade it)");
		return;
	}
	/* Mt proves we know the key (over the initiator's fresh nonce); the
	 * Mi we expect covers our fresh nonce, so a recorded AUTH from an
	 * earlier connection never matches.  The key's identity stays with
	 * the connection, for the reload check (revoke.c). */
	if (conn_challenge(c, k, &h, &ch, cwhy, sizeof(cwhy)) < 0) {
		hello_refuse(c, RB_ENOMEM, h.export_name, cwhy);
		return;
	}
	c->key_set = rb_secret_id(k, c->key_id) == 0;
	if (!c->key_set) {
		rb_auth_wipe(&ch, sizeof(ch));
		hello_refuse(c, RB_ENOMEM, h.export_name, "cannot compute the key's identity");
		return;
	}
	c->auth_hello = h;
	c->auth_pending = 1;
	if (conn_post_recv(c, rb) < 0) {
		rb_auth_wipe(&ch, sizeof(ch));
		return;
	}
	log_debug("%s: export %s: challenge sent", c->peer, h.export_name);
	conn_post_ctrl(c, rb_challenge_encode(c->ctrl_buf, &ch));
	rb_auth_wipe(&ch, sizeof(ch));
}

/* AUTH: the initiator's proof, checked in constant time. */
static void
conn_auth(struct conn *c, struct recv_buf *rb)
{
	struct rb_auth_info a;
	const char *why = "?", *name = c->auth_hello.export_name;
	struct export *e;
	int ok;

	if (rb_auth_decode(rb->msg.buf, rb->msg.len, &a, &why) < 0) {
		log_warnx("%s: export %s: authentication failed: malformed AUTH (%s)",
			  c->peer, name, why);
		hello_refuse(c, RB_EPROTO, name, why);
		return;
	}
	ok = rb_auth_mac_equal(a.mac, c->auth_expect);
	rb_auth_wipe(&a, sizeof(a));
	rb_auth_wipe(c->auth_expect, sizeof(c->auth_expect));
	if (!ok) {
		log_warnx("%s: export %s: authentication failed: wrong response",
			  c->peer, name);
		hello_refuse(c, RB_EACCES, name, "authentication failed");
		return;
	}
	/* A reload between CHALLENGE and AUTH may have given the peer
	 * another key: what it proved no longer counts. */
	e = export_find(c->t, name);
	if (e != NULL && conn_key_stale(c, e->cfg)) {
		log_warnx("%s: export %s: authentication failed: the export's "
			  "secret-file changed during the handshake", c->peer, name);
		hello_refuse(c, RB_EACCES, name, "authentication failed");
		return;
	}
	log_info("%s: export %s: initiator authenticated", c->peer, name);
	c->auth_pending = 0;
	conn_hello_finish(c, rb, &c->auth_hello);
}

static void
conn_list(struct conn *c, struct recv_buf *rb)
{
	struct export *e;
	const char *why = "?";
	size_t len;

	if (rb_list_decode(rb->msg.buf, rb->msg.len, &why) < 0) {
		conn_fail(c, why);
		return;
	}
	len = rb_list_reply_init(c->ctrl_buf);
	STAILQ_FOREACH(e, &c->t->exports, link) {
		if (e->removed || !cfg_export_allows(e->cfg, (struct sockaddr *)&c->peer_sa) ||
		    !cfg_export_listed(e->cfg, (struct sockaddr *)&c->peer_sa))
			continue;
		if (rb_list_reply_add(c->ctrl_buf, &len, e->cfg->name, e->cfg->description) < 0)
			break;
	}
	log_info("%s: listed exports", c->peer);
	c->state = CONN_LINGER;
	conn_post_ctrl(c, len);
}

void
conn_handshake_recv(struct conn *c, struct recv_buf *rb, uint8_t type)
{
	if (c->auth_pending) {
		if (type == RB_MSG_AUTH) {
			conn_auth(c, rb);
		} else {
			auth_abandon(c, "expected AUTH");
			conn_fail(c, "protocol violation: expected AUTH");
		}
	} else if (type == RB_MSG_HELLO) {
		conn_hello(c, rb);
	} else if (type == RB_MSG_LIST) {
		conn_list(c, rb);
	} else {
		conn_fail(c, "protocol violation: expected HELLO or LIST");
	}
}
