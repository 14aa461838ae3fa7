/* Unit test for the [target] connection limits (docs/security.md): which limit
 * listener_over_limit names for a CONNECT_REQUEST, how peers are compared
 * (rb_sockaddr_same_host), and the memlock sum of target/ops/memlock.c.  No
 * RDMA needed: connections are bare struct conn on one loop's list. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "../../target/conn/conn.h"
#include "../../target/core/loop.h"
#include "../../target/ops/memlock.h"

#include "check.h"

static struct sockaddr_in
v4(const char *a, uint16_t port)
{
	struct sockaddr_in s;

	memset(&s, 0, sizeof(s));
	s.sin_family = AF_INET;
	s.sin_port = htons(port);
	inet_pton(AF_INET, a, &s.sin_addr);
	return s;
}

static struct sockaddr_in6
v6(const char *a, uint16_t port)
{
	struct sockaddr_in6 s;

	memset(&s, 0, sizeof(s));
	s.sin6_family = AF_INET6;
	s.sin6_port = htons(port);
	inet_pton(AF_INET6, a, &s.sin6_addr);
	return s;
}

static struct conn conns[8];
static struct loop loop0;
static struct loop *loops[1] = { &loop0 };

/* Put connection i from address a on t's list; handshaking or READY. */
static void
add(struct target *t, unsigned i, const char *a, int handshaking)
{
	struct sockaddr_in s = v4(a, (uint16_t)(40000 + i));
	struct conn *c = &conns[i];

	memset(c, 0, sizeof(*c));
	memcpy(&c->peer_sa, &s, sizeof(s));
	c->handshaking = handshaking;
	LIST_INSERT_HEAD(&loop0.conns, c, link);
	t->nconns++;
	t->nhandshakes += handshaking != 0;
}

static int
refusal(const struct target *t, const char *a, enum stats_refusal *stat, char *why)
{
	struct sockaddr_in s = v4(a, 5000);

	return listener_over_limit(t, (const struct sockaddr *)&s, stat, why, 96);
}

int
main(void)
{
	struct sockaddr_in a = v4("10.55.0.2", 1), b = v4("10.55.0.2", 2), c = v4("10.55.0.3", 1);
	struct sockaddr_in6 m = v6("::ffff:10.55.0.2", 3), x = v6("fd00::2", 1);
	enum stats_refusal stat = STATS_REFUSED__COUNT;
	struct config cfg;
	struct target t;
	struct memlock_need need;
	char why[96] = "";

	check(rb_sockaddr_same_host((struct sockaddr *)&a, (struct sockaddr *)&b),
	      "same IPv4 address, another port: same host");
	check(!rb_sockaddr_same_host((struct sockaddr *)&a, (struct sockaddr *)&c),
	      "another IPv4 address: another host");
	check(rb_sockaddr_same_host((struct sockaddr *)&a, (struct sockaddr *)&m),
	      "IPv4 and its IPv4-mapped IPv6 form: same host");
	check(!rb_sockaddr_same_host((struct sockaddr *)&m, (struct sockaddr *)&x),
	      "two IPv6 addresses: another host");

	memset(&cfg, 0, sizeof(cfg));
	memset(&t, 0, sizeof(t));
	STAILQ_INIT(&t.devices);
	STAILQ_INIT(&t.exports);
	t.cfg = &cfg;
	t.loops = loops;
	t.nloops = 1;
	cfg.max_conns_total = 6;
	cfg.max_handshakes = 3;
	cfg.max_conns_per_addr = 2;

	check(refusal(&t, "10.55.0.2", &stat, why) == 0, "no connection yet: accepted");
	add(&t, 0, "10.55.0.2", 1);
	add(&t, 1, "10.55.0.2", 0);
	check(refusal(&t, "10.55.0.2", &stat, why) < 0 && stat == STATS_REFUSED_ADDRESS_LIMIT &&
	      strstr(why, "max-connections-per-address (2)") != NULL,
	      "a third from one address: address_limit, naming max-connections-per-address");
	check(refusal(&t, "10.55.0.3", &stat, why) == 0, "another address: accepted");
	add(&t, 2, "10.55.0.3", 1);
	add(&t, 3, "10.55.0.4", 1);
	check(refusal(&t, "10.55.0.5", &stat, why) < 0 && stat == STATS_REFUSED_HANDSHAKE_LIMIT &&
	      strstr(why, "max-handshakes (3)") != NULL,
	      "three handshakes in progress: handshake_limit, naming max-handshakes");
	conns[3].handshaking = 0;
	t.nhandshakes--;
	check(refusal(&t, "10.55.0.5", &stat, why) == 0,
	      "one handshake done: a new address is accepted again");
	add(&t, 4, "10.55.0.5", 0);
	add(&t, 5, "10.55.0.6", 0);
	check(refusal(&t, "10.55.0.7", &stat, why) < 0 && stat == STATS_REFUSED_CONN_LIMIT &&
	      strstr(why, "max-connections-total (6)") != NULL,
	      "six connections: connection_limit, naming max-connections-total");

	memset(&cfg, 0, sizeof(cfg));
	cfg.queue_depth = 128;
	cfg.max_io = 1u << 20;
	cfg.buffer_pool = (64ull << 20) + 12345;     /* whole buffers only */
	cfg.max_conns_total = 256;
	memlock_need(&cfg, &need);
	check(need.pool == (64ull << 20) + 64 * 64,
	      "memlock: the pool as registered (whole max-io buffers and their header areas)");
	check(need.per_conn == 129ull * RB_MSG_BUF_SIZE + RB_CTRL_MSG_MAX +
	      (260 + 129) * MEMLOCK_QUEUE_BYTES_PER_WR,
	      "memlock: a connection = (queue-depth + 1) receive buffers + control + queues");
	check(need.total == need.pool + 256 * need.per_conn + MEMLOCK_SLACK,
	      "memlock: pool + max-connections-total x per connection + slack");
	check(need.total <= 256ull << 20,
	      "memlock: the defaults fit the unit's LimitMEMLOCK=256M");

	printf("test-limits: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
