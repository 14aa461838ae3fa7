/* Unit test for the io-engine key of target/config/config.c: the default is
 * io_uring, "threads" forces the worker fallback, anything else is an
 * error reported as FILE:LINE.  No RDMA needed.  Prints one line per
 * check; exits 0 or 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../target/config/config.h"
#include "../../target/log.h"
#include "check.h"

static char dir[] = "/tmp/rdmablk-test-config-io.XXXXXX";
static char conf[512];
static void
collect(void *arg, const char *msg)
{
	snprintf(arg, 512, "%s", msg);
}

/* Load a config whose [target] section has extra (may be ""). */
static struct config *
load(const char *extra, char *err, unsigned *nerrors)
{
	FILE *f = fopen(conf, "w");

	if (f == NULL || fprintf(f, "[target]\nlisten = 127.0.0.1\n%s\n"
				 "[export d]\npath = %s/d.img\nsize = 1M\n", extra, dir) < 0 ||
	    fclose(f) != 0) {
		perror(conf);
		exit(1);
	}
	err[0] = '\0';
	*nerrors = 0;
	return config_load(conf, 0, collect, err, nerrors);
}

int
main(void)
{
	struct config *c;
	char err[512], path[600];
	unsigned n;

	log_init(1, LOG_LEVEL_WARN);
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(conf, sizeof(conf), "%s/t.conf", dir);

	c = load("", err, &n);
	check(c != NULL && c->io_engine == IOQ_IO_URING, "default: io_uring");
	config_free(c);
	c = load("io-engine = threads", err, &n);
	check(c != NULL && c->io_engine == IOQ_THREADS, "io-engine = threads");
	config_free(c);
	c = load("io-engine = io_uring", err, &n);
	check(c != NULL && c->io_engine == IOQ_IO_URING, "io-engine = io_uring");
	config_free(c);
	c = load("io-engine = aio", err, &n);
	check(c == NULL && n == 1 && strstr(err, ":3: io-engine: bad value 'aio'") != NULL,
	      "io-engine = aio: an error at its line");
	if (c == NULL)
		printf("   %s\n", err);
	config_free(c);

	snprintf(path, sizeof(path), "%s/d.img", dir);
	unlink(path);
	unlink(conf);
	rmdir(dir);
	printf("%s\n", failures ? "test-config-io-engine: FAILED" :
	       "test-config-io-engine: all checks passed");
	return failures ? 1 : 0;
}
