/* rdmablk-hostile's parts (rdmablk-hostile.c says what the tool does):
 *   hostile-session.c    verdict lines, what the target did (outcome), the
 *                        expect_* helpers and the health check;
 *   hostile-handshake.c  scenarios about the connect, HELLO and their order;
 *   hostile-requests.c   scenarios about malformed messages, invalid
 *                        requests, bogus keys and credits;
 *   hostile-flood.c      flood, starve, churn and hold: attacks, not tests;
 *   rdmablk-hostile.c    discard, the scenario list and main.
 * The connections themselves are raw-client's. */
#ifndef RDMABLK_TESTS_HOSTILE_H
#define RDMABLK_TESTS_HOSTILE_H

#include <stddef.h>
#include <stdint.h>

#include "raw-client.h"

#define H_MAX_IO      (1u << 20)    /* what HELLO asks for */
#define H_CM_QD       8             /* queue depth asked for in the CM connect */
#define H_FLOOD_IO    (64u * 1024)
#define H_STARVE_IO   (1u << 20)
#define H_HOLD_CM_QD  128

/* The command line (raw holds the rest: -t, -v, -H, -B). */
struct hostile_opts {
	const char *host;
	uint16_t port;
	const char *export_name;
	const char *src;                /* -B: source address, or NULL */
	unsigned qd;
	uint64_t seed;
};
extern struct hostile_opts opt;
extern unsigned nfailed;

/* One verdict line for the running scenario (raw.cur).  Returns 0 for ok,
 * 1 for a failure (counted in nfailed). */
int verdict(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t xorshift(uint64_t *s);
uint64_t wait_deadline(void);

/* ---- what the target did ---- */

enum out_kind { OUT_REPLY, OUT_HELLO_REPLY, OUT_MSG, OUT_CLOSED, OUT_TIMEOUT, OUT_ERROR };

struct outcome {
	enum out_kind kind;
	uint16_t error;       /* REPLY error or HELLO_REPLY status */
	uint8_t flags;
	uint64_t tag;
	/* A REPLY's extents (BLOCK_STATUS): how many, the bytes they add up
	 * to, and NULL or what rb_extents_check found wrong with them. */
	unsigned nextents;
	uint64_t ext_bytes;
	const char *ext_bad;
	char what[256];       /* for the verdict line */
};

void h_outcome(struct hconn *h, uint64_t deadline, struct outcome *o);
/* HELLO with the given depth; 0 on HELLO_REPLY OK (h->exp filled), else -1
 * with the outcome in *o. */
int h_hello_qd(struct hconn *h, uint16_t qd, struct outcome *o);
/* Connect and HELLO; reports a failure and returns -1 when that fails. */
int h_session(struct hconn *h, uint16_t qd);
/* Send one request message and wait for its reply. */
void h_roundtrip(struct hconn *h, const void *msg, size_t len, struct outcome *o);
/* Wait for n replies: how many came back OK before the first that did not
 * (*o is the last outcome waited for). */
unsigned h_replies_ok(struct hconn *h, unsigned n, struct outcome *o);
/* A NOP must come back OK: the connection still serves. */
int h_nop_ok(struct hconn *h, char *why, size_t wsize);

/* ---- verdict helpers (each closes h) ---- */

int expect_closed(struct hconn *h, const char *did);
int expect_hello_refused(struct hconn *h, const char *did, uint16_t status, uint16_t alt,
			 int lenient);
int expect_error(struct hconn *h, const char *did, uint64_t tag, uint16_t err, int lenient);
int request_expect_error(const char *did, const void *msg, size_t len, uint64_t tag,
			 uint16_t err, int lenient);
int message_expect_closed(const char *did, const void *msg, size_t len, int hello);
/* The target still serves a fresh, well-behaved session. */
int health_check(void);

/* ---- scenarios ---- */

struct scenario {
	const char *name;
	int (*fn)(void);
};
extern const struct scenario handshake_scenarios[], request_scenarios[];
extern const size_t n_handshake_scenarios, n_request_scenarios;

/* ---- attacks (hostile-flood.c) ---- */

int flood(uint64_t off, uint64_t len, unsigned seconds);
int starve(unsigned seconds);
int churn(unsigned n);
int hold(unsigned count, unsigned seconds);

#endif
