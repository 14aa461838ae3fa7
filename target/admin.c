/* The admin socket (target/admin.h), served by the event loop.  The client
 * behind rdmablk-target --stats is admin-query.c. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "admin.h"
#include "log.h"
#include "stats.h"
#include "target.h"

struct admin_client {
	struct ep_handler eh;       /* EP_ADMIN_CLIENT */
	int fd;                     /* -1: the slot is free */
	uint64_t deadline_ns;
	char in[ADMIN_REQUEST_MAX];
	size_t inlen;
	char *out;                  /* the reply, once the request is in */
	size_t outlen, outoff;
};

struct admin {
	struct ep_handler eh;       /* EP_ADMIN */
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;                  /* of the socket we bound, to unlink only ours */
	ino_t ino;
	unsigned nclients;
	struct admin_client clients[ADMIN_MAX_CLIENTS];
};

int
admin_sun_fill(struct sockaddr_un *sun, const char *path)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun->sun_path, path, strlen(path));
	return 0;
}

/* Is a daemon answering on path?  A refused or absent socket is stale. */
static int
socket_alive(const struct sockaddr_un *sun)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int alive;

	if (fd < 0)
		return 0;
	alive = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0 ||
		errno == EAGAIN || errno == EINPROGRESS;
	close(fd);
	return alive;
}

/* Make the socket's directory when it is missing (one level: /run/rdmablk
 * outside systemd's RuntimeDirectory). */
static void
make_parent(const char *path)
{
	char *dup = strdup(path), *dir;

	if (dup == NULL)
		return;
	dir = dirname(dup);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		log_debug("admin socket: mkdir %s: %s", dir, strerror(errno));
	free(dup);
}

static int
admin_bind(struct admin *a, char *why, size_t whylen)
{
	struct sockaddr_un sun;
	struct stat st;
	mode_t old;
	int rc;

	if (admin_sun_fill(&sun, a->path) < 0) {
		snprintf(why, whylen, "path too long");
		return -1;
	}
	make_parent(a->path);
	if (lstat(a->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(why, whylen, "exists and is not a socket");
			return -1;
		}
		if (socket_alive(&sun)) {
			snprintf(why, whylen, "another daemon is serving it");
			return -1;
		}
		unlink(a->path);         /* left behind by a daemon that died */
	}
	a->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->fd < 0) {
		snprintf(why, whylen, "socket: %s", strerror(errno));
		return -1;
	}
	/* Root only from the first moment: no window with a wider mode. */
	old = umask(0177);
	rc = bind(a->fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc < 0) {
		snprintf(why, whylen, "bind: %s", strerror(errno));
		goto out_close;
	}
	if (chmod(a->path, 0600) < 0 || stat(a->path, &st) < 0) {
		snprintf(why, whylen, "chmod: %s", strerror(errno));
		goto out_unlink;
	}
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	if (listen(a->fd, ADMIN_MAX_CLIENTS) < 0) {
		snprintf(why, whylen, "listen: %s", strerror(errno));
		goto out_unlink;
	}
	return 0;

out_unlink:
	unlink(a->path);
out_close:
	close(a->fd);
	a->fd = -1;
	return -1;
}

int
admin_start(struct target *t)
{
	struct admin *a;
	char why[128];
	unsigned i;

	if (t->cfg->admin_socket[0] == '\0')
		return 0;                /* admin-socket = none */
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		log_warnx("admin socket: out of memory");
		return -1;
	}
	a->fd = -1;
	snprintf(a->path, sizeof(a->path), "%s", t->cfg->admin_socket);
	for (i = 0; i < ADMIN_MAX_CLIENTS; i++) {
		a->clients[i].fd = -1;
		a->clients[i].eh.type = EP_ADMIN_CLIENT;
		a->clients[i].eh.obj = &a->clients[i];
	}
	if (admin_bind(a, why, sizeof(why)) < 0)
		goto out_fail;
	if (ep_watch(t->epfd, a->fd, EPOLLIN, &a->eh, EP_ADMIN, a) < 0) {
		snprintf(why, sizeof(why), "epoll_ctl: %s", strerror(errno));
		unlink(a->path);
		close(a->fd);
		goto out_fail;
	}
	t->admin = a;
	log_info("admin socket %s", a->path);
	return 0;

out_fail:
	free(a);
	if (t->cfg->admin_socket_set) {
		log_warnx("admin socket %s: %s", t->cfg->admin_socket, why);
		return -1;
	}
	log_warnx("admin socket %s: %s; running without it (rdmablk-target --stats "
		  "will not reach this daemon)", t->cfg->admin_socket, why);
	return 0;
}

static void
client_drop(struct target *t, struct admin_client *cl)
{
	struct admin *a = t->admin;

	epoll_ctl(t->epfd, EPOLL_CTL_DEL, cl->fd, NULL);
	close(cl->fd);
	cl->fd = -1;
	free(cl->out);
	cl->out = NULL;
	cl->inlen = cl->outlen = cl->outoff = 0;
	a->nclients--;
}

