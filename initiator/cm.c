/* RDMA CM: address and route resolution, connect, and reject decoding. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "deadline.h"
#include "internal.h"
#include "util.h"

#define RESOLVE_TIMEOUT_MS 2000
#define IB_CM_REJ_INVALID_SERVICE_ID 8
/* Local ACK timeout 4.096 us * 2^17 = 537 ms per try, the CM's own default
 * for RoCE (packet life time 16, plus one); with retry_count 7 a vanished
 * peer fails the QP in about 4 s, and keepalive notices it within 3 x
 * keepalive anyway.  At 2^14 (67 ms, half a second in all) a target host
 * busy for half a second, as under a flood of connects, killed healthy
 * connections. */
#define ACK_TIMEOUT_EXP 17

static int
no_device(const struct rb_conn *conn, char *errbuf)
{
	rb_seterr(errbuf, "no RDMA device can reach %s: %s", conn->cfg.host, RB_NO_RDMA_HINT);
	return -ENODEV;
}

/* Wait for the next CM event on the connection's channel until the deadline. */
static int
cm_wait(struct rb_conn *conn, uint64_t deadline_ns, struct rdma_cm_event **ev,
	const char *what, char *errbuf)
{
	struct pollfd pfd = { .fd = conn->cm_ch->fd, .events = POLLIN };
	int ms;

	for (;;) {
		if (rdma_get_cm_event(conn->cm_ch, ev) == 0)
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			int err = errno;

			rb_seterr(errbuf, "%s %s: rdma_get_cm_event: %s", what,
				  conn->cfg.host, strerror(err));
			return -err;
		}
		ms = rb_deadline_ms_left(deadline_ns);
		if (ms == 0) {
			rb_seterr(errbuf, "%s %s:%u: no answer in time (target "
				  "down or host unreachable?)", what,
				  conn->cfg.host, conn->cfg.port);
			return -ETIMEDOUT;
		}
		if (poll(&pfd, 1, ms) < 0 && errno != EINTR) {
			int err = errno;

			rb_seterr(errbuf, "%s: poll: %s", what, strerror(err));
			return -err;
		}
	}
}

static int
resolve_error(struct rb_conn *conn, const char *what, int status, char *errbuf)
{
	int err = status < 0 ? -status : (status ? status : EHOSTUNREACH);

	if (err == ENODEV || err == EADDRNOTAVAIL)
		return no_device(conn, errbuf);
	rb_seterr(errbuf, "%s %s: %s (host unreachable?)", what, conn->cfg.host,
		  strerror(err));
	return -err;
}

static int
resolve_step(struct rb_conn *conn, int route, uint64_t deadline_ns, char *errbuf)
{
	const char *what = route ? "resolve route to" : "resolve address of";
	enum rdma_cm_event_type ok = route ? RDMA_CM_EVENT_ROUTE_RESOLVED
					   : RDMA_CM_EVENT_ADDR_RESOLVED;
	struct rdma_cm_event *ev;
	int ms = rb_deadline_ms_left(deadline_ns), r, status;
	enum rdma_cm_event_type type;

	if (ms > RESOLVE_TIMEOUT_MS)
		ms = RESOLVE_TIMEOUT_MS;
	if (ms == 0)
		ms = 1;
	if (route)
		r = rdma_resolve_route(conn->id, ms);
	else
		r = rdma_resolve_addr(conn->id, conn->src.ss_family != 0 ?
				      (struct sockaddr *)&conn->src : NULL,
				      (struct sockaddr *)&conn->dst, ms);
	if (r != 0)
		return resolve_error(conn, what, -errno, errbuf);
	/* The CM reports its own timeout as an error event; allow a margin. */
	r = cm_wait(conn, rb_deadline_after((uint64_t)(ms + 1000) * 1000000), &ev,
		    what, errbuf);
	if (r < 0)
		return r;
	type = ev->event;
	status = ev->status;
	rdma_ack_cm_event(ev);
	if (type != ok)
		return resolve_error(conn, what, status ? status : -EHOSTUNREACH, errbuf);
	return 0;
}

int
rb_cm_resolve(struct rb_conn *conn, uint64_t deadline_ns, char *errbuf)
{
	uint8_t ack_timeout = ACK_TIMEOUT_EXP;
	int r;

	r = resolve_step(conn, 0, deadline_ns, errbuf);
	if (r < 0)
		return r;
	if (conn->id->verbs == NULL)
		return no_device(conn, errbuf);
	r = resolve_step(conn, 1, deadline_ns, errbuf);
	if (r < 0)
		return r;
	if (rdma_set_option(conn->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &ack_timeout, sizeof(ack_timeout)) != 0)
		rb_log(RB_LOG_DEBUG, "rdma_set_option ACK_TIMEOUT: %s (ignored)",
		       strerror(errno));
	return 0;
}

