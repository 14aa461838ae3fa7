/* Unit test for exports_apply (target/conn/export.c), the reload: a parsed
 * config replaces the running exports.  An export whose backing store is
 * the same is kept (same struct export, same fd, new settings); one that
 * is new is added; one that is gone is removed; one whose backing store
 * changed (another file, read-only) or that failed is replaced.  Against
 * temp files, with no connections: no RDMA needed.  Exits 0 or 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../target/config/config.h"
#include "../../target/io/flusher.h"
#include "../../target/io/ioq.h"
#include "../../target/log.h"
#include "../../target/core/loop.h"
#include "../../target/core/target.h"
#include "check.h"

static char dir[] = "/tmp/rdmablk-test-exports.XXXXXX";
static char conf[512];
static struct target t;

/* Write the config text (each @ is the temp dir) and apply it; returns
 * exports_apply's count. */
static int
apply(const char *text)
{
	struct config *c;
	unsigned nerr = 0;
	FILE *f = fopen(conf, "w");
	const char *p;
	int n, bad = f == NULL;

	for (p = text; !bad && *p != '\0'; p++)
		bad = (*p == '@' ? fputs(dir, f) : fputc(*p, f)) < 0;
	if (bad || fclose(f) != 0) {
		perror(conf);
		exit(1);
	}
	c = config_load(conf, 0, NULL, NULL, &nerr);
	CHECK(c != NULL && nerr == 0);
	if (c == NULL)
		exit(1);
	n = exports_apply(&t, c);
	config_free(c);
	return n;
}

static unsigned
nexports(void)
{
	struct export *e;
	unsigned n = 0;

	STAILQ_FOREACH(e, &t.exports, link)
		n++;
	return n;
}

#define TARGET "[target]\nlisten = 10.55.0.1\n"
#define EXPORT(name, file, extra) \
	"[export " name "]\npath = @/" file "\nsize = 1M\n" extra

static struct loop loop0;
static struct loop *loops[1] = { &loop0 };

int
main(void)
{
	struct export *a, *b, *e;
	int fd_a;

	log_init(1, LOG_LEVEL_ERROR);    /* the failed export logs a warning */
	if (mkdtemp(dir) == NULL) {
		perror(dir);
		return 1;
	}
	snprintf(conf, sizeof(conf), "%s/rdmablk.conf", dir);
	memset(&t, 0, sizeof(t));
	STAILQ_INIT(&t.devices);
	STAILQ_INIT(&t.exports);
	loop0.ioq = ioq_create(IOQ_THREADS, 8, 1);
	CHECK(loop0.ioq != NULL);
	if (loop0.ioq == NULL)
		return 1;
	t.loops = loops;
	t.nloops = 1;

	/* Startup: both added. */
	CHECK(apply(TARGET EXPORT("a", "a.img", "description = first\n")
		    EXPORT("b", "b.img", "")) == 2);
	a = export_find(&t, "a");
	b = export_find(&t, "b");
	CHECK(a != NULL && b != NULL && nexports() == 2);
	CHECK(a != NULL && strcmp(a->cfg->description, "first") == 0);
	fd_a = a != NULL ? a->cfg->fd : -1;

	/* a kept with its new description and its fd; b removed; c added. */
	CHECK(apply(TARGET EXPORT("a", "a.img", "description = second\n")
		    EXPORT("c", "c.img", "")) == 2);
	CHECK(export_find(&t, "a") == a);
	CHECK(strcmp(a->cfg->description, "second") == 0);
	CHECK(a->cfg->fd == fd_a);
	CHECK(export_find(&t, "b") == NULL);
	CHECK(export_find(&t, "c") != NULL);
	CHECK(nexports() == 2);     /* b had no connection: freed at once */

	/* a on another file: replaced by a new export. */
	CHECK(apply(TARGET EXPORT("a", "a2.img", "") EXPORT("c", "c.img", "")) == 2);
	e = export_find(&t, "a");
	CHECK(e != NULL && e != a);
	CHECK(e != NULL && strstr(e->cfg->path, "a2.img") != NULL);
	CHECK(nexports() == 2);
	a = e;

	/* The same file, now read-only: replaced, not kept. */
	CHECK(apply(TARGET EXPORT("a", "a2.img", "read-only = yes\n")
		    EXPORT("c", "c.img", "")) == 2);
	e = export_find(&t, "a");
	CHECK(e != NULL && e != a && e->cfg->read_only);
	a = e;

	/* A failed export (fsyncgate: flusher.h) is reopened by the reload,
	 * even with an unchanged config. */
	flusher_fail(a->flusher, -5, "fdatasync");
	CHECK(apply(TARGET EXPORT("a", "a2.img", "read-only = yes\n")
		    EXPORT("c", "c.img", "")) == 2);
	e = export_find(&t, "a");
	CHECK(e != NULL && e != a && flusher_failed(e->flusher) == 0);

	/* Everything removed. */
	CHECK(apply(TARGET) == 0);
	CHECK(STAILQ_EMPTY(&t.exports));

	exports_destroy_all(&t);
	ioq_destroy(loop0.ioq);
	printf("test-exports: %d checks, %d failed\n", checks, failures);
	if (failures == 0) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
	}
	return failures != 0;
}
