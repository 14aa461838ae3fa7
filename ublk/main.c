/* rdmablk-ublk: serve an rdmablk export as /dev/ublkbN.
 *
 *   rdmablk-ublk add [--foreground] hostname=H[,H2...] export=E [port=P] [queues=N]
 *                    [connections=N]
 *                    [queue-depth=N] [timeout=S] [secret-file=F] [...]
 *   rdmablk-ublk del /dev/ublkbN
 *   rdmablk-ublk list
 *
 * add prints the device once it is live and leaves a server process behind
 * (unless --foreground); that process removes the device on SIGTERM or
 * SIGINT, and exits when `del` removes it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "ublk.h"
#include "util.h"

static int use_syslog;

static void
ub_vlog(int prio, const char *fmt, va_list ap)
{
	if (use_syslog) {
		vsyslog(prio, fmt, ap);
	} else {
		fputs("rdmablk-ublk: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

void
ub_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ub_vlog(LOG_ERR, fmt, ap);
	va_end(ap);
}

void
ub_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ub_vlog(LOG_INFO, fmt, ap);
	va_end(ap);
}

static void
ub_logp(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
ub_logp(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ub_vlog(prio, fmt, ap);
	va_end(ap);
}

/* A daemon's log: errors and warnings, and routine events (reconnected,
 * failed over) at LOG_INFO; the library's debug messages are dropped. */
static void
lib_log(enum rb_log_level level, const char *msg)
{
	switch (level) {
	case RB_LOG_ERROR:
		ub_logp(LOG_ERR, "%s", msg);
		break;
	case RB_LOG_WARN:
		ub_logp(LOG_WARNING, "warning: %s", msg);
		break;
	case RB_LOG_INFO:
		ub_logp(LOG_INFO, "%s", msg);
		break;
	default:
		break;
	}
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: rdmablk-ublk add [--foreground] hostname=ADDR export=NAME [key=value ...]\n"
		"       rdmablk-ublk del /dev/ublkbN\n"
		"       rdmablk-ublk list\n"
		"keys: hostname export port queue-depth timeout retry keepalive busy-poll\n"
		"      secret-file mr source-address (as the nbdkit plugin; busy-poll\n"
		"      also takes adaptive, the default here: spin about four round trips\n"
		"      while one request is out, then sleep),\n"
		"      queues=N (1..%u, default %u; at most one per CPU), connections=N per\n"
		"      queue (1..%u, default %u), step-times=yes|no (log where each\n"
		"      request's time went in the server, by step, at del; default no)\n"
		"hostname=A,B:PORT,[IPV6]:PORT: targets of one shared export, failover\n"
		"      in list order\n",
		UB_MAX_QUEUES, UB_DEFAULT_QUEUES, UB_MAX_CONNS, UB_DEFAULT_CONNS);
}

/* rdmablk-ublk's own keys first, then the library's. */
static int
parse_params(struct ub_dev *d, int argc, char **argv)
{
	char err[512], *eq, key[64];
	uint64_t v;
	int i, r;

	rb_opts_init(&d->opts);
	d->opts.busy_poll = RB_BUSY_POLL_ADAPTIVE;     /* rdmablk-ublk's default */
	d->nr_queues = UB_DEFAULT_QUEUES;
	d->nr_conns = UB_DEFAULT_CONNS;
	for (i = 0; i < argc; i++) {
		eq = strchr(argv[i], '=');
		if (eq == NULL || eq == argv[i] || (size_t)(eq - argv[i]) >= sizeof(key)) {
			ub_log("'%s' is not key=value", argv[i]);
			return -1;
		}
		memcpy(key, argv[i], (size_t)(eq - argv[i]));
		key[eq - argv[i]] = '\0';
		if (strcmp(key, "queues") == 0) {
			if (rb_parse_uint(eq + 1, 1, UB_MAX_QUEUES, &v) < 0) {
				ub_log("invalid queues '%s': expected an integer in 1..%u",
				       eq + 1, UB_MAX_QUEUES);
				return -1;
			}
			d->nr_queues = (unsigned)v;
			d->queues_set = 1;
			continue;
		}
		if (strcmp(key, "step-times") == 0) {
			if (rb_parse_bool(eq + 1, &d->steps_on) < 0) {
				ub_log("invalid step-times '%s': expected a boolean (yes/no, "
				       "true/false, on/off, 1/0)", eq + 1);
				return -1;
			}
			continue;
		}
		if (strcmp(key, "connections") == 0) {
			if (rb_parse_uint(eq + 1, 1, UB_MAX_CONNS, &v) < 0) {
				ub_log("invalid connections '%s': expected an integer in 1..%u "
				       "(RDMA connections per queue)", eq + 1, UB_MAX_CONNS);
				return -1;
			}
			d->nr_conns = (unsigned)v;
			continue;
		}
		r = rb_opts_set(&d->opts, key, eq + 1, err, sizeof(err));
		if (r < 0) {
			ub_log("%s", err);
			return -1;
		}
	}
	if (d->opts.hostname_ == NULL) {
		ub_log("the hostname parameter is required: rdmablk-ublk add "
		       "hostname=ADDRESS export=NAME");
		return -1;
	}
	if (d->opts.export_name == NULL) {
		ub_log("the export parameter is required: rdmablk-ublk add "
		       "hostname=ADDRESS export=NAME");
		return -1;
	}
	if (rb_opts_resolve(&d->opts, err, sizeof(err)) < 0) {
		ub_log("%s", err);
		return -1;
	}
	/* The ublk depth is queue-depth; the connection gets one slot more
	 * for its keepalive probe. */
	d->depth = d->opts.queue_depth;
	if (d->opts.queue_depth < 1024)
		d->opts.queue_depth++;
	return 0;
}

