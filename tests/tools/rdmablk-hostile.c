/* rdmablk-hostile: a misbehaving initiator, for tests/test-hostile.sh and
 * tests/test-fault-initiator-kill.sh.
 *
 *   rdmablk-hostile -H HOST [-p PORT] -e EXPORT [-t TIMEOUT_S] [-S SEED] [-v]
 *                   SCENARIO... | all
 *   rdmablk-hostile -H HOST -e EXPORT [-q QD] flood OFF LEN SECONDS
 *   rdmablk-hostile -H HOST -e EXPORT [-q QD] starve SECONDS
 *   rdmablk-hostile -H HOST -e EXPORT [-q QD] [-t TIMEOUT_S] discard
 *   rdmablk-hostile -H HOST -e EXPORT [-t TIMEOUT_S] churn N
 *   rdmablk-hostile -H HOST [-B SRC] -e EXPORT [-t TIMEOUT_S] hold N SECONDS
 *   rdmablk-hostile list
 *
 * Written on librdmacm and libibverbs directly, not on the initiator
 * library, so that it can send what a correct initiator never would.  Each
 * scenario runs on its own connection(s) and checks that the target reacted
 * in one of the ways docs/protocol.md allows: an error reply with the right
 * code (and the connection still serving), a HELLO_REPLY refusal followed by
 * a disconnect, the connection being closed, or the connect being rejected
 * with the right reason.  Then it checks that the target still serves a
 * fresh, well-behaved connection.  It prints one line per scenario,
 * "ok: SCENARIO: what happened" or "FAIL: SCENARIO: why", and exits 0 when
 * every scenario passed, 1 otherwise, 2 on a usage error.
 *
 * flood is not a test: it keeps QD requests (64 KiB READs and WRITEs in
 * [OFF, OFF+LEN)) in flight for SECONDS, printing "flood: QD requests in
 * flight" once the first reply came back, so that a test can kill -9 it
 * while requests are certainly outstanding.
 *
 * starve is not a test either but the pool-starvation attack (docs/security.md):
 * it connects asking for infinite RNR retry (rnr_retry_count 7), posts one
 * receive (for HELLO_REPLY) and none after it, then sends QD READs of
 * max_io (at most 1 MiB), whose replies the target can never deliver.  It
 * waits until the target closes the connection, then does it again, for
 * SECONDS, and prints one line: "starve: N connections, the target closed
 * C of them, the longest held S s".
 *
 * discard checks the TRIM/WRITE_ZEROES cap (RB_DISCARD_MAX): one byte block
 * more gets EINVAL, and QD - 1 WRITE_ZEROES of the maximum at once plus a TRIM
 * of it all succeed; the export must be larger than RB_DISCARD_MAX.
 *
 * churn opens N short connections, 8 at a time, each ending badly (see
 * churn()), and prints "churn: N connections tried, E established, R
 * rejected, F failed": the 1,000-connection flood of make check-long.
 *
 * hold is the handshake flood (docs/security.md): it opens N connections, one
 * after the other, and leaves each un-authenticated for SECONDS: the even
 * ones send nothing after the connect (the target waits for HELLO), the odd
 * ones send HELLO and never answer the CHALLENGE (the export should have a
 * secret-file; without one the target completes the HELLO and that
 * connection is no handshake any more).  Each asks for queue depth 128 in
 * the connect, so that a target that pins its full receive ring before any
 * proof shows it.  Refused connects are closed at once; the rest stay open
 * until SECONDS have passed.  Prints "hold: N connections tried, E
 * established, R refused (busy B), F failed; the target closed C" once
 * every connect was tried ("hold: ... holding" first, then at the end the
 * same line with "done").  -B binds the connections to source address SRC.
 *
 * Every wait is bounded by -t (default 10 s): nothing here waits forever.
 * The export must be at least 16 MiB; scenarios write to its first 16 MiB.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"
#include "protocol.h"
#include "util.h"

/* ---- discard: the TRIM/WRITE_ZEROES cap and the per-connection slots ---- */

