/* The RDMA CM listener and CM event dispatch. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "conn.h"
#include "core/loop.h"
#include "core/target.h"
#include "log.h"
#include "util.h"

static int
rdma_devices_visible(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);

	if (list != NULL)
		ibv_free_device_list(list);
	return list != NULL && n > 0;
}

static ep_handler_fn listener_cm_event;

/* Every loop's CM channel goes to listener_cm_event on that loop. */
static int
listener_watch_channels(struct target *t)
{
	struct loop *l;
	unsigned i;

	if (ep_watch(t->epfd, t->cm_channel->fd, EPOLLIN, &t->cm_eh, listener_cm_event,
		     t->loops[0]) < 0) {
		log_warn("epoll_ctl (CM channel)");
		return -1;
	}
	for (i = 1; i < t->nloops; i++) {
		l = t->loops[i];
		if (ep_watch(l->epfd, l->cm_channel->fd, EPOLLIN, &l->cm_eh, listener_cm_event,
			     l) < 0) {
			log_warn("loop %u: epoll_ctl (CM channel)", i);
			return -1;
		}
	}
	return 0;
}

int
listener_start(struct target *t)
{
	char addr[80];

	if (!rdma_devices_visible())
		no_rdma_device(t);
	t->cm_channel = cm_channel_create(t, "listener");
	if (t->cm_channel == NULL)
		return -1;
	if (rdma_create_id(t->cm_channel, &t->listen_id, NULL, RDMA_PS_TCP) != 0) {
		log_warn("rdma_create_id");
		goto out_destroy_channel;
	}
	rb_sockaddr_str((struct sockaddr *)&t->cfg->listen, addr, sizeof(addr));
	if (rdma_bind_addr(t->listen_id, (struct sockaddr *)&t->cfg->listen) != 0) {
		if (errno == ENODEV || errno == EADDRNOTAVAIL)
			no_rdma_device(t);
		log_warn("rdma_bind_addr %s", addr);
		goto out_destroy_id;
	}
	/* A specific address names its device now: register the pool at
	 * startup.  A wildcard waits for the first connection. */
	if (t->listen_id->verbs != NULL && device_get(t, t->listen_id->verbs) == NULL)
		goto out_destroy_id;
	if (rdma_listen(t->listen_id, 64) != 0) {
		log_warn("rdma_listen %s", addr);
		goto out_destroy_id;
	}
	if (listener_watch_channels(t) < 0)
		goto out_destroy_id;
	log_info("listening on %s", addr);
	return 0;

out_destroy_id:
	rdma_destroy_id(t->listen_id);
	t->listen_id = NULL;
out_destroy_channel:
	rdma_destroy_event_channel(t->cm_channel);
	t->cm_channel = NULL;
	return -1;
}

void
listener_stop(struct target *t)
{
	if (t->listen_id != NULL) {
		rdma_destroy_id(t->listen_id);
		t->listen_id = NULL;
	}
	if (t->cm_channel != NULL) {
		epoll_ctl(t->epfd, EPOLL_CTL_DEL, t->cm_channel->fd, NULL);
		rdma_destroy_event_channel(t->cm_channel);
		t->cm_channel = NULL;
	}
}

/* At most this many refusal lines a second for each reason: a flood of
 * connects must not flood the log, nor hide a refusal of another kind.
 * The ones left out are counted and summed up in the next line logged for
 * the same reason. */
#define LISTENER_LOG_PER_S 10

static int
reject_log_ok(struct target *t, enum stats_refusal why)
{
	uint64_t sec = rb_now_ns() / 1000000000ull;

	if (sec != t->refuse_log_sec) {
		t->refuse_log_sec = sec;
		memset(t->refuse_log_n, 0, sizeof(t->refuse_log_n));
	}
	if (t->refuse_log_n[why] >= LISTENER_LOG_PER_S) {
		t->refuse_log_dropped[why]++;
		return 0;
	}
	t->refuse_log_n[why]++;
	return 1;
}

