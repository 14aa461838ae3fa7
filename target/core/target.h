/* rdmablk-target: the daemon's shared state and the objects that live in it.
 *
 *   struct target    one per process: config, event loops, listener, lists
 *   struct loop      one per event loop (`threads =`, loop.h)
 *   struct device    one per RDMA device: PD and the pre-registered pool
 *   struct export    one per [export]: backing fd and its flusher
 *   struct conn      one per RDMA CM connection (conn.c)
 *   struct req       one request slot of a connection (request.c)
 *
 * A connection, and each request of it, is touched by its own loop's
 * thread only; what the loops share is guarded as loop.h says.  The
 * worker threads (io_uring's fallback, ioq.h) see nothing but struct job. */
#ifndef RDMABLK_TARGET_TARGET_H
#define RDMABLK_TARGET_TARGET_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <sys/queue.h>

#include "config/config.h"
#include "io/flusher.h"
#include "io/ioq.h"
#include "io/pool.h"
#include "io/workq.h"
#include "protocol.h"
#include "stats.h"

/* What an epoll event's data.ptr points at: who handles the fd's events,
 * and on what.  The loop calls fn(eh, events) and knows nothing else of
 * its owner: the CM channels (listener.c), each connection's completion
 * channel (conn.c), a loop's ioq and wake eventfds (loop-threads.c), the
 * signalfd (daemon.c), the admin and metrics sockets (reqserv.c) and an
 * RBD export's completions (export.c). */
struct ep_handler;
typedef void ep_handler_fn(struct ep_handler *eh, uint32_t events);

struct ep_handler {
	ep_handler_fn *fn;
	void *obj;
};

/* wr_id of every work request points at one of these. */
enum wr_type {
	WR_RECV,        /* a receive buffer (struct recv_buf) */
	WR_SEND,        /* a request's reply SEND (struct req) */
	WR_RDMA,        /* a request's RDMA READ of WRITE data (struct req) */
	WR_DATA,        /* a READ's RDMA WRITE of its data, unsignaled: a
	                 * completion only when it fails (struct req) */
	WR_CTRL,        /* a connection's control SEND (struct conn) */
	WR_PROBE,       /* a connection's liveness probe (struct conn) */
};

struct wr_ctx {
	enum wr_type type;      /* first field: read before anything else */
	void *obj;
};

struct device {
	STAILQ_ENTRY(device) link;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct pool **pools;        /* one per loop: buffer-pool split evenly */
	unsigned npools;
	struct ibv_device_attr attr;
};

struct export {
	STAILQ_ENTRY(export) link;
	struct cfg_export *cfg;     /* owned: detached from its struct config */
	struct flusher *flusher;    /* loop 0's, which holds the failed state */
	struct flusher **flushers;  /* one per loop, [0] == flusher */
	unsigned nflushers;
	unsigned nconns;            /* under t->lock */
	uint64_t sessions;          /* connections that finished the handshake here; t->lock */
	int removed;                /* gone from the config: drain, then free */
	int keep;                   /* scratch for exports_apply() */
	int no_nowait;              /* its file refused RWF_NOWAIT: no page-cache fast path */
	int no_nowait_write;        /* no page cache for writes either (RBD) */
	struct ep_handler rbd_eh;   /* an RBD export's completion eventfd */
	int epfd;                   /* the loop's, where rbd_eh is registered */
	struct stats_io stats;      /* of its closed connections */
};

struct conn;
struct admin;
struct reqserv;
struct loop;

/* What the daemon does on every loop besides handling events (daemon.c),
 * set before any loop runs. */
struct loop_hooks {
	/* After each pass over a round (its backing I/O submitted first): 1
	 * when it freed room that a waiter has not seen yet, so that the loop
	 * runs another round at once instead of sleeping. */
	int  (*after_round)(struct loop *l);
	/* Loop 0, once after each round. */
	void (*tick)(struct target *t);
};

