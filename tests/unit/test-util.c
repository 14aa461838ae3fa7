/* Unit tests for common/util.c: sizes, booleans, addresses, prefixes. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

#include "check.h"

static void
test_sizes(void)
{
	uint64_t v = 0;

	CHECK(rb_parse_size("4096", &v) == 0 && v == 4096);
	CHECK(rb_parse_size("64K", &v) == 0 && v == 65536);
	CHECK(rb_parse_size("1m", &v) == 0 && v == 1u << 20);
	CHECK(rb_parse_size("10G", &v) == 0 && v == 10ull << 30);
	CHECK(rb_parse_size("2T", &v) == 0 && v == 2ull << 40);
	CHECK(rb_parse_size("1MiB", &v) == 0 && v == 1u << 20);
	CHECK(rb_parse_size("", &v) == -EINVAL);
	CHECK(rb_parse_size("-1", &v) == -EINVAL);
	CHECK(rb_parse_size(" 1", &v) == -EINVAL);
	CHECK(rb_parse_size("1X", &v) == -EINVAL);
	CHECK(rb_parse_size("1KK", &v) == -EINVAL);
	CHECK(rb_parse_size("99999999999999999999", &v) == -ERANGE);
	CHECK(rb_parse_size("20000000T", &v) == -ERANGE);
}

static void
test_numbers(void)
{
	uint64_t v;
	int b;

	CHECK(rb_parse_uint("10810", 1, 65535, &v) == 0 && v == 10810);
	CHECK(rb_parse_uint("0", 1, 65535, &v) == -ERANGE);
	CHECK(rb_parse_uint("65536", 1, 65535, &v) == -ERANGE);
	CHECK(rb_parse_uint("12a", 1, 65535, &v) == -EINVAL);
	CHECK(rb_parse_uint("+5", 1, 65535, &v) == -EINVAL);
	CHECK(rb_parse_bool("yes", &b) == 0 && b == 1);
	CHECK(rb_parse_bool("Off", &b) == 0 && b == 0);
	CHECK(rb_parse_bool("TRUE", &b) == 0 && b == 1);
	CHECK(rb_parse_bool("maybe", &b) == -EINVAL);
}

static void
test_addresses(void)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char s[64];

	CHECK(rb_sockaddr_parse("10.55.0.1", 10810, &ss, &len) == 0);
	CHECK(ss.ss_family == AF_INET && len == sizeof(struct sockaddr_in));
	CHECK(strcmp(rb_sockaddr_str((struct sockaddr *)&ss, s, sizeof(s)), "10.55.0.1:10810") == 0);
	CHECK(rb_sockaddr_parse("[fe80::1]", 1, &ss, &len) == 0 && ss.ss_family == AF_INET6);
	CHECK(strcmp(rb_sockaddr_str((struct sockaddr *)&ss, s, sizeof(s)), "[fe80::1]:1") == 0);
	CHECK(rb_sockaddr_parse("::", 1, &ss, &len) == 0);
	CHECK(rb_sockaddr_parse("host.example", 1, &ss, &len) == -EINVAL);
	CHECK(rb_sockaddr_parse("10.55.0.256", 1, &ss, &len) == -EINVAL);
	CHECK(rb_sockaddr_parse("", 1, &ss, &len) == -EINVAL);
}

static void
test_prefixes(void)
{
	struct rb_prefix p;
	struct sockaddr_storage ss;
	socklen_t len;

	CHECK(rb_prefix_parse("10.55.0.0/24", &p) == 0 && p.bits == 24);
	rb_sockaddr_parse("10.55.0.9", 0, &ss, &len);
	CHECK(rb_prefix_match(&p, (struct sockaddr *)&ss) == 1);
	rb_sockaddr_parse("10.55.1.9", 0, &ss, &len);
	CHECK(rb_prefix_match(&p, (struct sockaddr *)&ss) == 0);
	rb_sockaddr_parse("::ffff:10.55.0.3", 0, &ss, &len);
	CHECK(rb_prefix_match(&p, (struct sockaddr *)&ss) == 1);
	CHECK(rb_prefix_parse("10.55.0.7", &p) == 0 && p.bits == 32);
	rb_sockaddr_parse("10.55.0.7", 0, &ss, &len);
	CHECK(rb_prefix_match(&p, (struct sockaddr *)&ss) == 1);
	rb_sockaddr_parse("10.55.0.6", 0, &ss, &len);
	CHECK(rb_prefix_match(&p, (struct sockaddr *)&ss) == 0);
	CHECK(rb_prefix_parse("10.55.0.0/20", &p) == 0);
	rb_sockaddr_parse("10.55.15.255", 0, &ss, &len);
	CHECK(rb_prefix_match(&p, (struct sockaddr *)&ss) == 1);
	rb_sockaddr_parse("10.55.16.0", 0, &ss, &len);
	CHECK(rb_prefix_match(&p, (struct sockaddr *)&ss) == 0);
	CHECK(rb_prefix_parse("fd00::/8", &p) == 0 && p.family == AF_INET6);
	rb_sockaddr_parse("fd12::1", 0, &ss, &len);
	CHECK(rb_prefix_match(&p, (struct sockaddr *)&ss) == 1);
	rb_sockaddr_parse("10.0.0.1", 0, &ss, &len);
	CHECK(rb_prefix_match(&p, (struct sockaddr *)&ss) == 0);
	CHECK(rb_prefix_parse("0.0.0.0/0", &p) == 0);
	CHECK(rb_prefix_match(&p, (struct sockaddr *)&ss) == 1);
	CHECK(rb_prefix_parse("10.55.0.0/33", &p) == -EINVAL);
	CHECK(rb_prefix_parse("10.55.0.0/", &p) == -EINVAL);
	CHECK(rb_prefix_parse("garbage", &p) == -EINVAL);
	CHECK(rb_prefix_parse("10.55.0.0/24/1", &p) == -EINVAL);
}

int
main(void)
{
	test_sizes();
	test_numbers();
	test_addresses();
	test_prefixes();
	printf("test-util: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
