/* rdmablk-bad-reply: does the initiator refuse a READ reply that carries
 * data it did not ask for?  One process plays both sides, as
 * rdmablk-mw-check does:
 *
 *   - a fake target (tests/tools/fake-target.h, a thread) that grants
 *     inline reads (READ_INLINE), receives one READ and answers it with a
 *     reply carrying data (RB_REP_DATA), of the mode's length;
 *   - the real initiator library (internals, initiator/internal.h): one
 *     connection, one READ through its pool into a buffer filled with 0x11.
 *
 *   rdmablk-bad-reply -a ADDR [-p PORT] -m good|unasked|short
 *
 *   good     a 4 KiB READ goes inline, and the reply carries its 4096
 *            bytes: the control, the fake target's reply is accepted;
 *   unasked  a 64 KiB READ goes by RDMA WRITE (it carries a key), and the
 *            reply carries 64 bytes of data all the same (the fake target
 *            writes nothing into the initiator's memory);
 *   short    a 4 KiB READ goes inline, and the reply carries 100 bytes.
 *
 * Prints "READ: OK|FAILED (ERR); caller's buffer: the data|untouched|CHANGED;
 * connection: up|closed by the initiator".  Exit 0 when good returned the
 * data, or when unasked and short failed the READ, closed the connection
 * and left the caller's buffer untouched; 1 otherwise. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake-target.h"
#include "internal.h"
#include "util.h"

#define BIG     65536
#define UNASKED 64
#define SHORT   100

enum mode { MODE_GOOD, MODE_UNASKED, MODE_SHORT };

static const char *addr;
static uint16_t port = 10897;
static enum mode mode = MODE_GOOD;

/* Fake target -> main, under lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int listening, replied, target_failed, hung_up, reply_seen;

static void
set_flag(int *flag)
{
	pthread_mutex_lock(&lock);
	*flag = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static int
wait_flag(int *flag)
{
	struct timespec ts;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += FAKE_DEADLINE_S;
	pthread_mutex_lock(&lock);
	while (!*flag && !target_failed && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&cond, &lock, &ts);
	r = *flag ? 0 : -1;
	pthread_mutex_unlock(&lock);
	return r;
}

static void
tfail(const char *what)
{
	fprintf(stderr, "rdmablk-bad-reply: fake target: %s\n", what);
	pthread_mutex_lock(&lock);
	target_failed = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

/* The reply's data length for a READ of req_len bytes, by mode. */
static uint32_t
data_len(uint32_t req_len)
{
	switch (mode) {
	case MODE_UNASKED: return UNASKED;
	case MODE_SHORT:   return SHORT;
	default:           return req_len;
	}
}

/* Static: the verbs objects stay reachable until the process exits. */
static struct fake_target fake_mem;

static void *
fake_target(void *arg)
{
	struct fake_target *f = &fake_mem;
	const char *what = "", *why = "";
	struct rb_hello_info h;
	struct rb_req_info req;
	struct rb_rep_info rep;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	uint32_t len, n;
	unsigned idx;

	(void)arg;
	if (fake_listen(f, addr, port, &what) < 0) {
		tfail(what);
		return NULL;
	}
	set_flag(&listening);
	if (fake_accept(f, &what) < 0) {
		tfail(what);
		return NULL;
	}
	if (fake_hello(f, 1, &h, &why) < 0) {
		tfail(why);
		return NULL;
	}
	if (fake_recv(f, &len, &idx) < 0 || rb_request_decode(f->recv[idx], len, &req, &why) < 0 ||
	    req.opcode != RB_OP_READ) {
		tfail("no READ");
		return NULL;
	}
	printf("fake target: READ of %u bytes, %s\n", req.length,
	       req.flags & RB_REQ_INLINE ? "inline" : "by RDMA WRITE (it has a key)");
	fake_repost(f, idx);
	n = data_len(req.length);
	memset(&rep, 0, sizeof(rep));
	rep.tag = req.tag;
	memset((uint8_t *)f->send + sizeof(struct rb_reply), 0xab, n);
	memset(&sge, 0, sizeof(sge));
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)f->send;
	sge.length = (uint32_t)rb_reply_data_encode(f->send, &rep, n);
	sge.lkey = f->send_mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	printf("fake target: reply with %u bytes of data\n", n);
	if (fake_send(f, &wr) < 0 || f->send_status != IBV_WC_SUCCESS) {
		tfail("reply not sent");
		return NULL;
	}
	set_flag(&replied);
	/* A refused reply: the initiator closes the connection. */
	if (mode != MODE_GOOD && fake_wait_disconnect(f, FAKE_DEADLINE_S))
		set_flag(&hung_up);
	set_flag(&reply_seen);
	return NULL;
}

