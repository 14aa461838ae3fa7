/* rdmablk-session: one connection, driven line by line from stdin, so that
 * a test can look at the target between requests (e.g. its per-connection
 * statistics) while the connection stays open.
 *
 *   rdmablk-session -H HOST [-p PORT] -e EXPORT [-q QD] [-t TIMEOUT_S] [-k KEEPALIVE_S]
 *
 * Prints "ready" once connected, then reads commands, one per line:
 *
 *   write OFF LEN SEED|@FILE | read OFF LEN SEED | flush | trim OFF LEN | zero OFF LEN
 *
 * and answers each with "ok" or "error MESSAGE" on stdout.  EOF on stdin
 * closes the connection and exits 0.  Each command is one library call:
 * a read or write no longer than the export's max_io is one request.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn-opts.h"
#include "pattern.h"
#include "payload.h"
#include "rdmablk.h"
#include "util.h"

static void
usage(void)
{
	fprintf(stderr, "usage: rdmablk-session -H HOST [-p PORT] -e EXPORT [-q QD] "
		"[-t TIMEOUT_S] [-k KEEPALIVE_S]\n"
		"  stdin: write OFF LEN SEED | read OFF LEN SEED | flush | trim OFF LEN | "
		"zero OFF LEN\n");
	exit(2);
}

static void
log_fn(enum rb_log_level level, const char *msg)
{
	if (level == RB_LOG_ERROR)
		fprintf(stderr, "rdmablk-session: %s\n", msg);
	else if (level != RB_LOG_DEBUG)
		fprintf(stderr, "rdmablk-session: %s: %s\n", rb_log_level_name(level), msg);
}

/* One command; returns 0 or a negative errno, with *what naming a
 * failure that is not an errno. */
static int
run(struct rb_client *c, char *line, const char **what)
{
	char op[16], arg[256] = "", *end;
	uint64_t off = 0, len = 0, seed = 0;
	const char *file = NULL;
	uint8_t *buf;
	int n, r;

	n = sscanf(line, "%15s %" SCNu64 " %" SCNu64 " %255s", op, &off, &len, arg);
	if (n == 4 && arg[0] == '@') {
		file = arg + 1;             /* write OFF LEN @FILE */
	} else if (n == 4) {
		errno = 0;
		seed = strtoull(arg, &end, 0);
		if (errno != 0 || *end != '\0') {
			*what = "bad seed";
			return -EINVAL;
		}
	}
	if (n < 1) {
		*what = "empty command";
		return -EINVAL;
	}
	if (strcmp(op, "flush") == 0)
		return rb_flush(c);
	if ((strcmp(op, "trim") == 0 || strcmp(op, "zero") == 0) && n == 3)
		return op[0] == 't' ? rb_trim(c, len, off, 0) : rb_zero(c, len, off, 0);
	if ((strcmp(op, "write") != 0 && strcmp(op, "read") != 0) || n != 4 ||
	    len > (64u << 20)) {
		*what = "bad command";
		return -EINVAL;
	}
	buf = malloc(len ? len : 1);
	if (buf == NULL)
		return -ENOMEM;
	if (op[0] == 'w') {
		r = payload_fill(buf, off, 0, len, seed, file) < 0 ? -errno :
			rb_write(c, buf, len, off, 0);
	} else if (file != NULL) {
		r = -EINVAL;
		*what = "read takes a seed";
	} else {
		r = rb_read(c, buf, len, off);
		if (r == 0 && pattern_check(buf, off, len, seed) >= 0) {
			*what = "data mismatch";
			r = -EIO;
		}
	}
	free(buf);
	return r;
}

int
main(int argc, char **argv)
{
	struct rb_opts o;
	struct rb_client *c;
	char line[256];
	int opt, r;

	rb_opts_init(&o);
	rb_set_log(log_fn);
	while ((opt = getopt(argc, argv, "H:p:e:q:t:k:h")) != -1) {
		/* Every option is a connection option; anything else is usage. */
		if (conn_opt(opt, optarg, &o) <= 0)
			usage();
	}
	if (optind != argc || o.host == NULL || o.export_name == NULL)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	r = rb_client_open(&o, &c);
	if (r < 0) {
		printf("error connect: %s\n", strerror(-r));
		return 1;
	}
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin) != NULL) {
		const char *what = NULL;

		r = run(c, line, &what);
		if (r == 0)
			printf("ok\n");
		else
			printf("error %s\n", what != NULL ? what : strerror(-r));
	}
	rb_client_close(c);
	return 0;
}
