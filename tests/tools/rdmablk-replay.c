/* rdmablk-replay: a hostile initiator that replays a recorded AUTH.
 *
 *   rdmablk-replay -H HOST [-p PORT] -e EXPORT -S SECRET_FILE
 *
 * 1. Makes one genuine, authenticated connection (as the real library
 *    does) and records its HELLO nonce and its AUTH mac, i.e. what an
 *    eavesdropper on the wire would see.
 * 2. Connects again *without the secret*, sends HELLO with the same nonce
 *    and, after the target's CHALLENGE (whose proof it cannot check),
 *    the recorded AUTH mac.  The target chose a fresh nonce, so it must
 *    refuse with EACCES.
 *
 * Exit 0 when the replay was refused with EACCES (and the genuine session
 * worked), 1 otherwise.  Built from the library's internals (internal.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "util.h"

static void
log_fn(enum rb_log_level level, const char *msg)
{
	(void)level;
	fprintf(stderr, "rdmablk-replay: %s\n", msg);
}

static void
usage(void)
{
	fprintf(stderr, "usage: rdmablk-replay -H HOST [-p PORT] -e EXPORT -S SECRET_FILE\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct rb_conn_cfg cfg;
	struct rb_stats stats;
	struct rb_secret secret = { NULL, 0 };
	struct rb_conn *conn = NULL;
	const char *host = NULL, *name = NULL, *secret_file = NULL;
	uint8_t nonce[RB_NONCE_LEN], mac[RB_MAC_LEN];
	char errbuf[RB_ERRBUF] = "", msg[512];
	uint64_t v, port = RB_DEFAULT_PORT;
	int opt, r;

	rb_set_log(log_fn);
	while ((opt = getopt(argc, argv, "H:p:e:S:")) != -1) {
		switch (opt) {
		case 'H': host = optarg; break;
		case 'e': name = optarg; break;
		case 'S': secret_file = optarg; break;
		case 'p':
			if (rb_parse_uint(optarg, 1, 65535, &v) < 0)
				usage();
			port = v;
			break;
		default: usage();
		}
	}
	if (host == NULL || name == NULL || secret_file == NULL)
		usage();
	if (rb_secret_load(secret_file, &secret, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "rdmablk-replay: %s\n", msg);
		return 1;
	}
	memset(&cfg, 0, sizeof(cfg));
	memset(&stats, 0, sizeof(stats));
	snprintf(cfg.host, sizeof(cfg.host), "%s", host);
	cfg.port = (uint16_t)port;
	snprintf(cfg.export_name, sizeof(cfg.export_name), "%s", name);
	cfg.queue_depth = 4;
	cfg.max_io = 65536;
	cfg.stats = &stats;
	cfg.secret = &secret;
	cfg.test_record_nonce = nonce;
	cfg.test_record_mac = mac;

	r = rb_conn_create(&cfg, 0, rb_now_ns() + 30000000000ull, &conn, errbuf);
	rb_secret_wipe(&secret);
	if (r < 0) {
		fprintf(stderr, "rdmablk-replay: genuine session failed: %s\n", errbuf);
		return 1;
	}
	rb_conn_unref(conn);
	conn = NULL;
	printf("genuine session authenticated; AUTH recorded\n");

	cfg.secret = NULL;
	cfg.test_record_nonce = NULL;
	cfg.test_record_mac = NULL;
	cfg.test_nonce = nonce;
	cfg.test_replay_mac = mac;
	errbuf[0] = '\0';
	r = rb_conn_create(&cfg, 0, rb_now_ns() + 30000000000ull, &conn, errbuf);
	if (r == 0) {
		printf("REPLAY ACCEPTED: the target served a replayed AUTH\n");
		rb_conn_unref(conn);
		return 1;
	}
	printf("replay refused: %s (%s)\n", errbuf, strerrorname_np(-r));
	return r == -EACCES ? 0 : 1;
}
