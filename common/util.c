/* Small parsing and formatting helpers (common/util.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util.h"

/* The leading decimal digits of s into *v, *end after them: 0, -EINVAL (no
 * digit first: no sign, no space) or -ERANGE. */
static int
parse_digits(const char *s, unsigned long long *v, char **end)
{
	if (s == NULL || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, end, 10);
	return errno == ERANGE ? -ERANGE : 0;
}

int
rb_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int r = parse_digits(s, &v, &end);

	if (r < 0)
		return r;
	if (*end != '\0')
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int
rb_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;
	int r = parse_digits(s, &v, &end);

	if (r < 0)
		return r;
	switch (*end) {
	case '\0':                break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default:
		return -EINVAL;
	}
	/* Allow "1MiB" and "1MB" spellings of the same binary multiple. */
	if (shift != 0 && (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0))
		end += strlen(end);
	if (*end != '\0')
		return -EINVAL;
	if (shift != 0 && v > (ULLONG_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

int
rb_test_hook_on(const char *name)
{
	const char *env = getenv(name);

	return env != NULL && strcmp(env, "1") == 0;
}

int
rb_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

int
rb_sockaddr_parse(const char *host, uint16_t port, struct sockaddr_storage *ss,
		  socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char buf[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(host);

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		*len = sizeof(*sin);
		return 0;
	}
	/* Accept "[::1]" as well as "::1". */
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof(buf)) {
		memcpy(buf, host + 1, n - 2);
		buf[n - 2] = '\0';
		host = buf;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*len = sizeof(*sin6);
		return 0;
	}
	return -EINVAL;
}

const char *
rb_sockaddr_str(const struct sockaddr *sa, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN];

	if (sa == NULL) {
		snprintf(buf, size, "(none)");
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, a, sizeof(a));
		snprintf(buf, size, "%s:%u", a, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &sin6->sin6_addr, a, sizeof(a));
		snprintf(buf, size, "[%s]:%u", a, ntohs(sin6->sin6_port));
	} else {
		snprintf(buf, size, "(family %d)", sa->sa_family);
	}
	return buf;
}

static const uint8_t v4mapped[12] = { 0,0,0,0,0,0,0,0,0,0,0xff,0xff };

int
rb_prefix_parse(const char *s, struct rb_prefix *p)
{
	char buf[INET6_ADDRSTRLEN + 8];
	char *slash;
	uint64_t bits;
	unsigned max;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash != NULL)
		*slash++ = '\0';
	memset(p, 0, sizeof(*p));
	if (inet_pton(AF_INET, buf, p->addr) == 1) {
		p->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, p->addr) == 1) {
		p->family = AF_INET6;
		max = 128;
	} else {
		return -EINVAL;
	}
	p->bits = max;
	if (slash != NULL) {
		if (rb_parse_uint(slash, 0, max, &bits) < 0)
			return -EINVAL;
		p->bits = (unsigned)bits;
	}
	if (p->family == AF_INET6 && p->bits >= 96 &&
	    memcmp(p->addr, v4mapped, sizeof(v4mapped)) == 0) {
		/* ::ffff:a.b.c.d/96+n is a.b.c.d/n: one family per peer, so
		 * prefix lengths compare (cfg_export_secret). */
		memmove(p->addr, p->addr + 12, 4);
		memset(p->addr + 4, 0, sizeof(p->addr) - 4);
		p->family = AF_INET;
		p->bits -= 96;
	}
	return 0;
}

static int
bits_equal(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;

	if (memcmp(a, b, whole) != 0)
		return 0;
	if (rest == 0)
		return 1;
	return ((a[whole] ^ b[whole]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* An IPv4-mapped IPv6 peer is its IPv4 address: it matches IPv4
 * prefixes only (and ::ffff:0:0/96-style lines are IPv4 prefixes,
 * rb_prefix_parse), so a longer prefix is always a narrower one. */
int
rb_prefix_match(const struct rb_prefix *p, const struct sockaddr *sa)
{
	const uint8_t *a;
	int family = sa->sa_family;

	if (family == AF_INET) {
		a = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
	} else if (family == AF_INET6) {
		a = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (memcmp(a, v4mapped, sizeof(v4mapped)) == 0) {
			family = AF_INET;
			a += 12;
		}
	} else {
		return 0;
	}
	return p->family == family && bits_equal(a, p->addr, p->bits);
}

/* The address as 16 bytes, IPv4 as IPv4-mapped IPv6; 0, or -1 for
 * another family. */
static int
host_bytes(const struct sockaddr *sa, uint8_t out[16])
{
	if (sa->sa_family == AF_INET) {
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return 0;
	}
	return -1;
}

int
rb_sockaddr_same_host(const struct sockaddr *a, const struct sockaddr *b)
{
	uint8_t x[16], y[16];

	if (host_bytes(a, x) < 0 || host_bytes(b, y) < 0)
		return 0;
	return memcmp(x, y, sizeof(x)) == 0;
}

uint64_t
rb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int
rb_fd_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}
