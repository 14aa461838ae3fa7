/* Unit test for target/config/config.c: a valid config parses with the right
 * values; each invalid variant is reported as FILE:LINE: message.
 * No RDMA needed.  Prints one line per check; exits 0 or 1. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../target/config/config.h"
#include "../../target/log.h"
#include "check.h"
#include "said.h"

static char dir[] = "/tmp/rdmablk-test-config.XXXXXX";
static char conf[512], img[512], img2[512];


static void
write_conf(const char *text)
{
	FILE *f = fopen(conf, "w");

	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(conf);
		exit(1);
	}
}

static struct config *
load(const char *text, int flags, struct said *e)
{
	unsigned n = 0;
	struct config *c;

	memset(e, 0, sizeof(*e));
	write_conf(text);
	c = config_load(conf, flags, said_collect, e, &n);
	if (n != e->n)
		checkf(0, "error count %u matches reported errors %u", n, e->n);
	return c;
}

/* The config must fail with an error naming FILE:LINE and containing
 * `what`. */
static void
expect_error(const char *name, const char *text, int line, const char *what)
{
	struct said e;
	struct config *c = load(text, CONFIG_CHECK, &e);
	char where[600];

	snprintf(where, sizeof(where), "%s:%d: ", conf, line);
	checkf(c == NULL && strstr(e.text, where) != NULL && strstr(e.text, what) != NULL,
	      "%s: reported as %s...%s", name, where, what);
	if (c != NULL || strstr(e.text, where) == NULL || strstr(e.text, what) == NULL)
		printf("   got: %s", e.n ? e.text : "(no error)\n");
	config_free(c);
}

#define TARGET "[target]\nlisten = 10.55.0.1\n"

/* One bad key = value line of [target] (line 3) or of an [export] (line
 * 5): the error names the line and says what the key takes. */
static const struct {
	const char *line, *what;
} bad_target_keys[] = {
	{ "bogus = 1", "unknown key 'bogus'" },
	{ "queue-depth = 0", "queue-depth: bad value '0' (1..1024)" },
	{ "threads = 65", "threads: bad value '65' (1..64 event loops)" },
	{ "log-level = loud",
	  "log-level: bad value 'loud' (error, warn, info or debug)" },
	{ "max-io = 5000", "max-io" },
	{ "max-io = 32M", "max-io" },
	{ "inline-max = 8K", "inline-max" },
	{ "keepalive = 2s", "keepalive: bad value '2s' (seconds, 0..3600; 0 disables)" },
	{ "handshake-timeout = 0", "handshake-timeout: bad value '0'" },
	{ "max-connections-total = 0", "max-connections-total: bad value '0'" },
	{ "max-handshakes = 65536", "max-handshakes: bad value '65536'" },
	{ "max-connections-per-address = -1",
	  "max-connections-per-address: bad value '-1'" },
	{ "stats = maybe", "stats: bad boolean 'maybe' (yes/no/true/false/on/off)" },
	{ "metrics-listen = 127.0.0.1", "metrics-listen: '127.0.0.1' is not ADDR:PORT" },
	{ "metrics-listen = 127.0.0.1:0", "metrics-listen: '127.0.0.1:0' is not ADDR:PORT" },
	{ "metrics-listen = ::1:9480", "metrics-listen: '::1:9480' is not ADDR:PORT" },
	{ "metrics-listen = [::1]", "metrics-listen: '[::1]' is not ADDR:PORT" },
	{ "metrics-listen = localhost:9480", "metrics-listen: bad address 'localhost'" },
}, bad_export_keys[] = {
	{ "size = 12Q", "bad size" },
	{ "read-only = maybe",
	  "read-only: bad boolean 'maybe' (yes/no/true/false/on/off)" },
	{ "max-connections = -1", "max-connections: bad value '-1' (0..65535)" },
	{ "shared = perhaps", "shared: bad boolean 'perhaps'" },
	{ "durability = sometimes", "durability: bad value 'sometimes' (always or fua)" },
	{ "allow = 10.55.0.0/33", "allow" },
};

