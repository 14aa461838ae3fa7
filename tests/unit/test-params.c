/* Unit tests for initiator/params.c: the key=value parser shared by the
 * nbdkit plugin and rdmablk-ublk. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "protocol.h"
#include "rdmablk.h"

static int failures, checks;

#define CHECK(cond) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	}								\
} while (0)

static char err[256];

static int
set(struct rb_opts *o, const char *k, const char *v)
{
	err[0] = '\0';
	return rb_opts_set(o, k, v, err, sizeof(err));
}

int
main(void)
{
	struct rb_opts o;

	rb_opts_init(&o);
	CHECK(set(&o, "hostname", "127.0.0.1") == 0);
	CHECK(set(&o, "port", "10811") == 0 && o.port == 10811);
	CHECK(set(&o, "export", "disk0") == 0 && strcmp(o.export_name, "disk0") == 0);
	CHECK(set(&o, "export", "disk1") == 0 && strcmp(o.export_name, "disk1") == 0);
	CHECK(set(&o, "queue-depth", "64") == 0 && o.queue_depth == 64);
	CHECK(set(&o, "timeout", "5") == 0 && o.timeout_s == 5);
	CHECK(set(&o, "retry", "3") == 0 && o.retry == 3);
	CHECK(set(&o, "keepalive", "0") == 0 && o.keepalive_s == 0);
	CHECK(set(&o, "busy-poll", "on") == 0 && o.busy_poll == 1);
	CHECK(set(&o, "mr", "static") == 0 && o.mr == RB_MR_STATIC);
	CHECK(set(&o, "source-address", "10.55.0.2") == 0 && strcmp(o.source, "10.55.0.2") == 0);
	CHECK(set(&o, "source-address", "fd00::2") == 0 && strcmp(o.source, "fd00::2") == 0);
	CHECK(set(&o, "secret-file", "/etc/key") == 0 && strcmp(o.secret_file, "/etc/key") == 0);
	CHECK(set(&o, "secret-file", "rel/key") == 0 && o.secret_file[0] == '/' &&
	      strstr(o.secret_file, "/rel/key") != NULL);

	CHECK(set(&o, "port", "99999") == -EINVAL && strstr(err, "invalid port '99999'"));
	CHECK(set(&o, "port", "http") == -EINVAL && strstr(err, "port"));
	CHECK(set(&o, "queue-depth", "0") == -EINVAL && strstr(err, "invalid queue-depth '0'"));
	CHECK(set(&o, "export", "-x") == -EINVAL && strstr(err, "invalid export '-x'"));
	CHECK(set(&o, "busy-poll", "maybe") == -EINVAL && strstr(err, "busy-poll"));
	CHECK(set(&o, "mr", "sometimes") == -EINVAL && strstr(err, "mr: 'sometimes'"));
	CHECK(set(&o, "source-address", "host.example") == -EINVAL &&
	      strstr(err, "invalid source-address 'host.example'"));
	CHECK(set(&o, "hostname", "") == -EINVAL && strstr(err, "hostname"));
	CHECK(set(&o, "colour", "blue") == -ENOENT && strstr(err, "unknown parameter 'colour'"));
	/* A failed set leaves the earlier value. */
	CHECK(o.port == 10811 && o.queue_depth == 64);

	CHECK(o.host == NULL);
	CHECK(rb_opts_resolve(&o, err, sizeof(err)) == 0 && strcmp(o.host, "127.0.0.1") == 0);
	CHECK(set(&o, "hostname", "no-such-host.invalid") == 0 && o.host == NULL);
	CHECK(rb_opts_resolve(&o, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "hostname 'no-such-host.invalid'"));
	rb_opts_free(&o);
	CHECK(o.export_name == NULL && o.port == RB_DEFAULT_PORT);
	CHECK(rb_opts_resolve(&o, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "hostname parameter is required"));

	printf("test-params: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