/* A TRIM one byte block past RB_DISCARD_MAX must get EINVAL; then QD - 1
 * WRITE_ZEROES of RB_DISCARD_MAX at once on one connection, and a TRIM of
 * RB_DISCARD_MAX, must all succeed (the target runs them in pieces, a few
 * at a time).  The export must hold RB_DISCARD_MAX + 512 bytes. */
static int
discard(void)
{
	char msg[sizeof(struct rb_request)];
	struct outcome o;
	struct hconn h;
	unsigned i, qd, nok;
	int rc;

	raw.cur = "discard-too-long";
	if (h_session(&h, (uint16_t)opt.qd) < 0)
		return 1;
	if (h.exp.size < (uint64_t)RB_DISCARD_MAX + 512) {
		h_close(&h);
		return verdict(0, "the export holds %" PRIu64 " bytes, fewer than %u + 512",
			       h.exp.size, RB_DISCARD_MAX);
	}
	req_msg(msg, RB_OP_TRIM, 0, 1, 0, RB_DISCARD_MAX + 512, 0, 0);
	if (h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post the TRIM");
	}
	h_outcome(&h, wait_deadline(), &o);
	rc = verdict(o.kind == OUT_REPLY && o.tag == 1 && o.error == RB_EINVAL,
		     "a TRIM of %u + 512 bytes: %s (want EINVAL)", RB_DISCARD_MAX, o.what);

	raw.cur = "discard-max";
	/* Every credit: QD - 1 WRITE_ZEROES and a TRIM. */
	qd = h.exp.queue_depth;
	for (i = 0; i + 1 < qd; i++) {
		req_msg(msg, RB_OP_WRITE_ZEROES, 0, 100 + i, 0, RB_DISCARD_MAX, 0, 0);
		if (h_send(&h, msg, sizeof(msg)) < 0)
			break;
	}
	req_msg(msg, RB_OP_TRIM, 0, 99, 0, RB_DISCARD_MAX, 0, 0);
	if (i + 1 < qd || h_send(&h, msg, sizeof(msg)) < 0) {
		h_close(&h);
		return verdict(0, "cannot post %u WRITE_ZEROES and a TRIM", qd - 1);
	}
	nok = h_replies_ok(&h, qd, &o);
	h_close(&h);
	rc |= verdict(nok == qd, "%u WRITE_ZEROES of %u bytes at once and a TRIM of as "
		      "many: %u replies OK%s%s", qd - 1, RB_DISCARD_MAX, nok,
		      nok == qd ? "" : ", then ", nok == qd ? "" : o.what);
	return rc;
}

/* ---- the scenario list ---- */

static const struct scenario *const tables[] = { handshake_scenarios, request_scenarios };

static size_t
table_len(size_t t)
{
	return t == 0 ? n_handshake_scenarios : n_request_scenarios;
}

static int
run_scenario(const struct scenario *s)
{
	unsigned before = nfailed;

	raw.cur = s->name;
	debug("start");
	if (s->fn() == 0 && nfailed == before)
		health_check();
	raw.cur = "?";
	return nfailed == before ? 0 : 1;
}

/* ---- main ---- */

static void
usage(void)
{
	fprintf(stderr,
		"usage: rdmablk-hostile -H HOST [-p PORT] -e EXPORT [-t TIMEOUT_S] [-S SEED] [-v]\n"
		"                       SCENARIO... | all\n"
		"       rdmablk-hostile -H HOST -e EXPORT [-q QD] flood OFF LEN SECONDS\n"
		"       rdmablk-hostile -H HOST -e EXPORT [-q QD] starve SECONDS\n"
		"       rdmablk-hostile -H HOST -e EXPORT [-q QD] [-t TIMEOUT_S] discard\n"
		"       rdmablk-hostile -H HOST -e EXPORT [-t TIMEOUT_S] churn N\n"
		"       rdmablk-hostile -H HOST [-B SRC] -e EXPORT [-t TIMEOUT_S] hold N SECONDS\n"
		"       rdmablk-hostile list\n");
	exit(2);
}

static uint64_t
size_arg(const char *s)
{
	uint64_t v;

	if (rb_parse_size(s, &v) < 0) {
		fprintf(stderr, "rdmablk-hostile: '%s' is not a size\n", s);
		exit(2);
	}
	return v;
}

