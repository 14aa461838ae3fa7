/* How much memory a configuration can pin (register), for LimitMEMLOCK. */
#ifndef RDMABLK_TARGET_MEMLOCK_H
#define RDMABLK_TARGET_MEMLOCK_H

#include <stdint.h>

#include "config/config.h"

/* Per connection, beyond its receive ring and control buffer: the QP's and
 * CQs' rings, which hardware providers allocate in the process and pin
 * (rxe keeps them in the kernel): a generous 64 bytes per WQE and per CQE
 * for the send queue (2 * depth + 4) and the receive queue (depth + 1). */
#define MEMLOCK_QUEUE_BYTES_PER_WR 128u
/* libibverbs' and the provider's own pinned pages (doorbells, UAR). */
#define MEMLOCK_SLACK (8ull << 20)

struct memlock_need {
	uint64_t pool;        /* buffer-pool as registered (whole max-io buffers) */
	uint64_t per_conn;    /* a connection at the full queue-depth */
	unsigned conns;       /* max-connections-total */
	uint64_t slack;
	uint64_t total;       /* pool + conns * per_conn + slack */
};

/* The bound for one RDMA device (a wildcard listen address registers a
 * pool on every device that gets a connection). */
void memlock_need(const struct config *c, struct memlock_need *m);
/* Warn (one line) when RLIMIT_MEMLOCK is below what c can pin. */
void memlock_check(const struct config *c);

#endif