static int
rejected(struct rb_conn *conn, const struct rdma_cm_event *ev, char *errbuf)
{
	uint16_t status, qd;
	const char *why;

	if (rb_conn_priv_decode(ev->param.conn.private_data,
				ev->param.conn.private_data_len,
				&status, &qd, &why) == 0 && status != RB_OK) {
		rb_seterr(errbuf, "target %s:%u refused the connection: %s (%s)",
			  conn->cfg.host, conn->cfg.port, rb_reason(status),
			  rb_error_name(status));
		return -rb_error_to_errno(status);
	}
	if (ev->status == IB_CM_REJ_INVALID_SERVICE_ID) {
		rb_seterr(errbuf, "no rdmablk target is listening on %s:%u",
			  conn->cfg.host, conn->cfg.port);
		return -ECONNREFUSED;
	}
	rb_seterr(errbuf, "connection to %s:%u rejected (reason %d)",
		  conn->cfg.host, conn->cfg.port, ev->status);
	return -ECONNREFUSED;
}

static int
established(struct rb_conn *conn, const struct rdma_cm_event *ev, char *errbuf)
{
	uint16_t status, qd;
	const char *why = "";

	if (rb_conn_priv_decode(ev->param.conn.private_data,
				ev->param.conn.private_data_len,
				&status, &qd, &why) < 0) {
		rb_seterr(errbuf, "%s:%u: accept: %s", conn->cfg.host,
			  conn->cfg.port, why);
		return -EPROTO;
	}
	if (status != RB_OK || qd == 0 || qd > conn->cfg.queue_depth) {
		rb_seterr(errbuf, "%s:%u: accept grants an invalid queue depth %u "
			  "(status %s)", conn->cfg.host, conn->cfg.port, qd,
			  rb_error_name(status));
		return -EPROTO;
	}
	conn->cm_qd = qd;
	return 0;
}

int
rb_cm_connect(struct rb_conn *conn, uint64_t deadline_ns, char *errbuf)
{
	struct rdma_conn_param param;
	struct ibv_device_attr dev;
	struct rdma_cm_event *ev;
	uint8_t priv[sizeof(struct rb_conn_priv)];
	int r;

	if (ibv_query_device(conn->id->verbs, &dev) != 0) {
		rb_seterr(errbuf, "ibv_query_device: %s", strerror(errno));
		return -EIO;
	}
	rb_conn_priv_encode(priv, RB_OK, (uint16_t)conn->cfg.queue_depth);
	memset(&param, 0, sizeof(param));
	param.private_data = priv;
	param.private_data_len = sizeof(priv);
	/* The target RDMA READs write data from us. */
	param.responder_resources = (uint8_t)(dev.max_qp_rd_atom < 16 ?
					      dev.max_qp_rd_atom : 16);
	param.initiator_depth = 0;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(conn->id, &param) != 0) {
		int err = errno;

		rb_seterr(errbuf, "rdma_connect %s:%u: %s", conn->cfg.host,
			  conn->cfg.port, strerror(err));
		return -err;
	}
	for (;;) {
		r = cm_wait(conn, deadline_ns, &ev, "connect to", errbuf);
		if (r < 0)
			return r;
		switch (ev->event) {
		case RDMA_CM_EVENT_ESTABLISHED:
			r = established(conn, ev, errbuf);
			conn->connected = 1;
			break;
		case RDMA_CM_EVENT_REJECTED:
			r = rejected(conn, ev, errbuf);
			break;
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_CONNECT_ERROR:
			rb_seterr(errbuf, "connect to %s:%u: %s (%s)", conn->cfg.host,
				  conn->cfg.port, rdma_event_str(ev->event),
				  strerror(ev->status < 0 ? -ev->status : EHOSTUNREACH));
			r = -EHOSTUNREACH;
			break;
		default:
			rb_log(RB_LOG_DEBUG, "connect: ignoring CM event %s",
			       rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
			continue;
		}
		rdma_ack_cm_event(ev);
		return r;
	}
}

void
rb_cm_poll_events(struct rb_conn *conn)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;

	while (rdma_get_cm_event(conn->cm_ch, &ev) == 0) {
		type = ev->event;
		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
		case RDMA_CM_EVENT_ADDR_CHANGE:
			pthread_mutex_lock(&conn->lock);
			rb_conn_mark_dead_locked(conn, rdma_event_str(type));
			pthread_mutex_unlock(&conn->lock);
			break;
		default:
			break;
		}
	}
}
