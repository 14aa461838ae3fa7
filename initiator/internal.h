/* Private to initiator/: one RDMA connection and its request slots. */
#ifndef RDMABLK_INTERNAL_H
#define RDMABLK_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "auth.h"
#include "protocol.h"
#include "rdmablk.h"
#include "spin.h"

#define RB_ERRBUF 256

/* ---- log.c ---- */
void rb_log(enum rb_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Format a failure reason into errbuf (RB_ERRBUF bytes) for the caller to
 * log or to retry quietly. */
void rb_seterr(char *errbuf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "no such export", "address not allowed", ... for a wire error code. */
const char *rb_reason(uint16_t err);

/* ---- region.c: one registered memory region ---- */
struct rb_region {
	void          *base;
	size_t         size;
	struct ibv_mr *mr;
};
int  rb_region_map(struct rb_region *r, size_t size, char *errbuf);
int  rb_region_register(struct rb_region *r, struct ibv_pd *pd, int access, char *errbuf);
int  rb_region_create(struct rb_region *r, struct ibv_pd *pd, size_t size,
		      int access, char *errbuf);
void rb_region_destroy(struct rb_region *r);

/* ---- the connection ---- */

/* wr_id of every work request points to one of these. */
enum rb_wr_kind {
	RB_WR_RECV,        /* a receive buffer, index into the recv ring */
	RB_WR_SEND_SLOT,   /* a request SEND, index = slot */
	RB_WR_SEND_CTRL,   /* the HELLO or LIST SEND */
	RB_WR_BIND,        /* a slot's memory window bind (unsignaled) */
	RB_WR_LOCAL_INV,   /* a slot's local invalidate of its window */
};
struct rb_wr_ctx {
	enum rb_wr_kind kind;
	uint32_t        index;
};

/* One request slot: a credit, a send buffer and a data buffer.
 *
 * Its state is the whole truth about where the request is; only
 * rb_slot_event_locked (slots.c) moves it.  The completion handlers
 * (cq.c) and the owner record events; the state machine decides.
 *
 *   FREE ──get──▶ POSTED ──reply, window invalid (or none)──▶ DONE ──owner returns──▶ RELEASED
 *                   │  │                                        ▲                        │
 *                   │  └─reply, window valid─▶ INVALIDATING ────┘ LOCAL_INV completed    │
 *                   │                                                                   │
 *                   └── reply to a keepalive NOP (nobody owns it) ──────────────────────┤
 *   FREE ◀────────────────────────── its SEND's completion reaped ──────────────────────┘
 *
 *   POSTED, INVALIDATING ──the connection dies──▶ ORPHANED (never reused)
 *
 * RELEASED is skipped (straight to FREE) when the SEND's completion was
 * reaped first; a SEND that was never posted goes POSTED -> FREE.  When the
 * connection dies, a POSTED or INVALIDATING slot becomes ORPHANED: its
 * request was not answered there, and the slot is never reused (the target
 * may still use its buffers until the QP is gone). */
enum rb_slot_state {
	RB_SLOT_FREE,         /* on the free list: no WR and no target access */
	RB_SLOT_POSTED,       /* claimed; SEND posted: waiting for the reply */
	RB_SLOT_INVALIDATING, /* replied, window still valid: our LOCAL_INV is posted */
	RB_SLOT_REPLIED,      /* replied; its SEND gathers the caller's bytes, not reaped yet */
	RB_SLOT_DONE,         /* replied, window invalid: the owner copies out */
	RB_SLOT_RELEASED,     /* nobody owns it; waits for its SEND completion */
	RB_SLOT_ORPHANED,     /* the connection died first: resend (or fail) the request */
};

/* What happened to a slot (rb_slot_event_locked). */
enum rb_slot_event {
	RB_SLOT_EV_SENT,        /* the request SEND's completion was reaped */
	RB_SLOT_EV_REPLY,       /* the reply arrived; it did not invalidate the window */
	RB_SLOT_EV_REPLY_INV,   /* the reply arrived with SEND_WITH_INV of the slot's key */
	RB_SLOT_EV_INVALIDATED, /* our LOCAL_INV of the window completed */
	RB_SLOT_EV_OWNER_DONE,  /* the owner copied out and returns the slot */
	RB_SLOT_EV_POST_FAILED, /* the SEND was never posted */
	RB_SLOT_EV_CONN_DEAD,   /* the connection died (rb_conn_mark_dead_locked) */
};

/* What the caller of rb_slot_event_locked does next (a bit mask). */
#define RB_SLOT_DO_WAKE_OWNER 1u  /* now DONE: wake (or queue, aio) its owner */
#define RB_SLOT_DO_POST_INV   2u  /* now INVALIDATING: post the LOCAL_INV */
#define RB_SLOT_DO_CREDIT     4u  /* now FREE and a thread waits on slot_cond */
#define RB_SLOT_DO_ARM_SEND   8u  /* now REPLIED: its SEND's completion must wake someone */

struct rb_slot {
	struct rb_wr_ctx    ctx;        /* wr_id of the request SEND */
	enum rb_slot_state  state;      /* stored atomically: owners peek without the lock */
	/* Set when the slot is taken, constant until it is FREE again: */
	int                 owned;      /* 0: nobody waits for the reply (keepalive NOP) */
	int                 window;     /* a memory window is bound for this request */
	/* An inline WRITE whose SEND gathers the caller's bytes (direct)
	 * instead of a copy: its owner may have them back only after the
	 * SEND's completion (REPLIED until then). */
	int                 gather;
	uint64_t            gen;        /* bumped per use: stale tags miss */
	uint8_t             opcode;
	/* Its copy at the target can start no later than post_ns +
	 * RB_TRANSPORT_MAX_NS + ttl s (ttl 0: unbounded, an old target): see
	 * rb_conn_hold_ns. */
	uint8_t             ttl;
	uint64_t            post_ns;
	/* The one event recorded ahead of the transition that needs it:
	 * the SEND completion may be reaped in any state after POSTED, and
	 * matters only when the owner returns (FREE or RELEASED). */
	int                 sent;
	/* The owner thread's way of waiting (wait.c), not the request's
	 * state: asleep on cond as a follower. */
	int                 following;
	struct rb_rep_info  rep;
	pthread_cond_t      cond;       /* DONE, dead, or "you lead now" */
	void               *send_buf;   /* RB_MSG_BUF_SIZE bytes */
	void               *data;       /* max_io bytes in the data pool */
	void               *direct;     /* the caller's bytes instead (direct.c), or NULL */
	uint32_t            rkey;       /* the key the target uses for data */
	SLIST_ENTRY(rb_slot) free_link; /* on conn->free_slots while FREE */
	struct rb_aio      *aio;        /* an asynchronous request (aio.c), or NULL */
	STAILQ_ENTRY(rb_slot) aio_link; /* on conn->aio_done while DONE */

	/* Memory windows (conn->use_mw): the window is bound over exactly
	 * this request's bytes before its SEND, with a fresh key, and must
	 * be invalid again (remotely by the reply's SEND_WITH_INV, or by our
	 * LOCAL_INV: INVALIDATING) before the slot is DONE and may be
	 * reused. */
	struct ibv_mw      *mw;
	struct rb_wr_ctx    bind_ctx;
	struct rb_wr_ctx    inv_ctx;
	uint32_t            bind_len;   /* 0: no window for this request */
	int                 bind_access;

	/* An inline READ (RB_REQ_INLINE): its reply carries len bytes, and
	 * the reaper (cq.c) copies [off, off + n) of them to dst out of the
	 * receive buffer, its one copy.  len 0: not one. */
	struct {
		void     *dst;
		uint32_t  len, off, n;
	} rin;
};

/* 1 while the request waits (POSTED, INVALIDATING or REPLIED): not
 * answered yet, as far as its owner is concerned.  Without the lock. */
static inline int rb_slot_awaiting(const struct rb_slot *s)
{
	enum rb_slot_state st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

	return st == RB_SLOT_POSTED || st == RB_SLOT_INVALIDATING || st == RB_SLOT_REPLIED;
}

/* 1 when the connection died before the request was answered: its owner
 * resends it elsewhere (or fails it).  Without the lock. */
static inline int rb_slot_orphaned(const struct rb_slot *s)
{
	return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == RB_SLOT_ORPHANED;
}

/* A request's ttl (docs/protocol.md): the target starts its backing I/O
 * within ttl seconds of its arrival, or never.  It arrives within
 * RB_TRANSPORT_MAX_NS of its post, or never: the QP retransmits for
 * (retry_count 7 + 1) x 537 ms (cm.c) and then fails, and a QP in the
 * error state (rb_conn_mark_dead_locked) sends nothing.  So the initiator
 * knows when an unanswered request of a dead connection can no longer
 * start at its old target.  The ttl leaves RB_TTL_SLACK_S of the
 * request's deadline for that, and is at most RB_TTL_MAX_S, so that a
 * request resent after a failover still has time left. */
#define RB_TRANSPORT_MAX_NS (5 * 1000000000ull)
#define RB_TTL_SLACK_S      6
#define RB_TTL_MAX_S        5
/* The ttl to send with a request due by deadline_ns (1..RB_TTL_MAX_S). */
uint8_t rb_ttl_for(uint64_t deadline_ns, uint64_t now_ns);

/* group.c: the clients of one process on one export and target list
 * move together.  Join (creating it at target cur) and leave; the target
 * its members go to (fallback for no group) and its generation; a member
 * connected to idx. */
struct rb_client;
struct rb_group;
struct rb_group *rb_group_join(const struct rb_client *c, unsigned cur);
void     rb_group_leave(struct rb_group *g);
unsigned rb_group_target(struct rb_group *g, unsigned fallback, uint64_t *gen);
void     rb_group_moved(struct rb_group *g, unsigned idx);
/* 1 when the group moved (since seen_gen) to another target than idx. */
int      rb_group_left(struct rb_group *g, unsigned idx, uint64_t seen_gen);
/* A member connection's housekeeping thread, kicked through its eventfd
 * when the group moves, so that it follows at once with no tick
 * (timer.c).  Watch before the thread starts; unwatch before the fd is
 * closed and before the group is left. */
struct rb_group_watch {
	LIST_ENTRY(rb_group_watch) link;
	int                        fd;
};
void     rb_group_watch(struct rb_group *g, struct rb_group_watch *w, int fd);
void     rb_group_unwatch(struct rb_group *g, struct rb_group_watch *w);

/* tag = generation << 16 | slot index */
#define RB_TAG_INDEX_BITS 16
_Static_assert(RB_TAG_INDEX_BITS < 32, "READ_IMM: a tag's low 32 bits hold its slot index");
static inline uint64_t rb_tag(uint32_t index, uint64_t gen)
{
	return gen << RB_TAG_INDEX_BITS | index;
}

/* What a connection is asked to do; copied from rb_opts. */
struct rb_conn_cfg {
	char      host[64];
	uint16_t  port;
	char      source[64];      /* local address to connect from; "": any */
	char      export_name[RB_EXPORT_NAME_MAX + 1];
	unsigned  queue_depth;
	uint32_t  max_io;
	uint64_t  keepalive_ns;
	int       busy_poll;
	struct rb_stats *stats;    /* the client's counters, updated atomically */
	const struct rb_secret *secret;  /* the client's key, or NULL */
	int       mr_static;       /* expose the whole pool MR (rb_opts.mr) */
	/* Several targets: the device's group (group.c) and which target of
	 * the list this connection is on; NULL with one target. */
	struct rb_group *group;
	unsigned  target_idx;
	uint64_t  group_gen;       /* the group's generation when it connected */

	/* Test tools only (tests/tools/rdmablk-replay.c): use this HELLO
	 * nonce; record the nonce and AUTH mac sent; send a given AUTH mac
	 * without checking the target's proof.  NULL in the library. */
	const uint8_t *test_nonce;
	uint8_t       *test_record_nonce;
	uint8_t       *test_record_mac;
	const uint8_t *test_replay_mac;
};

struct rb_conn {
	struct rb_conn_cfg          cfg;
	struct sockaddr_storage     dst;
	socklen_t                   dst_len;
	struct sockaddr_storage     src;        /* family 0: the kernel picks */

	struct rdma_event_channel  *cm_ch;
	struct rdma_cm_id          *id;
	struct ibv_pd              *pd;
	/* Both CQs share comp_ch.  Only recv_cq is armed on the data path:
	 * send-side completions (SEND, LOCAL_INV, failed BINDs) are reaped
	 * by polling; send_cq is armed only while a LOCAL_INV is awaited. */
	struct ibv_comp_channel    *comp_ch;
	struct ibv_cq              *recv_cq;
	struct ibv_cq              *send_cq;
	int                         qp_created;
	int                         connected;

	unsigned                    nrecv;      /* receives posted: wanted + 1 */
	struct rb_wr_ctx           *recv_ctx;
	struct rb_region            recv;
	struct rb_region            send;       /* nsend_bufs x RB_MSG_BUF_SIZE */
	unsigned                    nsend_bufs; /* wanted + 1; the last is control */
	struct rb_wr_ctx            ctrl_ctx;
	/* nslots x max_io, mapped with the slots and registered by the first
	 * request that needs it (rb_slots_pool_ready): direct requests never
	 * do.  pool_ready, set under pool_lock: 1 once data.mr is valid, -1
	 * once its registration failed (not tried again), 0 before. */
	struct rb_region            data;
	pthread_mutex_t             pool_lock;
	int                         pool_ready;
	/* direct.c: the aio caller's registered region, the aio thread's
	 * alone; fenced (deregistered) once the connection died with direct
	 * requests posted. */
	struct ibv_mr              *direct_mr;
	int                         direct_fenced;

	unsigned                    cm_qd;      /* granted in the CM accept */
	int                         use_mw;     /* per-request memory windows */
	unsigned                    fault_bind; /* test hook, see rb_post_request */
	/* A window or the direct region could not be revoked: its key still
	 * works, so the memory under it is never reused or freed (slots.c,
	 * direct.c).  fault_fence: test hook, every revoke "fails". */
	int                         fence_failed;
	int                         fault_fence;
	int                         test_no_ttl; /* test hook: send no ttl (request.c) */
	int                         test_no_read_inline; /* test hook: no READ_INLINE */
	int                         test_no_read_imm;    /* test hook: no READ_IMM */
	/* The target granted RB_EXP_READ_INLINE: a READ of at most
	 * RB_READ_INLINE_MAX bytes gets its data in the reply (cq.c); and
	 * RB_EXP_READ_IMM: that reply is the data alone, one packet, so a
	 * direct READ takes it too (request.c). */
	int                         read_inline;
	int                         read_imm;
	int                         rxe_quirk;  /* rb_wc_invalidated: a Soft-RoCE device */
	unsigned                    binds;      /* atomic: window binds posted */
	struct rb_export_info       exp;        /* the HELLO_REPLY */

	pthread_mutex_t             lock;       /* everything below */
	pthread_cond_t              slot_cond;  /* a slot was freed or conn died */
	struct rb_slot             *slots;
	unsigned                    nslots;     /* granted queue depth */
	unsigned                    data_credits; /* slots data requests may use */
	unsigned                    inflight;   /* slots not FREE */
	unsigned                    released;   /* slots RELEASED */
	unsigned                    slot_waiters; /* threads on slot_cond */
	unsigned                    inv_pending;  /* LOCAL_INVs not yet completed */
	unsigned                    sends_awaited; /* slots REPLIED */
	SLIST_HEAD(, rb_slot)       free_slots;
	int                         dead;
	int                         disconnect_sent;
	int                         refs;
	uint64_t                    last_rx_ns; /* last reply reaped, keepalive NOPs' aside */
	uint64_t                    nop_sent_ns;
	int                         nop_inflight;

	/* Leader/follower (wait.c): the slot index of the one waiting thread
	 * that owns the CQs and sleeps in poll() on comp_ch, or -1. */
	int                         leader;
	unsigned                    followers;  /* owners asleep on their slot's cond */
	/* busy-poll=adaptive: the round trips its leaders measured; only
	 * the leader touches it (made leader under the lock) */
	struct rb_spin              spin;
	int                         wake_fd;    /* eventfd: kick the leader out of poll() */
	/* Atomic.  wake_posted: wake_fd was written since its last read, set
	 * after the write, so that a reaper reads it only then.  recv_armed,
	 * send_armed: rb_conn_arm armed that CQ and its event has not been
	 * taken yet; it raises at most one, so the channel holds at most
	 * recv_armed + send_armed events (wait.c). */
	int                         wake_posted;
	int                         recv_armed;
	int                         send_armed;

	/* Asynchronous requests (aio.c): slots that became DONE, oldest
	 * first, for the reaping thread to collect.  aio_reaping: that thread
	 * is between polling the CQs and its collection, so nobody needs to write
	 * wake_fd for a slot it will collect anyway. */
	STAILQ_HEAD(rb_slot_queue, rb_slot) aio_done;
	int                         aio_reaping;

	/* The housekeeping thread (timer.c): never on the data path.  It
	 * sleeps until its next deadline, or until kick_fd is written: to
	 * stop it, for a connection marked dead, or for its group's move. */
	pthread_t                   timer_thread;
	int                         timer_started;
	int                         kick_fd;    /* eventfd */
	int                         stop;       /* atomic */
	struct rb_group_watch       group_watch;
};

/* conn.c: verbs resources, matched create/destroy, refcount. */
int  rb_conn_create(const struct rb_conn_cfg *cfg, int list_only,
		    uint64_t deadline_ns, struct rb_conn **out, char *errbuf);
void rb_conn_ref(struct rb_conn *conn);
void rb_conn_unref(struct rb_conn *conn);
/* A dead connection: when none of its unanswered writes (WRITE, TRIM,
 * WRITE_ZEROES) can still start at the target (their ttl), 0 for now.
 * Nothing they wrote may be resent or reported before (client.c). */
uint64_t rb_conn_hold_ns(struct rb_conn *conn);
/* Sleep until hold_ns (no lock held), saying why once. */
void rb_hold_until(uint64_t hold_ns, const char *host);

/* link.c: what every layer does to one connection; it calls none of them.
 * Post one receive buffer again.  0 or -errno. */
int  rb_conn_post_recv(struct rb_conn *conn, uint32_t index);
void *rb_conn_recv_buf(struct rb_conn *conn, uint32_t index);
/* Fill a signaled SEND of len bytes at buf (in conn->send) with wr_id ctx. */
void rb_conn_send_wr(struct rb_conn *conn, struct ibv_send_wr *wr, struct ibv_sge *sge,
		     void *buf, size_t len, struct rb_wr_ctx *ctx);
/* Write wake_fd (and mark it posted); read it back only when posted. */
void rb_conn_wake(struct rb_conn *conn);
void rb_conn_wake_take(struct rb_conn *conn);
/* Under conn->lock: mark dead once, log why, move the QP to the error
 * state (nothing more reaches the target), orphan every unanswered slot,
 * wake every waiter (and the leader, out of its poll()). */
void rb_conn_mark_dead_locked(struct rb_conn *conn, const char *why);

/* direct.c: the caller's memory for direct requests.  Register [base, len)
 * on conn once (0, -EAGAIN once fenced, or -errno); fence: revoke every
 * window and deregister, so the target can no longer reach it. */
int  rb_conn_direct_register(struct rb_conn *conn, void *base, size_t len);
void rb_conn_direct_fence_locked(struct rb_conn *conn);

/* cm.c: address and route resolution, connect and reject decoding. */
int  rb_cm_resolve(struct rb_conn *conn, uint64_t deadline_ns, char *errbuf);
int  rb_cm_connect(struct rb_conn *conn, uint64_t deadline_ns, char *errbuf);
/* Handle pending CM events after connecting (DISCONNECTED...). */
void rb_cm_poll_events(struct rb_conn *conn);

/* handshake.c: HELLO or LIST, before any request. */
int  rb_handshake_hello(struct rb_conn *conn, uint64_t deadline_ns, char *errbuf);
int  rb_handshake_list(struct rb_conn *conn, uint64_t deadline_ns,
		       rb_list_fn *cb, void *opaque, char *errbuf);

/* slots.c: the data pool and slot table (sized from the granted depth). */
int  rb_slots_create(struct rb_conn *conn, char *errbuf);
int  rb_slots_pool_ready(struct rb_conn *conn);
/* Deallocate every window (revoking its key); how many could not be. */
unsigned rb_slots_revoke(struct rb_conn *conn);
void rb_slots_destroy(struct rb_conn *conn);
/* Under conn->lock.  Take a slot off the free list (FREE -> POSTED):
 * keepalive for the NOP (nobody owns it; it may use the last credit).
 * NULL when no credit is free. */
struct rb_slot *rb_slot_get_locked(struct rb_conn *conn, int keepalive);
/* Under conn->lock: the state machine.  Record ev for s, move its state
 * and return what the caller must do (RB_SLOT_DO_*). */
unsigned rb_slot_event_locked(struct rb_conn *conn, struct rb_slot *s,
			      enum rb_slot_event ev);

/* cq.c: reaping both CQs.  No thread of its own. */
/* Poll both CQs until empty and handle every completion, waking the owners
 * of the slots that became DONE (after unlocking).  self: the calling
 * owner's slot, or NULL.  Returns the number of completions; *self_done
 * (if not NULL) says whether self is answered (not rb_slot_awaiting) or the connection
 * is dead. */
int  rb_cq_poll_empty(struct rb_conn *conn, struct rb_slot *self, int *self_done);
/* 1 when a successful receive completion says the reply invalidated rkey:
 * only when the provider flagged it as such (IBV_WC_WITH_INV, or rxe_quirk:
 * rxe reports it with the kernel's bit, which reads as IBV_WC_IP_CSUM_OK),
 * never from the key field alone. */
int  rb_wc_invalidated(const struct ibv_wc *wc, uint32_t rkey, int rxe_quirk);
/* Why a batch of n completions with flushes in it says the QP broke: the
 * status of its first error that is not a flush, else "queue pair flushed". */
const char *rb_wc_batch_cause(const struct ibv_wc *wc, int n);

/* wait.c: leader/follower.  Wait until slot s (POSTED by the caller) is
 * DONE: 0, -EAGAIN if the connection died first, -EIO on the deadline
 * (the connection is then marked dead: the slot may still be in use). */
int  rb_wait_slot(struct rb_conn *conn, struct rb_slot *s, uint64_t deadline_ns);
/* Arm the receive CQ (and the send CQ while a LOCAL_INV is pending), each
 * unless it is armed already (its event not taken yet).  0 or -1. */
int  rb_conn_arm(struct rb_conn *conn);
/* Arm one of its CQs unless it is armed already (the handshake's). */
int  rb_conn_arm_cq(struct rb_conn *conn, struct ibv_cq *cq);
/* Take and ack the completion channel's events, reading it only while an
 * armed CQ may have raised one. */
void rb_conn_take_events(struct rb_conn *conn);

/* timer.c: the housekeeping thread: keepalive NOPs, CM events, dead
 * detection, and reaping the CQs when no leader is waiting or a NOP is
 * out. */
int  rb_timer_start(struct rb_conn *conn, char *errbuf);
void rb_timer_stop(struct rb_conn *conn);
/* Wake the housekeeping thread now (a connection marked dead). */
void rb_timer_kick(struct rb_conn *conn);

/* request.c: one request on one connection. */
struct rb_io {
	uint8_t     opcode;
	uint16_t    flags;      /* RB_REQ_* */
	uint64_t    offset;
	uint32_t    length;
	void       *rbuf;       /* READ destination ... */
	uint32_t    copy_off;   /* ... gets data[copy_off, copy_off + copy_len) */
	uint32_t    copy_len;
	const void *wbuf;       /* WRITE source */
	int         direct;     /* rbuf/wbuf lie in conn->direct_mr: no pool copy */
	uint64_t    deadline_ns; /* when its owner gives up: its ttl */
	uint8_t     rep_flags;  /* out: RB_REP_* */
	/* BLOCK_STATUS: room for ext_max extents, ext_n filled (checked
	 * against the range: rb_extents_check). */
	struct rb_extent_info *ext;
	unsigned    ext_max;
	unsigned    ext_n;
};
/* Post a request SEND for slot s (and its window's BIND ahead of it);
 * under conn->lock or by its owner.  0 or -errno. */
int  rb_post_request(struct rb_conn *conn, struct rb_slot *s,
		     const struct rb_req_info *ri);
/* 0, a negative errno (final), or -EAGAIN: the connection died before a
 * reply arrived, so the request may be resent on a new connection. */
int rb_conn_request(struct rb_conn *conn, struct rb_io *io, uint64_t deadline_ns);
int rb_io_uses_pool(const struct rb_conn *conn, const struct rb_io *io);
/* memcpy, counted in the connection's copy statistics. */
void rb_copy_timed(struct rb_conn *conn, void *dst, const void *src, size_t len);
/* The two halves of rb_conn_request, for aio.c.  Under conn->lock, slot s
 * just taken with rb_slot_get_locked: make it POSTED for io. */
void rb_conn_claim_locked(struct rb_conn *conn, struct rb_slot *s,
			  const struct rb_io *io);
/* Without the lock: copy in and post.  0, or -EAGAIN (the slot is free again
 * and the connection is dead). */
int  rb_conn_post(struct rb_conn *conn, struct rb_slot *s, const struct rb_io *io);
/* Without the lock, s DONE: copy out, release the slot, map the reply. */
int  rb_conn_finish(struct rb_conn *conn, struct rb_slot *s, struct rb_io *io);

/* client.c: send one request, reconnecting and resending as needed. */
int rb_client_submit(struct rb_client *c, struct rb_io *io);
/* A live connection with a reference for the caller (reconnecting until
 * deadline_ns if the current one is dead), or NULL and *err. */
struct rb_conn *rb_client_get_conn(struct rb_client *c, uint64_t deadline_ns, int *err);
uint64_t rb_client_timeout_ns(const struct rb_client *c);
void rb_client_count_resent(struct rb_client *c);
/* The client's asynchronous state (aio.c), created on first use. */
struct rb_aio_ctx;
struct rb_aio_ctx **rb_client_aio(struct rb_client *c);
void rb_aio_ctx_destroy(struct rb_aio_ctx *x);

/* io.c: the checks before a request is sent. */
int rb_io_check_aligned(const struct rb_export_desc *d, const char *what,
			uint64_t len, uint64_t off);
int rb_io_check_writable(const struct rb_export_desc *d, const char *what);
int rb_io_check_durable(const struct rb_io *io);

#endif
