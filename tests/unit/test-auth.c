/* Unit tests for common/auth.c: the exact HMAC construction (vectors computed
 * independently with Python's hmac module), its binding to the connection
 * (a fake relayed transcript), constant-time compare, and the secret-file
 * rules (permissions, empty, trailing newline). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"

#include "check.h"

#define KEY32 "0123456789abcdef0123456789abcdef"

static void
hex(const uint8_t *p, char *out)
{
	for (int i = 0; i < RB_MAC_LEN; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void
write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		perror(path);
		exit(1);
	}
	close(fd);
	chmod(path, mode);
}

/* ::ffff:10.55.0.X, as RoCE's GID of an IPv4 address. */
static void
gid4(uint8_t g[16], uint8_t x)
{
	static const uint8_t pre[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	memcpy(g, pre, 12);
	g[12] = 10;
	g[13] = 55;
	g[14] = 0;
	g[15] = x;
}

static void
test_vectors(void)
{
	struct rb_secret s = { (uint8_t *)"secret", 6 };
	struct rb_auth_bind b;
	uint8_t ni[RB_NONCE_LEN], nt[RB_NONCE_LEN], mt[RB_MAC_LEN], mi[RB_MAC_LEN];
	char h[2 * RB_MAC_LEN + 1];

	memset(ni, 1, sizeof(ni));
	memset(nt, 2, sizeof(nt));
	memset(&b, 0, sizeof(b));
	gid4(b.initiator_gid, 2);
	b.initiator_qpn = 0x11;
	gid4(b.target_gid, 1);
	b.target_qpn = 0x12;
	CHECK(rb_auth_mac_target(&s, ni, nt, &b, "disk0", mt) == 0);
	hex(mt, h);
	CHECK(strcmp(h, "6c7a32b0e91c6da8fac0719d95f17c619bf7af4ef63c308798e800055846e947") == 0);
	CHECK(rb_auth_mac_initiator(&s, ni, nt, &b, "disk0", mi) == 0);
	hex(mi, h);
	CHECK(strcmp(h, "2e2deed58fbddf5bed146a898344ffecc917320bc214e026a41bd72b314cb0c0") == 0);
	/* the two proofs differ, so one side's proof cannot be reflected */
	CHECK(!rb_auth_mac_equal(mt, mi));
	CHECK(rb_auth_mac_equal(mt, mt));
	/* another export name, another nonce: another MAC */
	CHECK(rb_auth_mac_target(&s, ni, nt, &b, "disk1", mi) == 0);
	CHECK(!rb_auth_mac_equal(mt, mi));
	nt[31] ^= 1;
	CHECK(rb_auth_mac_target(&s, ni, nt, &b, "disk0", mi) == 0);
	CHECK(!rb_auth_mac_equal(mt, mi));
	/* no binding: no MAC */
	CHECK(rb_auth_mac_target(&s, ni, nt, NULL, "disk0", mi) < 0);
}

/* A relay A between initiator I and target T holds two connections, I-A
 * and A-T.  T computes its proofs over A-T as it sees it, I over I-A: every
 * proof A passes on is refused, in both directions.  And one changed GID or
 * QPN alone is enough. */
static void
test_binding(void)
{
	struct rb_secret s = { (uint8_t *)KEY32, 32 };
	struct rb_auth_bind at, ia, tweak;
	uint8_t ni[RB_NONCE_LEN], nt[RB_NONCE_LEN], mt[RB_MAC_LEN], mi[RB_MAC_LEN],
		m[RB_MAC_LEN];
	int i;

	memset(ni, 0x31, sizeof(ni));
	memset(nt, 0x42, sizeof(nt));
	memset(&at, 0, sizeof(at));
	memset(&ia, 0, sizeof(ia));
	gid4(at.initiator_gid, 9);      /* T sees A (10.55.0.9, QP 0x20) */
	at.initiator_qpn = 0x20;
	gid4(at.target_gid, 1);
	at.target_qpn = 0x12;
	gid4(ia.initiator_gid, 2);      /* I sees itself and A (QP 0x21) */
	ia.initiator_qpn = 0x11;
	gid4(ia.target_gid, 9);
	ia.target_qpn = 0x21;
	/* T's CHALLENGE over A-T, relayed to I, checked over I-A */
	CHECK(rb_auth_mac_target(&s, ni, nt, &at, "disk0", mt) == 0);
	CHECK(rb_auth_mac_target(&s, ni, nt, &ia, "disk0", m) == 0);
	CHECK(!rb_auth_mac_equal(mt, m));
	/* I's AUTH over I-A (were I to answer), relayed to T */
	CHECK(rb_auth_mac_initiator(&s, ni, nt, &ia, "disk0", mi) == 0);
	CHECK(rb_auth_mac_initiator(&s, ni, nt, &at, "disk0", m) == 0);
	CHECK(!rb_auth_mac_equal(mi, m));
	/* Both ends of one connection see the same thing: the proofs match. */
	tweak = at;
	CHECK(rb_auth_mac_target(&s, ni, nt, &tweak, "disk0", m) == 0);
	CHECK(rb_auth_mac_equal(mt, m));
	/* Each field alone: any bit of either GID, either QPN. */
	CHECK(rb_auth_mac_initiator(&s, ni, nt, &at, "disk0", mi) == 0);
	for (i = 0; i < 4; i++) {
		tweak = at;
		switch (i) {
		case 0: tweak.initiator_gid[15] ^= 1; break;
		case 1: tweak.initiator_qpn ^= 1; break;
		case 2: tweak.target_gid[0] ^= 0x80; break;
		case 3: tweak.target_qpn ^= 0x800000; break;
		}
		CHECK(rb_auth_mac_target(&s, ni, nt, &tweak, "disk0", m) == 0);
		CHECK(!rb_auth_mac_equal(mt, m));
		CHECK(rb_auth_mac_initiator(&s, ni, nt, &tweak, "disk0", m) == 0);
		CHECK(!rb_auth_mac_equal(mi, m));
	}
	/* Swapping the ends (a reflection of the same connection) changes it too. */
	memcpy(tweak.initiator_gid, at.target_gid, 16);
	tweak.initiator_qpn = at.target_qpn;
	memcpy(tweak.target_gid, at.initiator_gid, 16);
	tweak.target_qpn = at.initiator_qpn;
	CHECK(rb_auth_mac_target(&s, ni, nt, &tweak, "disk0", m) == 0);
	CHECK(!rb_auth_mac_equal(mt, m));
}

/* A key's identity: a fixed vector, equal for an equal key, different for
 * another, and no identity for no key. */
static void
test_key_id(void)
{
	struct rb_secret s = { (uint8_t *)"secret", 6 }, s2 = { (uint8_t *)"secrex", 6 };
	struct rb_secret none = { NULL, 0 };
	uint8_t a[RB_MAC_LEN], b[RB_MAC_LEN];
	char h[2 * RB_MAC_LEN + 1];

	CHECK(rb_secret_id(&s, a) == 0);
	hex(a, h);
	CHECK(strcmp(h, "2cbcd0e5b9a44bb44756c206b0749542856028ba49f4fb39c87bd20b38d91d4b") == 0);
	CHECK(rb_secret_id(&s2, b) == 0);
	hex(b, h);
	CHECK(strcmp(h, "baacb175f92728a2f46c31a85931d5e460412a88bf50c348ef4e20ab7df88aae") == 0);
	CHECK(!rb_auth_mac_equal(a, b));
	CHECK(rb_secret_id(&none, b) == -1);
}

static void
test_nonces(void)
{
	uint8_t a[RB_NONCE_LEN], b[RB_NONCE_LEN];

	CHECK(rb_auth_nonce(a) == 0 && rb_auth_nonce(b) == 0);
	CHECK(memcmp(a, b, RB_NONCE_LEN) != 0);
}

static void
test_files(void)
{
	char dir[] = "/tmp/rdmablk-test-auth.XXXXXX", path[64], link[64], err[256];
	struct rb_secret s = { NULL, 0 };

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/key", dir);

	write_file(path, KEY32 "\n", 0600);
	CHECK(rb_secret_load(path, &s, err, sizeof(err)) == 0);
	CHECK(s.len == 32 && memcmp(s.key, KEY32, 32) == 0);
	rb_secret_wipe(&s);
	CHECK(s.key == NULL && s.len == 0);
	rb_secret_wipe(NULL);

	/* shorter than 32 bytes: guessable offline from one handshake */
	write_file(path, "hunter2\n", 0600);
	CHECK(rb_secret_load(path, &s, err, sizeof(err)) == -1);
	CHECK(strstr(err, "shorter than 32 bytes") != NULL && strstr(err, path) != NULL);
	write_file(path, KEY32 "\n", 0644);
	CHECK(rb_secret_load(path, &s, err, sizeof(err)) == -1);
	CHECK(strstr(err, "too open") != NULL && strstr(err, path) != NULL);
	write_file(path, KEY32 "\n", 0620);
	CHECK(rb_secret_load(path, &s, err, sizeof(err)) == -1);
	write_file(path, "", 0600);
	CHECK(rb_secret_load(path, &s, err, sizeof(err)) == -1);
	write_file(path, "\n", 0600);
	CHECK(rb_secret_load(path, &s, err, sizeof(err)) == -1);
	CHECK(rb_secret_load("/nonexistent/key", &s, err, sizeof(err)) == -1);
	CHECK(strstr(err, "/nonexistent/key") != NULL);

	/* a symlink is never followed, even to a good file */
	write_file(path, KEY32 "\n", 0600);
	snprintf(link, sizeof(link), "%s/link", dir);
	CHECK(symlink(path, link) == 0);
	CHECK(rb_secret_load(link, &s, err, sizeof(err)) == -1);
	CHECK(strstr(err, "symbolic link") != NULL);
	unlink(link);

	/* owned by someone else (neither us nor root): refused.  Needs
	 * root to chown; as a user the file is ours, and that case is
	 * covered above. */
	if (geteuid() == 0) {
		CHECK(chown(path, 65534, 65534) == 0);
		CHECK(rb_secret_load(path, &s, err, sizeof(err)) == -1);
		CHECK(strstr(err, "owned by uid 65534") != NULL);
		CHECK(chown(path, 0, 0) == 0);
		CHECK(rb_secret_load(path, &s, err, sizeof(err)) == 0);
		rb_secret_wipe(&s);
	} else {
		printf("test-auth: not root: the foreign-owner case is not checked\n");
	}

	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	test_vectors();
	test_binding();
	test_key_id();
	test_nonces();
	test_files();
	printf("test-auth: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
