/* Unit tests for initiator/params.c: the key=value parser shared by the
 * nbdkit plugin and rdmablk-ublk. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "protocol.h"
#include "rdmablk.h"

#include "check.h"

static char err[256];

static int
set(struct rb_opts *o, const char *k, const char *v)
{
	err[0] = '\0';
	return rb_opts_set(o, k, v, err, sizeof(err));
}

/* hostname=A,B,...: the failover list (initiator/hostlist.c). */
static int
resolve(struct rb_opts *o)
{
	err[0] = '\0';
	return rb_opts_resolve(o, err, sizeof(err));
}

static int
target_is(const struct rb_opts *o, unsigned i, const char *host, unsigned port)
{
	return i < o->ntargets && strcmp(o->targets[i].host, host) == 0 &&
	       o->targets[i].port == port;
}

static void
target_lists(void)
{
	struct rb_opts o;
	char many[512] = "";
	int i;

	rb_opts_init(&o);
	/* One entry: as before, the port= default. */
	CHECK(set(&o, "hostname", "127.0.0.1") == 0 && resolve(&o) == 0);
	CHECK(o.ntargets == 1 && target_is(&o, 0, "127.0.0.1", RB_DEFAULT_PORT));
	CHECK(strcmp(o.host, "127.0.0.1") == 0);

	/* Several, in order; :PORT per entry; port= for the rest, whenever given. */
	CHECK(set(&o, "hostname", "10.55.0.1,10.55.0.2:10811,[fd00::1]:10812,[fd00::2],fd00::3") == 0);
	CHECK(o.host == NULL && o.ntargets == 0);
	CHECK(set(&o, "port", "10900") == 0 && resolve(&o) == 0);
	CHECK(o.ntargets == 5);
	CHECK(target_is(&o, 0, "10.55.0.1", 10900));
	CHECK(target_is(&o, 1, "10.55.0.2", 10811));
	CHECK(target_is(&o, 2, "fd00::1", 10812));
	CHECK(target_is(&o, 3, "fd00::2", 10900));
	CHECK(target_is(&o, 4, "fd00::3", 10900));
	CHECK(strcmp(o.host, "10.55.0.1") == 0);
	/* Names resolve per entry. */
	CHECK(set(&o, "hostname", "localhost:10813,127.0.0.2") == 0 && resolve(&o) == 0);
	CHECK(o.ntargets == 2 && o.targets[0].port == 10813 &&
	      target_is(&o, 1, "127.0.0.2", 10900));

	/* Bad entries: the error names the entry, and the old value stays. */
	CHECK(set(&o, "hostname", "10.55.0.1,") == -EINVAL &&
	      strstr(err, "invalid hostname entry 2 '': empty"));
	CHECK(set(&o, "hostname", ",10.55.0.1") == -EINVAL &&
	      strstr(err, "invalid hostname entry 1 '': empty"));
	CHECK(set(&o, "hostname", "a,,b") == -EINVAL &&
	      strstr(err, "invalid hostname entry 2 '': empty"));
	CHECK(set(&o, "hostname", "10.55.0.1:99999") == -EINVAL &&
	      strstr(err, "entry 1 '10.55.0.1:99999': port '99999' is not an integer in 1..65535"));
	CHECK(set(&o, "hostname", "10.55.0.1,10.55.0.2:http") == -EINVAL &&
	      strstr(err, "entry 2 '10.55.0.2:http': port 'http'"));
	CHECK(set(&o, "hostname", "10.55.0.1:") == -EINVAL &&
	      strstr(err, "'10.55.0.1:': empty port after ':'"));
	CHECK(set(&o, "hostname", ":10810") == -EINVAL &&
	      strstr(err, "':10810': empty address"));
	CHECK(set(&o, "hostname", "[fd00::1") == -EINVAL &&
	      strstr(err, "'[fd00::1': no closing ']'"));
	CHECK(set(&o, "hostname", "[fd00::1]10810") == -EINVAL &&
	      strstr(err, "'[fd00::1]10810': expected ':PORT'"));
	CHECK(set(&o, "hostname", "[]:10810") == -EINVAL &&
	      strstr(err, "'[]:10810': brackets are for IPv6"));
	CHECK(set(&o, "hostname", "[10.55.0.1]:10810") == -EINVAL &&
	      strstr(err, "brackets are for IPv6"));
	CHECK(set(&o, "hostname", "fd00::1]:10810") == -EINVAL &&
	      strstr(err, "'fd00::1]:10810': a bracket"));
	CHECK(set(&o, "hostname", "10.55.0.1, 10.55.0.2") == -EINVAL &&
	      strstr(err, "entry 2 ' 10.55.0.2': contains a space"));
	for (i = 0; i <= RB_MAX_TARGETS; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s10.0.0.%d",
			 i ? "," : "", i + 1);
	CHECK(set(&o, "hostname", many) == -EINVAL && strstr(err, "more than 16 targets"));
	CHECK(set(&o, "hostname", "") == -EINVAL && strstr(err, "invalid hostname '': empty"));
	CHECK(resolve(&o) == 0 && o.ntargets == 2 && o.targets[0].port == 10813);

	/* Errors found only when resolving name the entry too. */
	CHECK(set(&o, "hostname", "127.0.0.1,no-such-host.invalid") == 0);
	CHECK(resolve(&o) == -EINVAL &&
	      strstr(err, "hostname 'no-such-host.invalid' (entry 2)") && o.host == NULL);
	CHECK(set(&o, "hostname", "127.0.0.1,127.0.0.1:10900") == 0);
	CHECK(resolve(&o) == -EINVAL &&
	      strstr(err, "entries 1 and 2 are the same target, 127.0.0.1 port 10900"));
	CHECK(set(&o, "hostname", "127.0.0.1,127.0.0.1:10901") == 0 && resolve(&o) == 0 &&
	      o.ntargets == 2);
	rb_opts_free(&o);
	CHECK(o.ntargets == 0);
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
	CHECK(set(&o, "busy-poll", "on") == 0 && o.busy_poll == RB_BUSY_POLL_YES);
	CHECK(set(&o, "busy-poll", "adaptive") == 0 && o.busy_poll == RB_BUSY_POLL_ADAPTIVE);
	CHECK(set(&o, "busy-poll", "off") == 0 && o.busy_poll == RB_BUSY_POLL_NO);
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
	CHECK(set(&o, "busy-poll", "maybe") == -EINVAL && strstr(err, "invalid busy-poll 'maybe'") &&
	      strstr(err, "adaptive"));
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

	target_lists();
	printf("test-params: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
