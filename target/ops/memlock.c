/* What a configuration can pin (target/ops/memlock.h).
 *
 * Everything the target registers: the buffer pool (one per RDMA device,
 * each buffer with its header area, io/pool.h),
 * and per connection its receive ring ((queue-depth + 1) buffers of
 * RB_MSG_BUF_SIZE once HELLO succeeded; CONN_HANDSHAKE_RECVS before), its
 * control buffer (RB_CTRL_MSG_MAX) and its queues.  Connections are at most
 * max-connections-total, so the sum is finite, and the systemd unit's
 * LimitMEMLOCK can be set from it: rdmablk-target -n prints it. */
#include <sys/resource.h>

#include "io/pool.h"
#include "log.h"
#include "memlock.h"
#include "protocol.h"

void
memlock_need(const struct config *c, struct memlock_need *m)
{
	uint64_t qd = c->queue_depth;

	m->pool = c->buffer_pool / c->max_io * (c->max_io + POOL_HDR_SIZE);
	m->per_conn = (qd + 1) * RB_MSG_BUF_SIZE + RB_CTRL_MSG_MAX +
		((2 * qd + 4) + (qd + 1)) * MEMLOCK_QUEUE_BYTES_PER_WR;
	m->conns = c->max_conns_total;
	m->slack = MEMLOCK_SLACK;
	m->total = m->pool + m->conns * m->per_conn + m->slack;
}

void
memlock_check(const struct config *c)
{
	struct memlock_need m;
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return;
	memlock_need(c, &m);
	if ((uint64_t)rl.rlim_cur < m.total)
		log_warnx("the locked-memory limit (%llu bytes) is below the %llu bytes this "
			  "configuration can pin (rdmablk-target -n): registrations may fail; "
			  "raise LimitMEMLOCK or lower max-connections-total, queue-depth or "
			  "buffer-pool", (unsigned long long)rl.rlim_cur,
			  (unsigned long long)m.total);
}
