/* The target's event loops (`threads = N`, rdmablk.conf(5)).
 *
 * Each struct loop is one thread with its own epoll set, its own io_uring
 * (ioq), its own share of every device's buffer pool, its own flusher of
 * every export and its own list of connections, whose CQs, completion
 * channels and RDMA CM events it alone handles.  A request never leaves
 * the loop of its connection.  Connections are spread at CONNECT_REQUEST
 * over the loop with the fewest (as SPDK spreads qpairs over poll groups).
 *
 * Loop 0 is the main thread: it also owns the CM listener, the signalfd,
 * the admin socket, reloads and shutdown.  What the loops share is
 * guarded two ways:
 *   - the world lock: a loop other than 0 holds its run_lock for each
 *     round and drops it only around epoll_wait (and retakes it only
 *     while loop 0 has not asked to stop the world); loop 0 takes every
 *     run_lock (loops_stop_world) to reload, to set up a connection on
 *     another loop, to drain every connection at SIGTERM, to render
 *     --stats and to free removed exports.  So the export list, the
 *     config and every loop's connections change only while the other
 *     loops are stopped between rounds.
 *   - t->lock: the counters every loop updates (connections, handshakes,
 *     refusals, closed connections' stats, an export's connections).
 * With threads = 1 neither lock is taken: loop 0 runs alone, as before. */
#ifndef RDMABLK_TARGET_LOOPS_H
#define RDMABLK_TARGET_LOOPS_H

#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>

#include "target.h"

struct loop {
	struct target *t;
	unsigned idx;               /* t->loops[idx] */
	int epfd;
	struct ioq *ioq;            /* backing I/O: its io_uring, or its workers */
	struct ep_handler ioq_eh, wake_eh, cm_eh;
	int wakefd;                 /* eventfd: loop 0 changed something of ours */
	/* loops other than 0: the event channel its connections' cm_ids
	 * migrated to (loop 0's connections stay on t->cm_channel) */
	struct rdma_event_channel *cm_channel;
	LIST_HEAD(conn_list, conn) conns;  /* touched by this loop only */
	unsigned nconns;            /* on this loop: where the next one goes */
	uint64_t next_watch_ns;     /* connection deadlines: once a second */
	unsigned slow_jobs_peak;    /* most TRIM/WRITE_ZEROES one connection ran */
	pthread_t thread;
	int started;                /* thread running (loops other than 0) */
	pthread_mutex_t run_lock;   /* held for a round (loops other than 0) */
	/* Loop 0 asked to stop the world: the loop does not take its
	 * run_lock back until resumed (a mutex is not fair: a loop that
	 * drops and retakes it every round would starve loop 0). */
	pthread_mutex_t park_mu;
	pthread_cond_t resume;
	int stop_req;               /* under park_mu */
};

/* Every loop, with nothing running on them yet (main.c). */
int  loops_create(struct target *t, unsigned n);
/* Start the threads of loops 1..n-1; -1 if one cannot start. */
int  loops_start(struct target *t);
/* Wait for the threads: each leaves once shutting down and empty. */
void loops_join(struct target *t);
/* Join, then free every loop; every submitted job must have completed. */
void loops_destroy(struct target *t);

/* Loop 0 only: stop every other loop between two rounds, and let them go
 * again (waking each, so that what changed is acted on at once). */
void loops_stop_world(struct target *t);
void loops_start_world(struct target *t);

/* Loop 0, leaving on an error: the other loops fail their connections
 * and leave (no-op once shutting down). */
void loops_abort(struct target *t);

/* The loop with the fewest connections, for a new one (loop 0). */
struct loop *loops_pick(struct target *t);
/* Wake l out of epoll_wait (any thread). */
void loop_wake(struct loop *l);

/* Every loop's ioq statistics summed; jobs in flight; the most slow jobs
 * (TRIM/WRITE_ZEROES) one connection ran at once.  World stopped. */
void loops_ioq_stats(struct target *t, struct ioq_stats *st, unsigned *inflight,
		     unsigned *peak);

/* t->lock, when there is more than one loop. */
void target_lock(struct target *t);
void target_unlock(struct target *t);

/* Every connection of every loop.  The caller holds the world (or is the
 * only loop). */
#define FOR_EACH_CONN(t, li, c) \
	for ((li) = 0; (li) < (t)->nloops; (li)++) \
		LIST_FOREACH((c), &(t)->loops[li]->conns, link)

/* loop-run.c: one loop's rounds, until shutdown has emptied it. */
int  loop_run(struct loop *l);

#endif
