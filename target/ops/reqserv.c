/* A one-request server on the event loop (target/ops/reqserv.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/target.h"
#include "log.h"
#include "reqserv.h"

struct reqserv_client {
	struct ep_handler eh;       /* client_event */
	struct reqserv *s;
	int fd;                     /* -1: the slot is free */
	uint64_t deadline_ns;
	char *in;                   /* req_max + 1 bytes */
	size_t inlen;
	char *out;                  /* the reply, once the request is in */
	size_t outlen, outoff;
};

struct reqserv {
	struct ep_handler eh;       /* the listening socket: reqserv_accept */
	struct target *t;
	const struct reqserv_ops *ops;
	int fd;
	unsigned max_clients, nclients;
	size_t req_max;
	unsigned timeout_ms;
	struct reqserv_client *clients;
	char *inbufs;
};

static ep_handler_fn reqserv_accept, client_event;

struct reqserv *
reqserv_create(struct target *t, int lfd, const struct reqserv_ops *ops,
	       unsigned max_clients, size_t req_max, unsigned timeout_ms)
{
	struct reqserv *s = calloc(1, sizeof(*s));
	unsigned i;

	if (s == NULL)
		goto out_close;
	s->clients = calloc(max_clients, sizeof(*s->clients));
	s->inbufs = malloc((size_t)max_clients * (req_max + 1));
	if (s->clients == NULL || s->inbufs == NULL)
		goto out_free;
	s->ops = ops;
	s->t = t;
	s->fd = lfd;
	s->max_clients = max_clients;
	s->req_max = req_max;
	s->timeout_ms = timeout_ms;
	for (i = 0; i < max_clients; i++) {
		s->clients[i].fd = -1;
		s->clients[i].s = s;
		s->clients[i].in = s->inbufs + (size_t)i * (req_max + 1);
	}
	if (ep_watch(t->epfd, lfd, EPOLLIN, &s->eh, reqserv_accept, s) < 0) {
		log_warn("%s: epoll_ctl", ops->name);
		goto out_free;
	}
	return s;

out_free:
	if (s != NULL) {
		free(s->inbufs);
		free(s->clients);
		free(s);
	} else {
		log_warnx("%s: out of memory", ops->name);
	}
out_close:
	close(lfd);
	return NULL;
}

static void
client_drop(struct target *t, struct reqserv_client *cl)
{
	epoll_ctl(t->epfd, EPOLL_CTL_DEL, cl->fd, NULL);
	close(cl->fd);
	cl->fd = -1;
	free(cl->out);
	cl->out = NULL;
	cl->inlen = cl->outlen = cl->outoff = 0;
	cl->s->nclients--;
}

void
reqserv_destroy(struct target *t, struct reqserv *s)
{
	unsigned i;

	if (s == NULL)
		return;
	for (i = 0; i < s->max_clients; i++)
		if (s->clients[i].fd >= 0)
			client_drop(t, &s->clients[i]);
	epoll_ctl(t->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	free(s->inbufs);
	free(s->clients);
	free(s);
}

static struct reqserv_client *
free_slot(struct reqserv *s)
{
	unsigned i;

	for (i = 0; i < s->max_clients; i++)
		if (s->clients[i].fd < 0)
			return &s->clients[i];
	return NULL;
}

static void
reqserv_accept(struct ep_handler *eh, uint32_t events)
{
	struct reqserv *s = eh->obj;
	struct target *t = s->t;
	struct reqserv_client *cl;
	unsigned n;
	int fd;

	(void)events;
	for (n = 0; n < s->max_clients; n++) {
		fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warn("%s: accept", s->ops->name);
			return;
		}
		if (s->ops->admit != NULL && s->ops->admit(fd) < 0) {
			close(fd);
			continue;
		}
		cl = free_slot(s);
		if (cl == NULL) {
			log_debug("%s: %u clients already; closing a new one", s->ops->name,
				  s->max_clients);
			close(fd);
			continue;
		}
		if (ep_watch(t->epfd, fd, EPOLLIN, &cl->eh, client_event, cl) < 0) {
			log_warn("%s: epoll_ctl", s->ops->name);
			close(fd);
			continue;
		}
		cl->fd = fd;
		cl->inlen = cl->outlen = cl->outoff = 0;
		cl->deadline_ns = rb_now_ns() + s->timeout_ms * 1000000ull;
		s->nclients++;
	}
}

/* Send what the socket takes; 1 when done, 0 to wait, -1 on error. */
static int
client_write(struct reqserv_client *cl)
{
	ssize_t n;

	while (cl->outoff < cl->outlen) {
		n = send(cl->fd, cl->out + cl->outoff, cl->outlen - cl->outoff,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		cl->outoff += (size_t)n;
	}
	return 1;
}

/* Read what has come; 1 when the request is whole (or the client is
 * done sending), 0 to wait, -1 to drop the client. */
static int
client_read(struct reqserv_client *cl)
{
	struct reqserv *s = cl->s;
	ssize_t n;

	for (;;) {
		n = read(cl->fd, cl->in + cl->inlen, s->req_max - cl->inlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		cl->inlen += (size_t)n;
		cl->in[cl->inlen] = '\0';
		if (n == 0)
			return cl->inlen > 0 ? 1 : -1;
		if (s->ops->complete(cl->in, cl->inlen))
			return 1;
		if (cl->inlen == s->req_max) {
			log_debug("%s: a request longer than %zu bytes", s->ops->name,
				  s->req_max);
			return -1;
		}
	}
}

static void
client_event(struct ep_handler *eh, uint32_t events)
{
	struct reqserv_client *cl = eh->obj;
	struct target *t = cl->s->t;
	struct epoll_event ev;
	int rc;

	if (cl->out == NULL) {
		rc = client_read(cl);
		if (rc == 0)
			return;
		if (rc < 0 || cl->s->ops->reply(t, cl->in, cl->inlen, &cl->out,
						&cl->outlen) < 0) {
			client_drop(t, cl);
			return;
		}
	} else if (events & (EPOLLERR | EPOLLHUP)) {
		client_drop(t, cl);
		return;
	}
	rc = client_write(cl);
	if (rc != 0) {
		client_drop(t, cl);      /* done, or the client went away */
		return;
	}
	/* The socket buffer is full: wait until the client reads. */
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLOUT;
	ev.data.ptr = &cl->eh;
	if (epoll_ctl(t->epfd, EPOLL_CTL_MOD, cl->fd, &ev) < 0)
		client_drop(t, cl);
}

void
reqserv_expire(struct target *t, struct reqserv *s)
{
	uint64_t now;
	unsigned i;

	if (s == NULL || s->nclients == 0)
		return;
	now = rb_now_ns();
	for (i = 0; i < s->max_clients; i++) {
		struct reqserv_client *cl = &s->clients[i];

		if (cl->fd >= 0 && now > cl->deadline_ns) {
			log_debug("%s: dropped a client that %s in %u ms", s->ops->name,
				  cl->out == NULL ? "sent no whole request" :
				  "did not read its reply", s->timeout_ms);
			client_drop(t, cl);
		}
	}
}