/* The server process: everything is created here, after the fork, so no
 * verbs or io_uring resource crosses a fork.  ready_fd gets the device
 * name (or nothing, on failure) and is closed. */
static int
serve(struct ub_dev *d, int ready_fd)
{
	sigset_t set;
	char name[64];
	int id, sig, own_stop = 0;

	/* Queue threads inherit this: signals come to sigwaitinfo only. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, UB_SIG_QUEUE_DONE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	d->main_tid = pthread_self();
	signal(SIGPIPE, SIG_IGN);
	if (ub_dev_add(d, &id) < 0) {
		if (ready_fd >= 0)
			close(ready_fd);
		return 1;
	}
	snprintf(name, sizeof(name), "/dev/ublkb%d\n", id);
	if (ready_fd >= 0) {
		if (write(ready_fd, name, strlen(name)) < 0)
			ub_log("reporting the device: %s", strerror(errno));
		close(ready_fd);
	} else {
		fputs(name, stdout);
		fflush(stdout);
	}
	/* Until a stop signal (we stop the device) or every queue thread
	 * ended (someone else stopped it: rdmablk-ublk del), each of which
	 * says so with UB_SIG_QUEUE_DONE: asleep until then, not polling. */
	while (__atomic_load_n(&d->queues_done, __ATOMIC_ACQUIRE) < d->nr_queues) {
		sig = sigwaitinfo(&set, NULL);
		if (sig == SIGTERM || sig == SIGINT) {
			own_stop = 1;
			break;
		}
	}
	ub_dev_remove(d, own_stop);
	return 0;
}

static int
cmd_add(int argc, char **argv)
{
	struct ub_dev d;
	int fg = 0, pfd[2], status, rc;
	char buf[64];
	ssize_t n;
	pid_t pid;

	memset(&d, 0, sizeof(d));
	if (argc > 0 && (strcmp(argv[0], "--foreground") == 0 || strcmp(argv[0], "-f") == 0)) {
		fg = 1;
		argc--;
		argv++;
	}
	if (parse_params(&d, argc, argv) < 0) {
		rc = 2;
		goto free_opts;
	}
	rb_set_log(lib_log);
	if (fg) {
		rc = serve(&d, -1);
		goto free_opts;
	}
	rc = 1;
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		ub_log("pipe: %s", strerror(errno));
		goto free_opts;
	}
	pid = fork();
	if (pid < 0) {
		ub_log("fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		goto free_opts;
	}
	if (pid == 0) {
		/* The server: its own session, out of the caller's way once the
		 * device is live.  Errors before that still go to stderr. */
		close(pfd[0]);
		setsid();
		if (chdir("/") < 0)
			ub_log("chdir /: %s", strerror(errno));
		rc = open("/dev/null", O_RDWR);
		if (rc >= 0) {
			dup2(rc, 0);
			dup2(rc, 1);
			if (rc > 2)
				close(rc);
		}
		rc = serve(&d, pfd[1]);
		rb_opts_free(&d.opts);
		_exit(rc);
	}
	close(pfd[1]);
	n = read(pfd[0], buf, sizeof(buf) - 1);
	close(pfd[0]);
	if (n <= 0) {
		waitpid(pid, &status, 0);
		goto free_opts;
	}
	buf[n] = '\0';
	fputs(buf, stdout);
	rc = 0;
free_opts:
	rb_opts_free(&d.opts);
	return rc;
}

static int
cmd_del(int argc, char **argv)
{
	uint64_t id;
	const char *s;

	if (argc != 1) {
		usage(stderr);
		return 2;
	}
	s = argv[0];
	if (strncmp(s, "/dev/ublkb", 10) == 0)
		s += 10;
	if (rb_parse_uint(s, 0, 1u << 20, &id) < 0) {
		ub_log("'%s' is not a ublk block device (/dev/ublkbN)", argv[0]);
		return 2;
	}
	return ub_del((int)id) < 0 ? 1 : 0;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "add") == 0)
		return cmd_add(argc - 2, argv + 2);
	if (strcmp(argv[1], "del") == 0)
		return cmd_del(argc - 2, argv + 2);
	if (strcmp(argv[1], "list") == 0)
		return ub_list() < 0 ? 1 : 0;
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	ub_log("unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