struct target {
	struct config *cfg;         /* [target] settings; exports moved out */
	const char *config_file;
	int epfd;                   /* loop 0's */
	int sigfd;
	struct ep_handler cm_eh, sig_eh;
	struct rdma_event_channel *cm_channel;
	struct rdma_cm_id *listen_id;
	STAILQ_HEAD(, device) devices;
	STAILQ_HEAD(, export) exports;
	struct loop **loops;        /* nloops event loops; [0] is the main thread's */
	unsigned nloops;
	pthread_mutex_t lock;       /* the counters below (loop.h) */
	unsigned nconns;
	unsigned nhandshakes;       /* conns not yet READY (HELLO/AUTH not done) */
	int reap_pending;           /* a removed export lost its last connection */
	/* listener.c: refusals at CONNECT_REQUEST are logged at most
	 * LISTENER_LOG_PER_S a second for each reason, so that a flood of one
	 * kind cannot hide another; the rest are counted, then summed up in
	 * their reason's next line */
	uint64_t refuse_log_sec;
	unsigned refuse_log_n[STATS_REFUSED__COUNT];
	unsigned refuse_log_dropped[STATS_REFUSED__COUNT];
	int shutting_down;
	uint64_t shutdown_ns;       /* when SIGTERM came: daemon.c bounds the drain */
	uint64_t next_conn_id;
	struct stats_target stats;
	struct admin *admin;        /* NULL: no admin socket */
	struct reqserv *metrics;    /* NULL: no metrics-listen (metrics.h) */
	const struct loop_hooks *hooks;
};

/* device.c */
struct device *device_get(struct target *t, struct ibv_context *verbs);
void device_destroy_all(struct target *t);

/* export.c */
int  exports_apply(struct target *t, struct config *newcfg);
struct export *export_find(struct target *t, const char *name);
void export_put_conn(struct target *t, struct export *e);
/* At HELLO: count c's connection to e, or -1 when e has max-connections. */
int  export_take_conn(struct target *t, struct export *e);
/* Loop 0: free removed exports that lost their last connection. */
void exports_reap_pending(struct target *t);
/* Loop 0, once a round: a failed RBD export reopens its image (rbd.h). */
void exports_tick(struct target *t);
/* Every loop's flusher statistics of e, summed. */
void export_flusher_stats(const struct export *e, struct flusher_stats *st);
void exports_destroy_all(struct target *t);
/* 1 when some export allows this peer (the CONNECT_REQUEST check). */
int  exports_any_allows(struct target *t, const struct sockaddr *sa);
uint32_t export_flags(const struct export *e);

/* revoke.c: after a reload, drain every live connection that its export's
 * new config would no longer admit (allow, key, size), one log line each. */
void conns_revoke(struct target *t);

/* cm-channel.c: a non-blocking RDMA CM event channel; NULL after one log
 * line naming who (no RDMA device at all: no_rdma_device()). */
struct rdma_event_channel *cm_channel_create(const struct target *t, const char *who);

/* listener.c: listen, and watch every loop's CM channel (the loops exist). */
int  listener_start(struct target *t);
void listener_stop(struct target *t);
/* The [target] limits (max-connections-total, max-handshakes,
 * max-connections-per-address), checked at CONNECT_REQUEST before anything
 * is allocated.  Returns 0, or -1 with the refusal in *stat and why. */
int  listener_over_limit(const struct target *t, const struct sockaddr *peer,
			 enum stats_refusal *stat, char *why, size_t size);

/* loop-run.c: add fd to the epoll set epfd for EVENTS; its events go to
 * fn(eh, events), with eh set to (fn, obj) first.  -1 with errno set: the
 * caller logs. */
int  ep_watch(int epfd, int fd, uint32_t events, struct ep_handler *eh, ep_handler_fn *fn,
	      void *obj);

/* Message for a host without RDMA; the exact text is a contract. */
void no_rdma_device(const struct target *t) __attribute__((noreturn));

#endif