void
admin_stop(struct target *t)
{
	struct admin *a = t->admin;
	struct stat st;
	unsigned i;

	if (a == NULL)
		return;
	for (i = 0; i < ADMIN_MAX_CLIENTS; i++)
		if (a->clients[i].fd >= 0)
			client_drop(t, &a->clients[i]);
	epoll_ctl(t->epfd, EPOLL_CTL_DEL, a->fd, NULL);
	close(a->fd);
	/* Unlink only the socket we bound, not a successor's. */
	if (stat(a->path, &st) == 0 && st.st_dev == a->dev && st.st_ino == a->ino)
		unlink(a->path);
	free(a);
	t->admin = NULL;
}

static void
admin_accept(struct target *t)
{
	struct admin *a = t->admin;
	struct admin_client *cl;
	struct ucred cred;
	socklen_t clen;
	unsigned i, n;
	int fd;

	for (n = 0; n < ADMIN_MAX_CLIENTS; n++) {
		fd = accept4(a->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warn("admin socket: accept");
			return;
		}
		/* The mode already keeps others out; say so when it did not. */
		memset(&cred, 0, sizeof(cred));
		clen = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
		    (cred.uid != 0 && cred.uid != geteuid())) {
			log_warnx("admin socket: refused a client of uid %d", (int)cred.uid);
			close(fd);
			continue;
		}
		cl = NULL;
		for (i = 0; i < ADMIN_MAX_CLIENTS; i++)
			if (a->clients[i].fd < 0) {
				cl = &a->clients[i];
				break;
			}
		if (cl == NULL) {
			log_debug("admin socket: %u clients already; closing a new one",
				  ADMIN_MAX_CLIENTS);
			close(fd);
			continue;
		}
		if (ep_watch(t->epfd, fd, EPOLLIN, &cl->eh, EP_ADMIN_CLIENT, cl) < 0) {
			log_warn("admin socket: epoll_ctl");
			close(fd);
			continue;
		}
		cl->fd = fd;
		cl->inlen = cl->outlen = cl->outoff = 0;
		cl->deadline_ns = rb_now_ns() + ADMIN_CLIENT_TIMEOUT_MS * 1000000ull;
		a->nclients++;
	}
}

static int
set_reply(struct admin_client *cl, const char *text)
{
	cl->out = strdup(text);
	if (cl->out == NULL)
		return -1;
	cl->outlen = strlen(text);
	return 0;
}

/* The request line is in: build the reply. */
static int
client_request(struct target *t, struct admin_client *cl)
{
	char *line = cl->in, *end;
	size_t len;

	cl->in[cl->inlen < sizeof(cl->in) ? cl->inlen : sizeof(cl->in) - 1] = '\0';
	end = strchr(line, '\n');
	if (end != NULL)
		*end = '\0';
	len = strlen(line);
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
		line[--len] = '\0';
	if (strcmp(line, "stats") == 0 || strcmp(line, "stats human") == 0) {
		if (stats_render(t, line[5] != '\0', ADMIN_REPLY_MAX, &cl->out,
				 &cl->outlen) == 0)
			return 0;
		log_warnx("admin socket: the statistics exceed %u bytes", ADMIN_REPLY_MAX);
		return set_reply(cl, "{\"error\": \"reply too large\"}\n");
	}
	return set_reply(cl, "{\"error\": \"unknown request (try \\\"stats\\\" or "
			 "\\\"stats human\\\")\"}\n");
}

/* Send what the socket takes; 1 when done, 0 to wait, -1 on error. */
static int
client_write(struct admin_client *cl)
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

static void
client_event(struct target *t, struct admin_client *cl, uint32_t events)
{
	struct epoll_event ev;
	ssize_t n;
	int rc;

	if (cl->out == NULL) {
		for (;;) {
			/* Keep one byte for the NUL client_request adds. */
			n = read(cl->fd, cl->in + cl->inlen, sizeof(cl->in) - 1 - cl->inlen);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			if (n < 0) {
				client_drop(t, cl);
				return;
			}
			cl->inlen += (size_t)n;
			if (n == 0 || memchr(cl->in, '\n', cl->inlen) != NULL)
				break;
			if (cl->inlen == sizeof(cl->in) - 1) {
				log_debug("admin socket: request line too long");
				client_drop(t, cl);
				return;
			}
		}
		if (cl->inlen == 0 || client_request(t, cl) < 0) {
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
admin_handle(struct target *t, struct ep_handler *eh, uint32_t events)
{
	if (t->admin == NULL)
		return;
	if (eh->type == EP_ADMIN)
		admin_accept(t);
	else
		client_event(t, eh->obj, events);
}

void
admin_expire(struct target *t)
{
	struct admin *a = t->admin;
	uint64_t now;
	unsigned i;

	if (a == NULL || a->nclients == 0)
		return;
	now = rb_now_ns();
	for (i = 0; i < ADMIN_MAX_CLIENTS; i++) {
		struct admin_client *cl = &a->clients[i];

		if (cl->fd >= 0 && now > cl->deadline_ns) {
			log_debug("admin socket: dropped a client that %s in %u ms",
				  cl->out == NULL ? "sent no request" : "did not read its reply",
				  ADMIN_CLIENT_TIMEOUT_MS);
			client_drop(t, cl);
		}
	}
}
