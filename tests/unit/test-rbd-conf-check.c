/* Unit test for target/config/rbd-conf-check.c: a ceph.conf that turns
 * rbd_blocklist_on_break_lock off for clients is found, in any of Ceph's
 * spellings, and only in a section clients read; config_warn names the
 * export, the file and the line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../target/config/config.h"

#include "check.h"

static char path[] = "/tmp/rdmablk-test-rbd-conf-XXXXXX";

/* 1 when text, as a ceph.conf, turns the blocklist off (line: where). */
static int
off(const char *text, int *line)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
	*line = 0;
	return ceph_conf_no_blocklist(path, line);
}

static char warned[1024];

static void
collect(void *arg, const char *msg)
{
	(void)arg;
	snprintf(warned, sizeof(warned), "%s", msg);
}

int
main(void)
{
	struct cfg_export e;
	struct config c;
	int fd = mkstemp(path), line;

	CHECK(fd >= 0);
	close(fd);
	CHECK(!off("[global]\nfsid = x\n", &line));
	CHECK(off("[global]\nrbd blocklist on break lock = false\n", &line) && line == 2);
	CHECK(off("[client]\n  rbd_blocklist_on_break_lock=0 # no\n", &line) && line == 2);
	CHECK(off("[client.admin]\nRBD-Blocklist-On-Break-Lock = no\n", &line));
	CHECK(!off("[global]\nrbd blocklist on break lock = true\n", &line));
	CHECK(!off("[osd]\nrbd blocklist on break lock = false\n", &line));
	CHECK(!off("[global]\n# rbd blocklist on break lock = false\n", &line));
	/* the last setting wins */
	CHECK(!off("[global]\nrbd blocklist on break lock = false\n"
		   "[client]\nrbd blocklist on break lock = true\n", &line));
	CHECK(!ceph_conf_no_blocklist("/nonexistent/ceph.conf", &line));

	/* config_warn names the export, the file and the line. */
	off("[global]\nrbd_blocklist_on_break_lock = false\n", &line);
	memset(&c, 0, sizeof(c));
	memset(&e, 0, sizeof(e));
	c.file = "t.conf";
	STAILQ_INIT(&c.exports);
	STAILQ_INSERT_TAIL(&c.exports, &e, link);
	snprintf(e.name, sizeof(e.name), "vm0");
	e.line = 7;
	e.is_rbd = 1;
	e.ceph_conf = path;
	e.secret_file = "key";      /* not the exposure warning */
	CHECK(config_warn(&c, collect, NULL) == 1);
	CHECK(strstr(warned, "t.conf:7: warning: export vm0:") != NULL);
	CHECK(strstr(warned, ":2 sets rbd_blocklist_on_break_lock = false") != NULL);
	e.read_only = 1;            /* no lock to break */
	CHECK(config_warn(&c, collect, NULL) == 0);
	unlink(path);
	printf("test-rbd-conf-check: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
