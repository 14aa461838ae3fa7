/* Unit test for a reload's diff (target/config/config-target.c): every [target]
 * key that needs a restart, changed in the new file, is refused by name
 * ("reload: KEY = NEW needs a restart; keeping OLD") and keeps its running
 * value; the keys a reload may change come through; an unchanged file says
 * nothing; a new RBD export that the kept threads rules out is refused.  No RDMA needed.  Prints one line per check; exits 0 or 1. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../target/config/config.h"
#include "../../target/log.h"
#include "check.h"
#include "said.h"

static char dir[] = "/tmp/rdmablk-test-config-reload.XXXXXX";
static char conf[512];

/* A config of these [target] lines (with listen = 127.0.0.1 unless they
 * say listen). */
static struct config *
load(const char *target_lines)
{
	struct config *c;
	unsigned n = 0;
	FILE *f = fopen(conf, "w");

	if (f == NULL || fprintf(f, "[target]\n%s%s", strncmp(target_lines, "listen =", 8) == 0 ?
				 "" : "listen = 127.0.0.1\n", target_lines) < 0 ||
	    fclose(f) != 0) {
		perror(conf);
		exit(1);
	}
	c = config_load(conf, CONFIG_NO_OPEN, NULL, NULL, &n);
	if (c == NULL) {
		fprintf(stderr, "FAIL: %s did not parse:\n%s", conf, target_lines);
		exit(1);
	}
	return c;
}

static uint16_t
listen_port(const struct config *c)
{
	return ntohs(((const struct sockaddr_in *)&c->listen)->sin_port);
}

/* One restart-only key: changed from run's value to now's, it is refused by
 * name with both values, and its running value is back. */
static void
refused(const char *key, const char *run_line, const char *new_line, const char *msg)
{
	struct config *run = load(run_line), *nc = load(new_line);
	struct said s;
	unsigned n;

	memset(&s, 0, sizeof(s));
	n = config_keep_restart_only(run, nc, said_collect, &s);
	checkf(n == 1 && strstr(s.text, msg) != NULL, "%s: refused as \"%s\" (said: %s)", key,
	       msg, s.n ? s.text : "nothing");
	/* What was kept is the running value: a second diff finds nothing. */
	memset(&s, 0, sizeof(s));
	n = config_keep_restart_only(run, nc, said_collect, &s);
	checkf(n == 0 && s.n == 0, "%s: the running value is back in the new config", key);
	checkf(listen_port(nc) == listen_port(run), "%s: the listen address keeps port %u",
	       key, listen_port(run));
	config_free(run);
	config_free(nc);
}

int
main(void)
{
	struct config *run, *nc;
	struct said s;
	unsigned n;

	log_init(1, LOG_LEVEL_ERROR);
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(conf, sizeof(conf), "%s/rdmablk.conf", dir);

	refused("threads", "", "threads = 2\n", "reload: threads = 2 needs a restart; keeping 1");
	refused("port", "", "port = 10999\n", "reload: port = 10999 needs a restart; keeping 10810");
	refused("max-io", "", "max-io = 512K\n",
		"reload: max-io = 524288 needs a restart; keeping 1048576");
	refused("buffer-pool", "", "buffer-pool = 32M\n",
		"reload: buffer-pool = 33554432 needs a restart; keeping 67108864");
	refused("io-threads", "io-threads = 2\n", "io-threads = 3\n",
		"reload: io-threads = 3 needs a restart; keeping 2");
	refused("io-engine", "", "io-engine = threads\n",
		"reload: io-engine = threads needs a restart; keeping io_uring");
	refused("listen", "", "listen = 127.0.0.2\n",
		"reload: listen = 127.0.0.2 needs a restart; keeping 127.0.0.1");
	refused("admin-socket", "", "admin-socket = /run/other.sock\n",
		"reload: admin-socket = /run/other.sock needs a restart; keeping "
		"/run/rdmablk/target.sock");
	refused("metrics-listen", "", "metrics-listen = 127.0.0.1:9555\n",
		"reload: metrics-listen = 127.0.0.1:9555 needs a restart; keeping none");

	/* threads = 1 and a new RBD export in the file, on a target running two
	 * loops: the file alone is valid, but threads stays 2 until a restart,
	 * and an RBD export cannot run there, so the reload is refused. */
	run = load("threads = 2\n");
	nc = load("[export r]\npath = rbd:rbd/img0\n");
	memset(&s, 0, sizeof(s));
	checkf(config_reload_conflicts(nc, said_collect, &s) == 0,
	       "threads = 1 with an RBD export: no conflict before the diff");
	config_keep_restart_only(run, nc, NULL, NULL);
	memset(&s, 0, sizeof(s));
	n = config_reload_conflicts(nc, said_collect, &s);
	checkf(n == 1 && strstr(s.text, "reload: [export r]: an RBD export needs threads = 1, "
				 "and the target runs with threads = 2") != NULL,
	       "the kept threads = 2 rules the RBD export out, by name (said: %s)",
	       s.n ? s.text : "nothing");
	config_free(nc);
	config_free(run);

	/* The live keys come through, and an unchanged file says nothing. */
	run = load("");
	nc = load("queue-depth = 16\ninline-max = 2048\nkeepalive = 3\nstats = no\n"
		  "log-level = debug\nhandshake-timeout = 7\nmax-connections-total = 9\n"
		  "max-handshakes = 8\nmax-connections-per-address = 7\n");
	memset(&s, 0, sizeof(s));
	n = config_keep_restart_only(run, nc, said_collect, &s);
	checkf(n == 0 && s.n == 0, "the keys a reload may change are not refused (said: %s)",
	       s.n ? s.text : "nothing");
	checkf(nc->queue_depth == 16 && nc->inline_max == 2048 && nc->keepalive == 3 &&
	       nc->stats == 0 && nc->log_level == LOG_LEVEL_DEBUG && nc->handshake_timeout == 7 &&
	       nc->max_conns_total == 9 && nc->max_handshakes == 8 && nc->max_conns_per_addr == 7,
	       "their new values stay in the new config");
	config_free(nc);
	nc = load("");
	memset(&s, 0, sizeof(s));
	n = config_keep_restart_only(run, nc, said_collect, &s);
	checkf(n == 0 && s.n == 0, "an unchanged file: nothing refused");
	config_free(nc);
	config_free(run);

	unlink(conf);
	rmdir(dir);
	printf("%d checks, %d failed\n", checks, failures);
	return failures != 0;
}
