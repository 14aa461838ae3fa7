/* rdmablk-ceph: one command to a Ceph monitor, for the RBD tests.
 *
 *   rdmablk-ceph -c CEPH_CONF [-t SECONDS] JSON
 *
 * Sends JSON (a monitor command as the `ceph` CLI would build it, e.g.
 * {"prefix": "osd pool create", "pool": "rbd", "pg_num": 8}) through
 * librados, prints the monitor's answer on stdout and its status line on
 * stderr, and exits 0, or 1 with "rdmablk-ceph: ..." naming what failed
 * (connecting, or the command with the monitor's errno and status).
 * -t bounds each step (connecting, the maps, the command: default 60 s),
 * and an alarm the whole run (twice that, plus 10 s): librados has no
 * timer of its own on every wait, and the tests poll with this.
 *
 * Why a program: under TCG one run of the `ceph` CLI (Python) costs about
 * 5 s of CPU, and every RBD test creates its pool with one and may poll the
 * blocklist with more; this costs what a C program start does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rados/librados.h>

#include "util.h"

static void
usage(void)
{
	fprintf(stderr, "usage: rdmablk-ceph -c CEPH_CONF [-t SECONDS] JSON\n");
	exit(2);
}

/* Failing step WHAT with librados' return r (a negative errno). */
static int
failed(const char *what, int r)
{
	fprintf(stderr, "rdmablk-ceph: %s: %s\n", what, strerror(-r));
	return 1;
}

int
main(int argc, char **argv)
{
	const char *conf = NULL, *cmd[1];
	char *outbuf = NULL, *outs = NULL, secs[24];
	size_t outbuf_len = 0, outs_len = 0;
	uint64_t timeout_s = 60;
	rados_t cluster;
	int opt, r;

	while ((opt = getopt(argc, argv, "c:t:")) != -1) {
		switch (opt) {
		case 'c': conf = optarg; break;
		case 't':
			if (rb_parse_uint(optarg, 1, 3600, &timeout_s) < 0) {
				fprintf(stderr, "rdmablk-ceph: -t %s: not 1 to 3600 seconds\n",
					optarg);
				return 2;
			}
			break;
		default: usage();
		}
	}
	if (conf == NULL || argc - optind != 1)
		usage();
	cmd[0] = argv[optind];
	alarm((unsigned)(2 * timeout_s + 10));   /* SIGALRM ends a hung run */

	r = rados_create(&cluster, NULL);
	if (r < 0)
		return failed("rados_create", r);
	snprintf(secs, sizeof(secs), "%llu", (unsigned long long)timeout_s);
	if ((r = rados_conf_read_file(cluster, conf)) < 0) {
		failed(conf, r);
		goto out_shutdown;
	}
	if ((r = rados_conf_set(cluster, "client_mount_timeout", secs)) < 0 ||
	    (r = rados_conf_set(cluster, "rados_mon_op_timeout", secs)) < 0) {
		failed("setting the timeouts", r);
		goto out_shutdown;
	}
	if ((r = rados_connect(cluster)) < 0) {
		failed("connecting to the cluster", r);
		goto out_shutdown;
	}
	/* rados_connect returns once authenticated, and the monitor's map may
	 * still be on its way: a command sent meanwhile carries the initial
	 * map's zero fsid, which the monitor refuses ("wrong fsid", EPERM).
	 * Seen with a monitor on port 6789, which speaks msgr v1 only (the
	 * tests' lane 0); v2's longer handshake hid it.  This round trip to
	 * the monitor comes after the map on the same connection. */
	if ((r = rados_wait_for_latest_osdmap(cluster)) < 0) {
		failed("waiting for the cluster's maps", r);
		goto out_shutdown;
	}
	r = rados_mon_command(cluster, cmd, 1, "", 0, &outbuf, &outbuf_len, &outs,
			      &outs_len);
	if (outbuf_len > 0)
		fwrite(outbuf, 1, outbuf_len, stdout);
	if (r < 0)      /* the monitor's status on the error's own line */
		fprintf(stderr, "rdmablk-ceph: %s: %s%s%.*s\n", cmd[0], strerror(-r),
			outs_len > 0 ? ": " : "", (int)outs_len, outs != NULL ? outs : "");
	else if (outs_len > 0)
		fprintf(stderr, "%.*s\n", (int)outs_len, outs);
	rados_buffer_free(outbuf);
	rados_buffer_free(outs);
out_shutdown:
	rados_shutdown(cluster);
	return r < 0 ? 1 : 0;
}
