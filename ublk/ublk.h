/* rdmablk-ublk: an rdmablk export as a Linux ublk block device.
 *
 * The control path (ctrl.c) talks to /dev/ublk-control through io_uring
 * commands; each ublk queue has one thread (queue.c) with its own io_uring
 * on /dev/ublkcN and its own RDMA connections (rb_clients driven through
 * the asynchronous API; one unless connections=N), so a request never
 * changes thread between the kernel and the verbs. */
#ifndef RDMABLK_UBLK_H
#define RDMABLK_UBLK_H

#include <liburing.h>
#include <linux/ublk_cmd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "rdmablk.h"
#include "spin.h"

/* Newer than Debian 12's 6.1 uapi header: only what we use. */
#ifndef UBLK_CMD_GET_FEATURES
#define UBLK_CMD_GET_FEATURES   0x13
#endif
#ifndef UBLK_F_CMD_IOCTL_ENCODE
#define UBLK_F_CMD_IOCTL_ENCODE (1ULL << 6)
#endif
/* The ioctl-encoded opcodes (every kernel reporting UBLK_F_CMD_IOCTL_ENCODE
 * takes them; the bare ones need CONFIG_BLKDEV_UBLK_LEGACY_OPCODES). */
#define UB_CMD(nr)      _IOWR('u', nr, struct ublksrv_ctrl_cmd)
#define UB_CMD_R(nr)    _IOR('u', nr, struct ublksrv_ctrl_cmd)
#define UB_IO(nr)       _IOWR('u', nr, struct ublksrv_io_cmd)

#define UB_MAX_QUEUES   16
/* queues=N: two by default, which the kernel caps at one per CPU.  On two
 * CPUs two queues cost a QD1 read 17-34 % less guest CPU than one in three
 * bench boots (docs/performance.md, "One queue or two, again"). */
#define UB_DEFAULT_QUEUES 2
#define UB_MAX_DEPTH    1024
#define UB_MAX_CONNS    8       /* connections=N: RDMA connections per queue */
#define UB_DEFAULT_CONNS 2      /* two QPs for rxe/the RNIC to serve side by side */
/* busy-poll=adaptive: the queue thread spins up to four mean round trips
 * for a reply (the library's waits: two, common/spin.h).  A reply past
 * the spin costs this thread a second sleep on top of the one per request
 * for the next fetch; with two, 1-3 % of QD1 replies did. */
#define UB_SPIN_ROUND_TRIPS 4u

/* ctrl.c: /dev/ublk-control. */
struct ub_ctrl {
	int             fd;
	struct io_uring ring;
};
int  ub_ctrl_open(struct ub_ctrl *c);
void ub_ctrl_close(struct ub_ctrl *c);
/* One control command; buf/len is its in/out buffer, data0 its inline
 * argument.  Returns the kernel's result (>= 0) or a negative errno. */
int  ub_ctrl_cmd(struct ub_ctrl *c, unsigned op, uint32_t dev_id, void *buf,
		 uint16_t len, uint64_t data0);

/* A device being served (dev.c). */
struct ub_queue;
struct ub_dev {
	struct rb_opts                opts;     /* busy_poll: ADAPTIVE unless set */
	unsigned                      nr_queues;
	int                           queues_set; /* queues= given, not the default */
	unsigned                      nr_conns; /* connections=: per queue */
	unsigned                      depth;
	struct ublksrv_ctrl_dev_info  info;     /* the kernel's reply to ADD_DEV */
	struct rb_export_desc         desc;     /* from the first HELLO_REPLY */
	uint32_t                      io_bytes; /* per-request buffer: max_sectors */
	int                           cdev_fd;
	struct ub_queue              *queues;
	struct rb_client             *first;    /* queue 0's client, opened to learn the export */
	unsigned                      queues_done; /* atomic: threads that ended */
	pthread_t                     main_tid; /* serve()'s thread: UB_SIG_QUEUE_DONE goes there */
	int                           steps_on; /* step-times=yes (steps.c) */
	uint64_t                      steps_inflight; /* atomic: fetched, not handed back */
	uint64_t                      steps_idle_ns;  /* atomic: when that last fell to 0 */
};