static void
reject(struct target *t, struct rdma_cm_id *id, uint16_t status, enum stats_refusal why_stat,
       const char *peer, const char *why)
{
	uint8_t priv[sizeof(struct rb_conn_priv)];

	if (reject_log_ok(t, why_stat)) {
		if (t->refuse_log_dropped[why_stat] > 0)
			log_warnx("%s: connection refused: %s (%s); %u more refusals for this reason not "
				  "logged before this one", peer, why, rb_error_name(status),
				  t->refuse_log_dropped[why_stat]);
		else
			log_warnx("%s: connection refused: %s (%s)", peer, why,
				  rb_error_name(status));
		t->refuse_log_dropped[why_stat] = 0;
	}
	stats_refused(t, why_stat);
	rb_conn_priv_encode(priv, status, 0);
	if (rdma_reject(id, priv, sizeof(priv)) != 0)
		log_warn("%s: rdma_reject", peer);
	rdma_destroy_id(id);
}

/* Connections from peer's address (any port), in any state. */
static unsigned
conns_from(const struct target *t, const struct sockaddr *peer)
{
	const struct conn *c;
	unsigned n = 0, li;

	FOR_EACH_CONN(t, li, c)
		if (rb_sockaddr_same_host((const struct sockaddr *)&c->peer_sa, peer))
			n++;
	return n;
}

int
listener_over_limit(const struct target *t, const struct sockaddr *peer, enum stats_refusal *stat,
	   char *why, size_t size)
{
	const struct config *cfg = t->cfg;
	unsigned n;

	if (t->nconns >= cfg->max_conns_total) {
		*stat = STATS_REFUSED_CONN_LIMIT;
		snprintf(why, size, "max-connections-total (%u) reached", cfg->max_conns_total);
		return -1;
	}
	if (t->nhandshakes >= cfg->max_handshakes) {
		*stat = STATS_REFUSED_HANDSHAKE_LIMIT;
		snprintf(why, size, "max-handshakes (%u) in progress", cfg->max_handshakes);
		return -1;
	}
	n = conns_from(t, peer);
	if (n >= cfg->max_conns_per_addr) {
		*stat = STATS_REFUSED_ADDRESS_LIMIT;
		snprintf(why, size, "max-connections-per-address (%u) reached",
			 cfg->max_conns_per_addr);
		return -1;
	}
	return 0;
}

/* A copy of what we need from an event, so it can be acked first: an id
 * cannot be destroyed while it has unacked events. */
struct cm_event_copy {
	enum rdma_cm_event_type type;
	struct rdma_cm_id *id;
	int status;
	uint8_t priv[64];
	uint8_t priv_len;
	uint8_t responder_resources;
};

/* The connection's CM events go to its loop's own channel from now on
 * (loop.h); loop 0's stay on the listener's. */
static int
migrate_to(struct loop *l, struct rdma_cm_id *id, const char *peer)
{
	if (l->idx == 0)
		return 0;
	if (rdma_migrate_id(id, l->cm_channel) != 0) {
		log_warn("%s: rdma_migrate_id to loop %u", peer, l->idx);
		return -1;
	}
	return 0;
}

