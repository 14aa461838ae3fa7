/* Unit tests for common/auth.c: the exact HMAC construction (vectors computed
 * independently with Python's hmac module), constant-time compare, and the
 * secret-file rules (permissions, empty, trailing newline). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"

static int failures, checks;

#define CHECK(cond) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
	}								\
} while (0)

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

static void
test_vectors(void)
{
	struct rb_secret s = { (uint8_t *)"secret", 6 };
	uint8_t ni[RB_NONCE_LEN], nt[RB_NONCE_LEN], mt[RB_MAC_LEN], mi[RB_MAC_LEN];
	char h[2 * RB_MAC_LEN + 1];

	memset(ni, 1, sizeof(ni));
	memset(nt, 2, sizeof(nt));
	CHECK(rb_auth_mac_target(&s, ni, nt, "disk0", mt) == 0);
	hex(mt, h);
	CHECK(strcmp(h, "78b151d6490ab7e178b1351e674de900c525208e0f273e90c4f544cf4e90287c") == 0);
	CHECK(rb_auth_mac_initiator(&s, ni, nt, "disk0", mi) == 0);
	hex(mi, h);
	CHECK(strcmp(h, "e90568b8dc7c3760d08f997201b7e60ce8f13c6ed75fff4daf9fc0ad87d8cb7f") == 0);
	/* the two proofs differ, so one side's proof cannot be reflected */
	CHECK(!rb_auth_mac_equal(mt, mi));
	CHECK(rb_auth_mac_equal(mt, mt));
	/* another export name, another nonce: another MAC */
	CHECK(rb_auth_mac_target(&s, ni, nt, "disk1", mi) == 0);
	CHECK(!rb_auth_mac_equal(mt, mi));
	nt[31] ^= 1;
	CHECK(rb_auth_mac_target(&s, ni, nt, "disk0", mi) == 0);
	CHECK(!rb_auth_mac_equal(mt, mi));
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
	struct rb_secret s = { NULL, 0 }, d = { NULL, 0 };

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/key", dir);

	write_file(path, KEY32 "\n", 0600);
	CHECK(rb_secret_load(path, &s, err, sizeof(err)) == 0);
	CHECK(s.len == 32 && memcmp(s.key, KEY32, 32) == 0);
	CHECK(rb_secret_dup(&d, &s) == 0 && d.len == 32 && memcmp(d.key, KEY32, 32) == 0);
	rb_secret_wipe(&s);
	rb_secret_wipe(&d);
	CHECK(s.key == NULL && s.len == 0 && d.key == NULL);
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
	test_nonces();
	test_files();
	printf("test-auth: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