static void
log_fn(enum rb_log_level level, const char *msg)
{
	fprintf(stderr, "rdmablk-bad-reply: initiator: %s: %s\n",
		rb_log_level_name(level), msg);
}

int
main(int argc, char **argv)
{
	struct rb_conn_cfg cfg;
	struct rb_stats stats;
	struct rb_conn *conn = NULL;
	struct rb_io io;
	pthread_t th;
	char errbuf[RB_ERRBUF] = "";
	static uint8_t buf[BIG], want[BIG];
	uint32_t len;
	uint64_t v;
	const char *state;
	int opt, r, ok, touched;

	while ((opt = getopt(argc, argv, "a:p:m:")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p':
			if (rb_parse_uint(optarg, 1, 65535, &v) < 0)
				return 2;
			port = (uint16_t)v;
			break;
		case 'm':
			if (strcmp(optarg, "good") == 0)
				mode = MODE_GOOD;
			else if (strcmp(optarg, "unasked") == 0)
				mode = MODE_UNASKED;
			else if (strcmp(optarg, "short") == 0)
				mode = MODE_SHORT;
			else
				return 2;
			break;
		default:
			fprintf(stderr, "usage: rdmablk-bad-reply -a ADDR [-p PORT] "
				"-m good|unasked|short\n");
			return 2;
		}
	}
	if (addr == NULL)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	rb_set_log(log_fn);
	if (pthread_create(&th, NULL, fake_target, NULL) != 0 || wait_flag(&listening) < 0)
		return 1;

	memset(&cfg, 0, sizeof(cfg));
	memset(&stats, 0, sizeof(stats));
	snprintf(cfg.host, sizeof(cfg.host), "%s", addr);
	cfg.port = port;
	snprintf(cfg.export_name, sizeof(cfg.export_name), "bad");
	cfg.queue_depth = 2;
	cfg.max_io = BIG;
	cfg.stats = &stats;
	r = rb_conn_create(&cfg, 0, rb_now_ns() + FAKE_DEADLINE_S * 1000000000ull, &conn, errbuf);
	if (r < 0) {
		fprintf(stderr, "rdmablk-bad-reply: connect: %s\n", errbuf);
		return 1;
	}
	printf("initiator: inline reads %s\n", conn->read_inline ? "granted" : "NOT granted");
	len = mode == MODE_UNASKED ? BIG : RB_READ_INLINE_MAX;
	memset(buf, 0x11, sizeof(buf));
	memset(&io, 0, sizeof(io));
	io.opcode = RB_OP_READ;
	io.offset = 0;
	io.length = len;
	io.rbuf = buf;
	io.copy_len = len;
	r = rb_conn_request(conn, &io, rb_now_ns() + FAKE_DEADLINE_S * 1000000000ull);
	if (wait_flag(&replied) < 0) {
		fprintf(stderr, "rdmablk-bad-reply: the fake target did not reply\n");
		return 1;
	}
	wait_flag(&reply_seen);
	memset(want, 0xab, len);
	touched = 0;
	for (v = 0; v < sizeof(buf); v++)
		touched |= buf[v] != 0x11;
	if (!touched)
		state = "untouched";
	else if (memcmp(buf, want, len) == 0)
		state = "the data";
	else
		state = "CHANGED";
	printf("READ: %s (%s); caller's buffer: %s; connection: %s\n", r < 0 ? "FAILED" : "OK",
	       r < 0 ? strerror(-r) : "no error", state,
	       hung_up ? "closed by the initiator" : "up");
	if (mode == MODE_GOOD)
		ok = r == 0 && strcmp(state, "the data") == 0 && conn->read_inline &&
		     stats.inline_read_bytes == len;
	else
		ok = r < 0 && !touched && hung_up && conn->read_inline;
	rb_conn_unref(conn);
	pthread_join(th, NULL);
	return ok ? 0 : 1;
}