static void
connect_request(struct target *t, const struct cm_event_copy *ev)
{
	struct rdma_cm_id *id = ev->id;
	struct sockaddr *peer = rdma_get_peer_addr(id);
	uint16_t status, wanted;
	const char *why = "?";
	enum stats_refusal stat;
	char peer_str[64], limit[96];
	struct conn *c;
	struct loop *l;
	unsigned qd;

	rb_sockaddr_str(peer, peer_str, sizeof(peer_str));
	if (rb_conn_priv_decode(ev->priv_len ? ev->priv : NULL, ev->priv_len, &status,
				&wanted, &why) < 0) {
		reject(t, id, RB_EPROTO, STATS_REFUSED_BAD_PRIVATE_DATA, peer_str, why);
		return;
	}
	if (status != RB_OK) {
		reject(t, id, RB_EPROTO, STATS_REFUSED_BAD_PRIVATE_DATA, peer_str,
		       "connect private data has a non-zero status");
		return;
	}
	if (wanted == 0) {
		reject(t, id, RB_EPROTO, STATS_REFUSED_BAD_PRIVATE_DATA, peer_str,
		       "asked for a queue depth of 0");
		return;
	}
	if (!exports_any_allows(t, peer)) {
		reject(t, id, RB_EACCES, STATS_REFUSED_ADDRESS, peer_str,
		       "address not allowed by any export");
		return;
	}
	if (t->shutting_down) {
		reject(t, id, RB_ESHUTDOWN, STATS_REFUSED_SHUTTING_DOWN, peer_str,
		       "target is shutting down");
		return;
	}
	if (listener_over_limit(t, peer, &stat, limit, sizeof(limit)) < 0) {
		reject(t, id, RB_EBUSY, stat, peer_str, limit);
		return;
	}
	qd = wanted < t->cfg->queue_depth ? wanted : t->cfg->queue_depth;
	l = loops_pick(t);
	c = migrate_to(l, id, peer_str) < 0 ? NULL : conn_create(l, id, qd, peer);
	if (c == NULL) {
		reject(t, id, RB_ENOMEM, STATS_REFUSED_RESOURCES, peer_str,
		       "cannot set up the connection");
		return;
	}
	if (conn_accept(c, ev->responder_resources) < 0) {
		conn_abort(c);   /* destroys id */
		return;
	}
	log_debug("%s: accepted, queue depth %u", c->peer, c->cm_qd);
}

static void
dispatch(struct target *t, const struct cm_event_copy *ev)
{
	struct conn *c = ev->id->context;

	if (ev->type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		/* It reads every loop's connections and may add one to any
		 * loop (and a device to the list): the others stop meanwhile. */
		loops_stop_world(t);
		connect_request(t, ev);
		loops_start_world(t);
		return;
	}
	if (ev->id == t->listen_id) {
		if (ev->type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			log_warnx("the RDMA device of the listener was removed");
		else
			log_debug("listener: %s", rdma_event_str(ev->type));
		return;
	}
	if (c == NULL)
		return;
	switch (ev->type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		conn_established(c);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		conn_close(c, "peer disconnected");
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		conn_fail(c, "RDMA device removed");
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		conn_fail(c, rdma_event_str(ev->type));
		break;
	default:
		log_debug("%s: %s", c->peer, rdma_event_str(ev->type));
		break;
	}
}

/* The CM events of one loop's channel: loop 0's is the listener's own,
 * t->cm_channel; each other loop's receives the connections migrated to
 * it (conn.c). */
static void
listener_cm_event(struct ep_handler *eh, uint32_t events)
{
	struct loop *l = eh->obj;
	struct target *t = l->t;
	struct rdma_event_channel *ch = l->idx == 0 ? t->cm_channel : l->cm_channel;
	struct rdma_cm_event *event;
	struct cm_event_copy copy;

	(void)events;
	while (ch != NULL && rdma_get_cm_event(ch, &event) == 0) {
		memset(&copy, 0, sizeof(copy));
		copy.type = event->event;
		copy.id = event->id;
		copy.status = event->status;
		if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			const struct rdma_conn_param *p = &event->param.conn;
			size_t n = p->private_data_len;

			if (n > sizeof(copy.priv))
				n = sizeof(copy.priv);
			if (p->private_data != NULL)
				memcpy(copy.priv, p->private_data, n);
			else
				n = 0;
			copy.priv_len = (uint8_t)n;
			/* The CM reports the REQ from the receiver's side:
			 * the peer's responder_resources (how many RDMA
			 * READs it serves for us) arrive as initiator_depth. */
			copy.responder_resources = p->initiator_depth;
		}
		rdma_ack_cm_event(event);
		dispatch(t, &copy);
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		log_warn("rdma_get_cm_event");
}
