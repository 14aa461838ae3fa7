/* Shared-secret authentication (docs/security.md): loading a secret file
 * and the two HMAC-SHA256 proofs of the mutual challenge-response.
 *
 *   B  = Gi || QPNi || Gt || QPNt
 *   Mt = HMAC(K, "rdmablk-target"    || Ni || Nt || B || export_name)
 *   Mi = HMAC(K, "rdmablk-initiator" || Nt || Ni || B || export_name)
 *
 * Ni: the initiator's nonce (HELLO), Nt: the target's (CHALLENGE); both 32
 * fresh random bytes per connection.  B binds both proofs to the connection
 * as the computing side sees it: Gi/Gt the initiator's and the target's
 * GIDs (16 bytes each), QPNi/QPNt their QP numbers (4 bytes, little-endian).
 * A relay in the middle holds two connections with other QPs (and GIDs), so
 * a proof passed through it does not match.  export_name: its bytes,
 * without NUL. */
#ifndef RDMABLK_AUTH_H
#define RDMABLK_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

#define RB_SECRET_MAX 4096     /* bytes in a secret file, at most */
#define RB_SECRET_MIN 32       /* and at least: one handshake allows offline guessing */

struct rb_secret {
	uint8_t *key;          /* NULL: none */
	size_t   len;
};

/* What one side sees of the connection, in initiator/target order whichever
 * side fills it in (rb_qp_view, common/qpview.h). */
struct rb_auth_bind {
	uint8_t  initiator_gid[16];
	uint32_t initiator_qpn;
	uint8_t  target_gid[16];
	uint32_t target_qpn;
};

/* Read PATH: refuse a symlink (O_NOFOLLOW), a file owned by anyone but us or
 * root, one readable or writable by group or others (as ssh does), and one
 * under RB_SECRET_MIN or over RB_SECRET_MAX bytes; strip one trailing
 * newline.  0, or -1 with a message in err ("secret-file PATH: ..."). */
int  rb_secret_load(const char *path, struct rb_secret *s, char *err, size_t errlen);
/* Wipe (OPENSSL_cleanse) and free; s is left empty.  NULL-safe. */
void rb_secret_wipe(struct rb_secret *s);

/* A key's identity, HMAC(K, "rdmablk-key-id"): equal for equal keys, and
 * tells nothing of K, so a connection can remember which key it
 * authenticated with without keeping a copy of it.  0 or -1. */
int  rb_secret_id(const struct rb_secret *s, uint8_t id[RB_MAC_LEN]);

/* Fresh nonce from getrandom(2).  0 or -1. */
int  rb_auth_nonce(uint8_t nonce[RB_NONCE_LEN]);
/* Before any other use of libcrypto in a process whose threads may still
 * end while it exits (nbdkit): no OpenSSL cleanup at exit. */
void rb_crypto_no_atexit(void);
/* The target's proof Mt and the initiator's proof Mi over the connection
 * as this side sees it.  0 or -1. */
int  rb_auth_mac_target(const struct rb_secret *s, const uint8_t ni[RB_NONCE_LEN],
			const uint8_t nt[RB_NONCE_LEN], const struct rb_auth_bind *b,
			const char *export_name, uint8_t mac[RB_MAC_LEN]);
int  rb_auth_mac_initiator(const struct rb_secret *s, const uint8_t ni[RB_NONCE_LEN],
			   const uint8_t nt[RB_NONCE_LEN], const struct rb_auth_bind *b,
			   const char *export_name, uint8_t mac[RB_MAC_LEN]);
/* Constant time: 1 when equal. */
int  rb_auth_mac_equal(const uint8_t a[RB_MAC_LEN], const uint8_t b[RB_MAC_LEN]);
/* Wipe any sensitive buffer (MACs, nonces, keys). */
void rb_auth_wipe(void *p, size_t len);

#endif