int
main(void)
{
	char text[4096], buf[512];
	struct said e;
	struct config *c;
	const struct cfg_export *x;
	struct stat st;
	FILE *f;
	size_t i;

	log_init(1, LOG_LEVEL_ERROR);
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(conf, sizeof(conf), "%s/t.conf", dir);
	snprintf(img, sizeof(img), "%s/disk0.img", dir);
	snprintf(img2, sizeof(img2), "%s/ro.img", dir);
	f = fopen(img2, "w");
	if (f == NULL || ftruncate(fileno(f), 1 << 20) < 0 || fclose(f) != 0) {
		perror(img2);
		return 1;
	}

	/* ---- a valid config ---- */
	snprintf(text, sizeof(text),
		 "# comment line\n"
		 "[target]\n"
		 "listen = 10.55.0.1      # inline comment\n"
		 "port = 10999\n"
		 "queue-depth = 64\n"
		 "max-io = 512K\n"
		 "threads = 3\n"
		 "log-level = debug\n"
		 "buffer-pool = 16M\n"
		 "inline-max = 2K\n"
		 "keepalive = 0\n"
		 "handshake-timeout = 5\n"
		 "max-connections-total = 100\n"
		 "max-handshakes = 10\n"
		 "max-connections-per-address = 7\n"
		 "metrics-listen = [::1]:9480\n"
		 "\n"
		 "[export disk0]\n"
		 "path = %s\n"
		 "size = 8M\n"
		 "read-only = no\n"
		 "durability = fua\n"
		 "allow = 10.55.0.0/24 10.55.1.7\n"
		 "description = first disk\n"
		 "max-connections = 2\n"
		 "shared = yes\n"
		 "[export ro]\n"
		 "path = %s\n"
		 "read-only = yes\n", img, img2);
	c = load(text, 0, &e);
	checkf(c != NULL, "valid config parses (errors: %s)", e.n ? e.text : "none");
	if (c == NULL)
		return 1;
	checkf(strcmp(c->listen_host, "10.55.0.1") == 0, "listen = 10.55.0.1");
	checkf(c->port == 10999, "port = 10999");
	checkf(c->metrics_listen_len != 0 && c->metrics_listen.ss_family == AF_INET6 &&
	       strcmp(c->metrics_listen_str, "[::1]:9480") == 0, "metrics-listen = [::1]:9480");
	checkf(c->queue_depth == 64, "queue-depth = 64");
	checkf(c->max_io == 512 * 1024, "max-io = 512K");
	checkf(c->threads == 3, "threads = 3");
	checkf(c->log_level == LOG_LEVEL_DEBUG, "log-level = debug");
	checkf(c->buffer_pool == 16u << 20, "buffer-pool = 16M");
	checkf(c->inline_max == 2048, "inline-max = 2K");
	checkf(c->keepalive == 0, "keepalive = 0 (disabled)");
	checkf(c->handshake_timeout == 5, "handshake-timeout = 5");
	checkf(c->max_conns_total == 100 && c->max_handshakes == 10 &&
	      c->max_conns_per_addr == 7,
	      "max-connections-total = 100, max-handshakes = 10, max-connections-per-address = 7");
	checkf(c->nexports == 2, "two exports");
	x = config_find_export(c, "disk0");
	checkf(x != NULL && x->size == 8u << 20 && !x->read_only &&
	      x->durability == DURABILITY_FUA && x->nallow == 2 &&
	      x->max_connections == 2 && strcmp(x->description, "first disk") == 0 &&
	      x->shared &&
	      x->fd >= 0, "export disk0 values");
	checkf(stat(img, &st) == 0 && st.st_size == 8 << 20, "size = 8M created the file");
	x = config_find_export(c, "ro");
	checkf(x != NULL && x->read_only && x->size == 1u << 20 &&
	      x->durability == DURABILITY_ALWAYS && x->nallow == 0 && !x->shared,
	      "export ro values and defaults");
	config_free(c);

	/* defaults */
	snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\n", img);
	c = load(text, 0, &e);
	checkf(c != NULL && c->port == 10810 && c->queue_depth == 128 &&
	      c->max_io == 1u << 20 && c->buffer_pool == 64u << 20 &&
	      c->inline_max == 4096 && c->threads >= 1 &&
	      c->keepalive == CONFIG_DEFAULT_KEEPALIVE &&
	      c->handshake_timeout == CONFIG_DEFAULT_HANDSHAKE &&
	      c->max_conns_total == CONFIG_DEFAULT_MAX_CONNS_TOTAL &&
	      c->max_handshakes == CONFIG_DEFAULT_MAX_HANDSHAKES &&
	      c->max_conns_per_addr == CONFIG_DEFAULT_MAX_CONNS_PER_ADDR, "defaults");
	config_free(c);

	/* -n never creates files */
	snprintf(buf, sizeof(buf), "%s/new.img", dir);
	snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\nsize = 1M\n", buf);
	c = load(text, CONFIG_CHECK, &e);
	checkf(c != NULL && access(buf, F_OK) != 0, "check mode accepts size= for a new file without creating it");
	config_free(c);

	/* refusing to shrink */
	snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\nsize = 4M\n", img);
	expect_error("shrink", text, 5, "refusing to shrink");

	/* ---- invalid variants ---- */
	for (i = 0; i < sizeof(bad_target_keys) / sizeof(bad_target_keys[0]); i++) {
		snprintf(text, sizeof(text), TARGET "%s\n[export a]\npath = %s\n",
			 bad_target_keys[i].line, img);
		expect_error(bad_target_keys[i].line, text, 3, bad_target_keys[i].what);
	}
	for (i = 0; i < sizeof(bad_export_keys) / sizeof(bad_export_keys[0]); i++) {
		snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\n%s\n", img,
			 bad_export_keys[i].line);
		expect_error(bad_export_keys[i].line, text, 5, bad_export_keys[i].what);
	}
	snprintf(text, sizeof(text), "[target]\nlisten = 10.55.0.300\n[export a]\npath = %s\n", img);
	expect_error("bad address", text, 2, "bad address");
	expect_error("direct-io on an RBD export",
		     TARGET "[export r]\npath = rbd:rbd/img0\ndirect-io = yes\n", 3,
		     "[export r]: direct-io is for files and block devices");

	snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\n[export a]\npath = %s\n",
		 img, img);
	expect_error("duplicate export", text, 5, "duplicate export 'a'");
	snprintf(text, sizeof(text), TARGET "[export a]\nsize = 1M\n");
	expect_error("missing path", text, 3, "missing path");
	snprintf(text, sizeof(text), "[target]\nport = 1\n[export a]\npath = %s\n", img);
	expect_error("missing listen", text, 1, "missing listen");
	snprintf(text, sizeof(text), TARGET "[export a]\npath = /nonexistent/x/y\n");
	expect_error("missing file", text, 4, "path: /nonexistent/x/y: No such file or directory");
	snprintf(text, sizeof(text), "listen = 10.55.0.1\n" TARGET "[export a]\npath = %s\n", img);
	expect_error("key outside a section", text, 1, "outside a section");
	snprintf(text, sizeof(text), TARGET "[export .hidden]\npath = %s\n", img);
	expect_error("bad export name", text, 3, "bad export name");
	snprintf(text, sizeof(text), TARGET "buffer-pool = 512K\n[export a]\npath = %s\n", img);
	expect_error("buffer-pool below max-io", text, 1, "buffer-pool");
	/* a key longer than 23 characters is still caught twice */
	snprintf(text, sizeof(text), TARGET "max-connections-per-address = 4\n"
		 "max-connections-per-address = 5\n[export a]\npath = %s\n", img);
	expect_error("duplicate long key", text, 4, "duplicate key 'max-connections-per-address'");
	snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\nsize = 1000\n", img);
	expect_error("size not a multiple of 512", text, 5, "multiple of 512");

	snprintf(text, sizeof(text), TARGET "[export a]\npath = disks/a.img\nsize = 1M\n");
	expect_error("relative path", text, 4, "not an absolute path");

	/* per-initiator keys on allow lines, and listed */
	{
		char k1[200], k2[200], ks[200];
		struct sockaddr_in sa = { .sin_family = AF_INET };
		const struct rb_secret *k;

		snprintf(k1, sizeof(k1), "%s/k1.key", dir);
		snprintf(k2, sizeof(k2), "%s/k2.key", dir);
		snprintf(ks, sizeof(ks), "%s/short.key", dir);
		f = fopen(k1, "w");
		fputs("export-wide key, 32 bytes or more\n", f);
		fclose(f);
		f = fopen(k2, "w");
		fputs("the key of host 10.55.0.2 alone!!\n", f);
		fclose(f);
		f = fopen(ks, "w");
		fputs("short\n", f);
		fclose(f);
		chmod(k1, 0600);
		chmod(k2, 0600);
		chmod(ks, 0600);
		snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\n"
			 "allow = 10.55.0.0/24\nallow = 10.55.0.2 10.55.1.0/24 secret-file=%s\n"
			 "secret-file = %s\n[export b]\npath = %s\n"
			 "allow = 10.55.0.2 secret-file = %s\nallow = 10.55.0.3\n"
			 "[export c]\npath = %s\nsecret-file = %s\nlisted = yes\n",
			 img2, k2, k1, img2, k2, img2, k1);
		c = load(text, CONFIG_CHECK, &e);
		checkf(c != NULL, "allow lines with secret-file= parse%s%s", c ? "" : ": ", e.text);
		x = c ? config_find_export(c, "a") : NULL;
		inet_pton(AF_INET, "10.55.0.2", &sa.sin_addr);
		k = x ? cfg_export_secret(x, (struct sockaddr *)&sa) : NULL;
		checkf(k != NULL && k->len == 33 && memcmp(k->key, "the key of host", 15) == 0,
		      "10.55.0.2 gets its own key (longest prefix), not the export's");
		checkf(x != NULL && !cfg_export_listed(x, (struct sockaddr *)&sa),
		      "an export that needs a key from the peer is not listed to it");
		inet_pton(AF_INET, "10.55.0.3", &sa.sin_addr);
		k = x ? cfg_export_secret(x, (struct sockaddr *)&sa) : NULL;
		checkf(k != NULL && k->len == 33 && memcmp(k->key, "export-wide", 11) == 0,
		      "10.55.0.3 gets the export's secret-file");
		x = c ? config_find_export(c, "b") : NULL;
		checkf(x != NULL && cfg_export_secret(x, (struct sockaddr *)&sa) == NULL &&
		      cfg_export_listed(x, (struct sockaddr *)&sa),
		      "export b: 10.55.0.3 needs no key and sees it listed");
		inet_pton(AF_INET, "10.55.1.9", &sa.sin_addr);
		x = c ? config_find_export(c, "a") : NULL;
		k = x ? cfg_export_secret(x, (struct sockaddr *)&sa) : NULL;
		checkf(k != NULL && memcmp(k->key, "the key of host", 15) == 0,
		      "every prefix of the line takes its key");
		x = c ? config_find_export(c, "c") : NULL;
		checkf(x != NULL && cfg_export_listed(x, (struct sockaddr *)&sa),
		      "listed = yes lists a secret-protected export");
		config_free(c);

		/* An IPv4-mapped peer is its IPv4 address: the broad
		 * ::ffff:0:0/96 line (all of IPv4) does not outrank the host's
		 * own /32 line by its longer IPv6 prefix length. */
		snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\n"
			 "allow = 10.55.0.2 secret-file=%s\nallow = ::ffff:0:0/96 secret-file=%s\n",
			 img2, k2, k1);
		c = load(text, CONFIG_CHECK, &e);
		checkf(c != NULL, "an IPv4-mapped prefix parses%s%s", c ? "" : ": ", e.text);
		x = c ? config_find_export(c, "a") : NULL;
		{
			struct sockaddr_in6 m = { .sin6_family = AF_INET6 };

			inet_pton(AF_INET6, "::ffff:10.55.0.2", &m.sin6_addr);
			k = x ? cfg_export_secret(x, (struct sockaddr *)&m) : NULL;
			checkf(k != NULL && memcmp(k->key, "the key of host", 15) == 0,
			      "::ffff:10.55.0.2 gets 10.55.0.2's key, not the ::ffff:0:0/96 line's");
			inet_pton(AF_INET6, "::ffff:10.55.0.9", &m.sin6_addr);
			k = x ? cfg_export_secret(x, (struct sockaddr *)&m) : NULL;
			checkf(k != NULL && memcmp(k->key, "export-wide", 11) == 0,
			      "::ffff:10.55.0.9 gets the ::ffff:0:0/96 line's key");
			inet_pton(AF_INET, "10.55.0.9", &sa.sin_addr);
			k = x ? cfg_export_secret(x, (struct sockaddr *)&sa) : NULL;
			checkf(k != NULL && memcmp(k->key, "export-wide", 11) == 0,
			      "10.55.0.9 as IPv4 gets the same key as in its mapped form");
		}
		config_free(c);

		snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\n"
			 "allow = 10.55.0.2 secret-file=%s\nallow = 10.55.0.2 secret-file=%s\n",
			 img2, k1, k2);
		expect_error("one prefix, two keys", text, 6,
			     "allow: 10.55.0.2 is already listed with another secret-file= (line 5)");
		snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\n"
			 "allow = 10.55.0.2\nallow = 10.55.0.2 secret-file=%s\n", img2, k1);
		expect_error("one prefix, with and without a key", text, 6,
			     "without secret-file=");
		snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\n"
			 "allow = 10.55.0.2 secret-file=%s\n", img2, ks);
		expect_error("short allow key", text, 5, "shorter than 32 bytes");
		snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\n"
			 "allow = secret-file=%s\n", img2, k1);
		expect_error("allow key without an address", text, 5, "without an address");
		snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\n"
			 "allow = 10.55.0.2 secret-file %s\n", img2, k1);
		expect_error("allow key without =", text, 5, "expected secret-file=PATH");
		snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\nlisted = maybe\n",
			 img2);
		expect_error("listed not a boolean", text, 5, "listed: bad boolean 'maybe'");
		unlink(k1);
		unlink(k2);
		unlink(ks);
	}
	/* RBD exports: the spec and the ceph-* keys, checked before any
	 * connection is tried (a missing ceph-conf never reaches librbd). */
	snprintf(text, sizeof(text), TARGET "[export a]\npath = rbd:pool\n");
	expect_error("rbd: without an image", text, 4, "expected rbd:POOL/IMAGE");
	snprintf(text, sizeof(text), TARGET "[export a]\npath = rbd:pool/img@snap\n");
	expect_error("rbd: with a snapshot", text, 4, "snapshots and namespaces are not supported");
	snprintf(text, sizeof(text), TARGET "[export a]\npath = %s\nceph-id = admin\n", img2);
	expect_error("ceph-id on a file export", text, 5, "only for RBD exports");
	snprintf(text, sizeof(text), TARGET "[export a]\npath = rbd:p/i\nceph-id = a b\n");
	expect_error("ceph-id with a space", text, 5, "ceph-id: bad client name 'a b'");
	snprintf(text, sizeof(text), TARGET "[export a]\npath = rbd:p/i\nceph-conf = ceph.conf\n");
	expect_error("relative ceph-conf", text, 5, "ceph-conf: 'ceph.conf' is not an absolute path");
	snprintf(text, sizeof(text), TARGET "[export a]\npath = rbd:p/i\nceph-conf = %s/none.conf\n",
		 dir);
	expect_error("missing ceph-conf", text, 5, "none.conf: No such file or directory");
	snprintf(text, sizeof(text), TARGET "[export a]\npath = rbd:p/i\nceph-cnf = /x\n");
	expect_error("misspelt ceph- key", text, 5, "unknown key 'ceph-cnf'");
	snprintf(text, sizeof(text), TARGET "[export a]\npath = rbd:p/i\nceph-conf = %s\n"
		 "ceph-keyring = %s\n", img2, img2);
	chmod(img2, 0644);
	expect_error("world-readable keyring", text, 6, "is readable by everyone (mode 0644)");

	/* shared = defaults to yes for RBD images (one store behind every
	 * target), no for files; either way the key decides. */
	snprintf(text, sizeof(text), TARGET "[export r1]\npath = rbd:p/i\n"
		 "[export r2]\npath = rbd:p/j\nshared = no\n"
		 "[export f]\npath = %s\nshared = yes\n", img2);
	c = load(text, CONFIG_NO_OPEN, &e);
	checkf(c != NULL, "rbd and file exports parse (errors: %s)", e.n ? e.text : "none");
	if (c != NULL) {
		checkf(config_find_export(c, "r1") != NULL && config_find_export(c, "r1")->shared == 1,
		      "an RBD export is shared by default");
		checkf(config_find_export(c, "r2") != NULL && config_find_export(c, "r2")->shared == 0,
		      "shared = no on an RBD export");
		checkf(config_find_export(c, "f") != NULL && config_find_export(c, "f")->shared == 1,
		      "shared = yes on a file export");
		config_free(c);
	}

	/* every error at once */
	snprintf(text, sizeof(text),
		 "[target]\nlisten = nowhere\nqueue-depth = 0\n[export a]\nfoo = 1\n");
	c = load(text, CONFIG_CHECK, &e);
	checkf(c == NULL && e.n == 4, "all errors reported at once (got %u)", e.n);
	config_free(c);

	/* Medium 8: a writable export with neither secret-file nor allow is
	 * warned about (FILE:LINE of its header), the config still loads;
	 * read-only, allow-listed and keyed exports are not. */
	{
		char key[600], where[800];
		unsigned n;

		snprintf(key, sizeof(key), "%s/k", dir);
		f = fopen(key, "w");
		if (f == NULL || fputs("0123456789abcdef0123456789abcdef\n", f) < 0 ||
		    fclose(f) != 0 || chmod(key, 0600) != 0) {
			perror(key);
			return 1;
		}
		snprintf(text, sizeof(text), TARGET
			 "[export ro]\npath = %s\nread-only = yes\n"
			 "[export listed]\npath = %s\nallow = 10.55.0.7\n"
			 "[export keyed]\npath = %s\nsecret-file = %s\n"
			 "[export open]\npath = %s\n", img2, img, img, key, img);
		c = load(text, CONFIG_CHECK, &e);
		checkf(c != NULL, "a config with an open writable export is valid (errors: %s)",
		      e.n ? e.text : "none");
		if (c != NULL) {
			memset(&e, 0, sizeof(e));
			n = config_warn(c, said_collect, &e);
			snprintf(where, sizeof(where), "%s:12: warning: export open is writable by "
				 "any initiator: it has no secret-file and no allow list", conf);
			checkf(n == 1 && e.n == 1 && strstr(e.text, where) != NULL &&
			      strstr(e.text, "InfiniBand") != NULL,
			      "one warning, for export open, at FILE:LINE (got: %s)",
			      e.n ? e.text : "none");
		}
		config_free(c);
		unlink(key);
	}

	/* missing config file */
	{
		unsigned n = 0;
		struct said e2;

		memset(&e2, 0, sizeof(e2));
		c = config_load("/nonexistent/rdmablk.conf", CONFIG_CHECK, said_collect, &e2, &n);
		checkf(c == NULL && n == 1 && strstr(e2.text, "/nonexistent/rdmablk.conf") != NULL,
		      "missing config file is an error naming it");
	}

	unlink(conf);
	unlink(img);
	unlink(img2);
	unlink(buf);
	rmdir(dir);
	printf("%s\n", failures ? "test-config: FAILED" : "test-config: all checks passed");
	return failures ? 1 : 0;
}
