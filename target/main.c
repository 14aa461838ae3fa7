/* rdmablk-target: serve block exports over RDMA.
 *
 *   rdmablk-target -c FILE [-f] [-n] [-p PIDFILE] [-v]
 *   rdmablk-target --stats [--human] [-c FILE]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/loop.h"
#include "core/target.h"
#include "daemon.h"
#include "log.h"
#include "ops/admin.h"
#include "ops/memlock.h"
#include "ops/metrics.h"
#include "ops/pidfile.h"

/* SQ entries of the event loop's io_uring (the CQ gets twice as many;
 * more in flight wait in the kernel's overflow list, IORING_FEAT_NODROP). */

enum { OPT_STATS = 256, OPT_HUMAN };

static const struct option long_opts[] = {
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "human", no_argument, NULL, OPT_HUMAN },
	{ "help",  no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int stats_human;

static void
usage(void)
{
	fprintf(stderr, "usage: rdmablk-target -c FILE [-f] [-n] [-p PIDFILE] [-v]\n"
		"       rdmablk-target --stats [--human] [-c FILE]\n"
		"  -c FILE     configuration file\n"
		"  -f          stay in the foreground and log to stderr\n"
		"  -n          check the configuration and exit\n"
		"  -p PIDFILE  write a pidfile once listening\n"
		"  -v          more logging\n"
		"  --stats     print a running daemon's statistics as JSON (its admin-socket,\n"
		"              from FILE, default " CONFIG_DEFAULT_FILE ")\n"
		"  --human     with --stats: as a table\n");
	exit(2);
}

/* daemon() changes to /: keep paths usable. */
static char *
absolute(const char *path)
{
	char cwd[PATH_MAX], *out;

	if (path[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
		return strdup(path);
	if (asprintf(&out, "%s/%s", cwd, path) < 0)
		return NULL;
	return out;
}

/* --stats: find the admin socket in the config, ask the daemon. */
static int
stats_main(const char *conf)
{
	const char *file = conf != NULL ? conf : CONFIG_DEFAULT_FILE;
	char path[sizeof(((struct config *)0)->admin_socket)];
	struct config *c;
	unsigned nerrors = 0;

	if (conf == NULL && access(file, F_OK) < 0 && errno == ENOENT)
		return admin_query(CONFIG_DEFAULT_ADMIN_SOCKET, stats_human);
	log_init(1, LOG_LEVEL_INFO);
	c = config_load(file, CONFIG_CHECK | CONFIG_NO_OPEN, NULL, NULL, &nerrors);
	if (c == NULL) {
		fprintf(stderr, "rdmablk-target: %u error%s in %s: cannot find its admin "
			"socket\n", nerrors, nerrors == 1 ? "" : "s", file);
		return 1;
	}
	snprintf(path, sizeof(path), "%s", c->admin_socket);
	config_free(c);
	if (path[0] == '\0') {
		fprintf(stderr, "rdmablk-target: %s has admin-socket = none: no statistics\n",
			file);
		return 1;
	}
	return admin_query(path, stats_human);
}

/* -n: what LimitMEMLOCK must allow (rdmablk.conf(5), MEMORY). */
static void
print_memlock(const struct config *c)
{
	struct memlock_need m;

	memlock_need(c, &m);
	printf("memlock: %llu bytes (%llu MiB) at most: buffer-pool %llu + "
	       "max-connections-total %u x %llu per connection + %llu\n",
	       (unsigned long long)m.total, (unsigned long long)((m.total + (1u << 20) - 1) >> 20),
	       (unsigned long long)m.pool, m.conns, (unsigned long long)m.per_conn,
	       (unsigned long long)m.slack);
}

int
main(int argc, char **argv)
{
	struct target t;
	const char *conf = NULL, *pidfile_arg = NULL;
	char *pidfile = NULL, *config_file;
	struct pidfile *pf = NULL;
	int foreground = 0, check = 0, verbose = 0, stats = 0, ch, rc = 1;
	unsigned nerrors = 0;
	sigset_t set;

	while ((ch = getopt_long(argc, argv, "c:fnp:vh", long_opts, NULL)) != -1) {
		switch (ch) {
		case 'c': conf = optarg; break;
		case 'f': foreground = 1; break;
		case 'n': check = 1; break;
		case 'p': pidfile_arg = optarg; break;
		case 'v': verbose = 1; break;
		case OPT_STATS: stats = 1; break;
		case OPT_HUMAN: stats_human = 1; break;
		default: usage();
		}
	}
	if (optind != argc || (stats_human && !stats))
		usage();
	if (stats) {
		if (foreground || check || pidfile_arg != NULL)
			usage();
		return stats_main(conf);
	}
	if (conf == NULL)
		usage();

	log_init(1, verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	if (check) {
		struct config *c = config_load(conf, CONFIG_CHECK, NULL, NULL, &nerrors);

		if (c == NULL) {
			fprintf(stderr, "%u error%s in %s\n", nerrors, nerrors == 1 ? "" : "s",
				conf);
			return 1;
		}
		config_warn(c, NULL, NULL);
		printf("configuration OK\n");
		print_memlock(c);
		config_free(c);
		return 0;
	}

	memset(&t, 0, sizeof(t));
	STAILQ_INIT(&t.devices);
	STAILQ_INIT(&t.exports);
	t.epfd = t.sigfd = -1;
	t.stats.start_ns = rb_now_ns();
	t.config_file = config_file = absolute(conf);
	if (pidfile_arg != NULL)
		pidfile = absolute(pidfile_arg);
	if (t.config_file == NULL || (pidfile_arg != NULL && pidfile == NULL))
		fatalx("out of memory");
	/* RBD exports start librados threads when the config is loaded: fork
	 * (daemon) before that, after a check that reports errors on the
	 * terminal, and block the signals before any thread exists, so that
	 * only the signalfd sees them. */
	if (!foreground) {
		struct config *c = config_load(t.config_file, CONFIG_CHECK, NULL, NULL, &nerrors);

		if (c == NULL)
			fatalx("%u error%s in %s", nerrors, nerrors == 1 ? "" : "s", conf);
		if (!verbose)
			log_set_level(c->log_level);
		config_free(c);
		if (daemon(0, 0) < 0)
			fatal("daemon");
		log_init(0, verbose ? LOG_LEVEL_DEBUG : log_get_level());
	}
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	t.cfg = config_load(t.config_file, 0, NULL, NULL, &nerrors);
	if (t.cfg == NULL)
		fatalx("%u error%s in %s", nerrors, nerrors == 1 ? "" : "s", conf);
	if (!verbose)
		log_set_level(t.cfg->log_level);
	memlock_check(t.cfg);
	config_warn(t.cfg, NULL, NULL);    /* to syslog when daemonized */
	signal(SIGPIPE, SIG_IGN);

	if (loops_create(&t, t.cfg->threads) < 0 || daemon_setup(&t) < 0)
		goto out;
	exports_apply(&t, t.cfg);
	if (listener_start(&t) < 0 || admin_start(&t) < 0 || metrics_start(&t) < 0)
		goto out;
	/* Tests wait for the pidfile: it means "listening". */
	if (pidfile != NULL && (pf = pidfile_create(pidfile)) == NULL)
		goto out;
	if (loops_start(&t) < 0)
		goto out;
	if (loop_run(t.loops[0]) == 0)
		rc = 0;
out:
	/* The other loops drain and leave by themselves once shutting down
	 * (each within the same bound); after an error they fail theirs. */
	loops_abort(&t);
	loops_join(&t);
	if (rc == 0)
		log_info("all connections closed; flushing exports");
	metrics_stop(&t);
	admin_stop(&t);
	listener_stop(&t);
	exports_destroy_all(&t);
	device_destroy_all(&t);
	if (t.sigfd >= 0)
		close(t.sigfd);
	loops_destroy(&t);
	pidfile_destroy(pf);
	log_info("exiting");
	config_free(t.cfg);
	free(pidfile);
	free(config_file);
	return rc;
}
