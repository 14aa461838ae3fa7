/* Small parsing and formatting helpers shared by the target and initiator. */
#ifndef RDMABLK_UTIL_H
#define RDMABLK_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* What an operator does when no RDMA device is visible: the same words from
 * the target and every initiator front end. */
#define RB_NO_RDMA_HINT "load the RNIC's driver, or create a Soft-RoCE device " \
	"with scripts/rxe-setup IFACE (rdma link add rxe0 type rxe netdev IFACE)"

/* "4096", "64K", "1M", "10G", "2T" (binary multiples).  Returns 0, or
 * -EINVAL for garbage or -ERANGE for overflow. */
int rb_parse_size(const char *s, uint64_t *out);
/* yes/no/true/false/on/off/1/0, case-insensitive.  0 or -EINVAL. */
int rb_parse_bool(const char *s, int *out);
/* A test hook's switch (docs/testing.md): 1 when the environment variable
 * name is exactly "1", else 0 (unset, empty, "yes", "0"...). */
int rb_test_hook_on(const char *name);
/* A decimal integer in [min, max].  0, -EINVAL or -ERANGE. */
int rb_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Numeric IPv4 or IPv6 address (no DNS) plus port into *ss. 0 or -EINVAL. */
int rb_sockaddr_parse(const char *host, uint16_t port,
		      struct sockaddr_storage *ss, socklen_t *len);
/* "10.55.0.1:10810" or "[fe80::1]:10810"; never fails, returns buf. */
const char *rb_sockaddr_str(const struct sockaddr *sa, char *buf, size_t size);

/* An address prefix: "10.55.0.0/24", "10.55.0.7", "fd00::/8". */
struct rb_prefix {
	int      family;          /* AF_INET or AF_INET6 */
	uint8_t  addr[16];
	unsigned bits;
};
int rb_prefix_parse(const char *s, struct rb_prefix *p);
/* 1 when sa (IPv4, IPv6 or IPv4-mapped IPv6) is inside p. */
int rb_prefix_match(const struct rb_prefix *p, const struct sockaddr *sa);

/* 1 when a and b (IPv4, IPv6, or IPv4-mapped IPv6) are the same host
 * address; ports are not compared. */
int rb_sockaddr_same_host(const struct sockaddr *a, const struct sockaddr *b);

/* Set O_NONBLOCK on fd (a CM or completion channel).  0 or -errno. */
int rb_fd_set_nonblock(int fd);

/* Monotonic clock in nanoseconds. */
uint64_t rb_now_ns(void);

#endif
