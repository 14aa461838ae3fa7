/* Shared-secret authentication helpers (common/auth.h), OpenSSL libcrypto. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth.h"

void
rb_auth_wipe(void *p, size_t len)
{
	if (p != NULL && len > 0)
		OPENSSL_cleanse(p, len);
}

void
rb_secret_wipe(struct rb_secret *s)
{
	if (s == NULL)
		return;
	if (s->key != NULL) {
		OPENSSL_cleanse(s->key, s->len);
		free(s->key);
	}
	s->key = NULL;
	s->len = 0;
}


int
rb_secret_load(const char *path, struct rb_secret *s, char *err, size_t errlen)
{
	uint8_t buf[RB_SECRET_MAX + 2];
	struct stat st;
	size_t len = 0;
	ssize_t n;
	int fd;

	s->key = NULL;
	s->len = 0;
	/* O_NOFOLLOW: whoever may write the directory must not point us at
	 * another file with a symlink. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0 && errno == ELOOP) {
		snprintf(err, errlen, "secret-file %s: is a symbolic link (not followed)", path);
		return -1;
	}
	if (fd < 0) {
		snprintf(err, errlen, "secret-file %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "secret-file %s: %s", path, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "secret-file %s: not a regular file", path);
		goto out_close;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "secret-file %s: owned by uid %u, not by us (uid %u) or "
			 "root", path, (unsigned)st.st_uid, (unsigned)geteuid());
		goto out_close;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen, "secret-file %s: permissions %04o are too open; "
			 "chmod 600", path, (unsigned)(st.st_mode & 07777));
		goto out_close;
	}
	for (;;) {
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "secret-file %s: %s", path, strerror(errno));
			goto out_wipe;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf))
			break;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len > RB_SECRET_MAX) {
		snprintf(err, errlen, "secret-file %s: longer than %d bytes", path,
			 RB_SECRET_MAX);
		goto out_wipe;
	}
	if (len == 0) {
		snprintf(err, errlen, "secret-file %s: empty", path);
		goto out_wipe;
	}
	if (len < RB_SECRET_MIN) {
		snprintf(err, errlen, "secret-file %s: %zu bytes, shorter than %d bytes "
			 "(e.g. head -c 32 /dev/urandom | base64 >FILE)", path, len,
			 RB_SECRET_MIN);
		goto out_wipe;
	}
	s->key = malloc(len);
	if (s->key == NULL) {
		snprintf(err, errlen, "secret-file %s: out of memory", path);
		goto out_wipe;
	}
	memcpy(s->key, buf, len);
	s->len = len;
	OPENSSL_cleanse(buf, sizeof(buf));
	close(fd);
	return 0;

out_wipe:
	OPENSSL_cleanse(buf, sizeof(buf));
out_close:
	close(fd);
	return -1;
}

int
rb_secret_id(const struct rb_secret *s, uint8_t id[RB_MAC_LEN])
{
	static const char label[] = "rdmablk-key-id";
	unsigned int outlen = 0;

	if (s->key == NULL)
		return -1;
	if (HMAC(EVP_sha256(), s->key, (int)s->len, (const uint8_t *)label,
		 sizeof(label) - 1, id, &outlen) == NULL || outlen != RB_MAC_LEN)
		return -1;
	return 0;
}

/* From the kernel's CSPRNG, not RAND_bytes: OpenSSL's generator keeps
 * state per thread, freed by a thread-exit destructor, and the library runs
 * in its callers' threads (nbdkit's), which may exit while the process
 * does (rb_crypto_no_atexit). */
int
rb_auth_nonce(uint8_t nonce[RB_NONCE_LEN])
{
	return getrandom(nonce, RB_NONCE_LEN, 0) == RB_NONCE_LEN ? 0 : -1;
}

void
rb_crypto_no_atexit(void)
{
	/* A thread that ends while the process exits runs OpenSSL's
	 * thread-exit destructor; after OpenSSL's atexit cleanup it takes a
	 * lock that was freed (nbdkit SIGSEGV at exit, test-plugin-sigterm). */
	OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}

/* B of auth.h: 40 bytes, the QPNs little-endian. */
#define BIND_LEN (2 * 16 + 2 * 4)

static void
put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static size_t
bind_encode(uint8_t *p, const struct rb_auth_bind *b)
{
	memcpy(p, b->initiator_gid, 16);
	put_le32(p + 16, b->initiator_qpn);
	memcpy(p + 20, b->target_gid, 16);
	put_le32(p + 36, b->target_qpn);
	return BIND_LEN;
}

static int
mac(const struct rb_secret *s, const char *label, const uint8_t *n1,
    const uint8_t *n2, const struct rb_auth_bind *b, const char *export_name,
    uint8_t out[RB_MAC_LEN])
{
	uint8_t msg[32 + 2 * RB_NONCE_LEN + BIND_LEN + RB_EXPORT_NAME_MAX];
	size_t ll = strlen(label), nl = strnlen(export_name, RB_EXPORT_NAME_MAX), len = 0;
	unsigned int outlen = 0;
	int ok;

	if (s->key == NULL || b == NULL || ll > 32)
		return -1;
	memcpy(msg, label, ll);
	len += ll;
	memcpy(msg + len, n1, RB_NONCE_LEN);
	len += RB_NONCE_LEN;
	memcpy(msg + len, n2, RB_NONCE_LEN);
	len += RB_NONCE_LEN;
	len += bind_encode(msg + len, b);
	memcpy(msg + len, export_name, nl);
	len += nl;
	ok = HMAC(EVP_sha256(), s->key, (int)s->len, msg, len, out, &outlen) != NULL &&
		outlen == RB_MAC_LEN;
	OPENSSL_cleanse(msg, sizeof(msg));
	return ok ? 0 : -1;
}

int
rb_auth_mac_target(const struct rb_secret *s, const uint8_t ni[RB_NONCE_LEN],
		   const uint8_t nt[RB_NONCE_LEN], const struct rb_auth_bind *b,
		   const char *export_name, uint8_t out[RB_MAC_LEN])
{
	return mac(s, "rdmablk-target", ni, nt, b, export_name, out);
}

int
rb_auth_mac_initiator(const struct rb_secret *s, const uint8_t ni[RB_NONCE_LEN],
		      const uint8_t nt[RB_NONCE_LEN], const struct rb_auth_bind *b,
		      const char *export_name, uint8_t out[RB_MAC_LEN])
{
	return mac(s, "rdmablk-initiator", nt, ni, b, export_name, out);
}

int
rb_auth_mac_equal(const uint8_t a[RB_MAC_LEN], const uint8_t b[RB_MAC_LEN])
{
	return CRYPTO_memcmp(a, b, RB_MAC_LEN) == 0;
}