/* A queue thread that ends sends this to the main thread, which sleeps in
 * sigwaitinfo for it or a stop signal (main.c), with no periodic wake-up. */
#define UB_SIG_QUEUE_DONE SIGUSR1

/* steps.c: step-times=yes, a request's time inside the server by step. */
struct ub_steps_io {
	uint64_t fetched_ns, sent_ns;
};
struct ub_queue_steps {
	uint64_t sent, sent_ns;         /* fetched to sent */
	uint64_t rts, rt_ns;            /* sent to reaped */
	uint64_t handed, hand_ns;       /* reaped to handed back */
	uint64_t gaps, gap_ns;          /* idle gaps: handed back to the next fetch */
	uint64_t pauses, pause_ns;      /* idle gaps too long to be one */
	uint64_t pend, pend_sum_ns;     /* reaped, not handed back yet */
};

/* queue.c: one thread per queue. */
struct ub_queue {
	struct ub_dev     *dev;
	unsigned           id;
	pthread_t          tid;
	int                started;
	cpu_set_t          cpus;        /* the CPUs whose requests it serves */
	int                have_cpus;   /* GET_QUEUE_AFFINITY answered */
	/* Its RDMA connections (connections=N): a request goes to the one
	 * with the fewest outstanding, the first on a tie; each one's
	 * readiness fd is polled through the ring. */
	struct rb_client  *conns[UB_MAX_CONNS];
	unsigned           nconns;
	int                poll_armed[UB_MAX_CONNS];
	struct io_uring    ring;
	int                ring_ok;
	struct ublksrv_io_desc *iods;   /* mmap'ed from /dev/ublkcN */
	size_t             iods_len;
	char              *bufs;        /* depth x io_bytes */
	size_t             bufs_len;
	struct ub_io      *ios;         /* depth */
	unsigned           aborted;     /* tags the kernel will not send again */
	/* busy-poll=adaptive: the round trips measured, when the newest
	 * request was sent, whether the CQs were left unarmed by a spin,
	 * and how each spin ended (logged when the queue stops) */
	struct rb_spin     spin;
	uint64_t           sent_ns;
	int                unarmed;
	int                spun_last;   /* the last pass was a spin */
	uint64_t           spins_won, spins_lost, spin_yields;
	uint64_t           yielded_ns;  /* when the spin's last sched_yield returned */
	struct ub_queue_steps steps;    /* step-times=yes */
	int                ready;       /* FETCHes issued (under dev lock) */
	int                failed;
};
/* Prepare queue q (client, mmap, ring, buffers).  0 or -1 (logged). */
int  ub_queue_create(struct ub_queue *q);
void ub_queue_destroy(struct ub_queue *q);
/* The thread body: fetch, serve until every tag is aborted and nothing is
 * in flight. */
void *ub_queue_run(void *arg);
/* Set by queue threads when they have issued their FETCHes. */
void ub_queue_ready(struct ub_queue *q, int ok);

/* steps.c: each called only with step-times=yes (d->steps_on). */
void ub_steps_fetched(struct ub_queue *q, struct ub_steps_io *s);
void ub_steps_sent(struct ub_queue *q, struct ub_steps_io *s);
void ub_steps_reaped(struct ub_queue *q, struct ub_steps_io *s);
void ub_steps_handing(struct ub_queue *q);
void ub_steps_log(const struct ub_queue *q);

/* dev.c */
int  ub_dev_add(struct ub_dev *d, int *dev_id);
/* STOP_DEV (drains: the kernel waits for in-flight I/O, which the queue
 * threads finish), join the threads, close, DEL_DEV. */
void ub_dev_remove(struct ub_dev *d, int own_stop);
int  ub_del(int dev_id);
int  ub_list(void);

/* main.c: the log hook. */
/* Errors (LOG_ERR), and routine events (LOG_INFO), to stderr or syslog. */
void ub_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ub_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