/* A setup failure inside raw-client is the running scenario's failure. */
static void
fail_verdict(const char *msg)
{
	verdict(0, "%s", msg);
}

int
main(int argc, char **argv)
{
	socklen_t alen;
	uint64_t v;
	size_t i, t;
	unsigned nrun = 0;
	int c, j;

	raw.prog = "rdmablk-hostile";
	raw.fail = fail_verdict;
	while ((c = getopt(argc, argv, "+H:B:p:e:t:q:S:vh")) != -1) {
		switch (c) {
		case 'H': opt.host = optarg; break;
		case 'B': opt.src = optarg; break;
		case 'e': opt.export_name = optarg; break;
		case 'p':
			if (rb_parse_uint(optarg, 1, 65535, &v) < 0)
				usage();
			opt.port = (uint16_t)v;
			break;
		case 't':
			if (rb_parse_uint(optarg, 1, 3600, &v) < 0)
				usage();
			raw.timeout_s = (unsigned)v;
			break;
		case 'q':
			if (rb_parse_uint(optarg, 1, 64, &v) < 0)
				usage();
			opt.qd = (unsigned)v;
			break;
		case 'S':
			if (rb_parse_uint(optarg, 1, UINT64_MAX, &v) < 0)
				usage();
			opt.seed = v;
			break;
		case 'v': raw.verbose = 1; break;
		default: usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	if (strcmp(argv[0], "list") == 0) {
		for (t = 0; t < 2; t++)
			for (i = 0; i < table_len(t); i++)
				printf("%s\n", tables[t][i].name);
		return 0;
	}
	if (opt.host == NULL || opt.export_name == NULL)
		usage();
	if (rb_sockaddr_parse(opt.host, opt.port, &raw.dst, &alen) < 0) {
		fprintf(stderr, "rdmablk-hostile: '%s' is not a numeric address\n", opt.host);
		return 2;
	}
	if (opt.src != NULL && rb_sockaddr_parse(opt.src, 0, &raw.src, &alen) < 0) {
		fprintf(stderr, "rdmablk-hostile: -B '%s' is not a numeric address\n", opt.src);
		return 2;
	}
	raw.has_src = opt.src != NULL;
	raw.connect_qd = (uint16_t)(opt.qd > H_CM_QD ? opt.qd : H_CM_QD);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(argv[0], "flood") == 0) {
		if (argc != 4 || rb_parse_uint(argv[3], 1, 86400, &v) < 0)
			usage();
		return flood(size_arg(argv[1]), size_arg(argv[2]), (unsigned)v) ? 1 : 0;
	}
	if (strcmp(argv[0], "churn") == 0) {
		if (argc != 2 || rb_parse_uint(argv[1], 1, 1000000, &v) < 0)
			usage();
		return churn((unsigned)v) ? 1 : 0;
	}
	if (strcmp(argv[0], "hold") == 0) {
		uint64_t secs;

		if (argc != 3 || rb_parse_uint(argv[1], 1, 100000, &v) < 0 ||
		    rb_parse_uint(argv[2], 1, 86400, &secs) < 0)
			usage();
		return hold((unsigned)v, (unsigned)secs) ? 1 : 0;
	}
	if (strcmp(argv[0], "discard") == 0) {
		if (argc != 1)
			usage();
		return discard() ? 1 : 0;
	}
	if (strcmp(argv[0], "starve") == 0) {
		if (argc != 2 || rb_parse_uint(argv[1], 1, 86400, &v) < 0)
			usage();
		return starve((unsigned)v);
	}
	for (j = 0; j < argc; j++) {
		int found = 0;

		for (t = 0; t < 2; t++)
			for (i = 0; i < table_len(t); i++) {
				if (strcmp(argv[j], "all") != 0 &&
				    strcmp(argv[j], tables[t][i].name) != 0)
					continue;
				found = 1;
				run_scenario(&tables[t][i]);
				nrun++;
			}
		if (!found) {
			fprintf(stderr, "rdmablk-hostile: unknown scenario '%s' (see 'list')\n",
				argv[j]);
			return 2;
		}
	}
	printf("%u scenario%s, %u failed\n", nrun, nrun == 1 ? "" : "s", nfailed);
	return nfailed == 0 ? 0 : 1;
}
