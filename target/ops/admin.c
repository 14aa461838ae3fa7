/* The admin socket (target/ops/admin.h), served by the event loop.  The client
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
#include "core/stats.h"
#include "core/target.h"
#include "log.h"
#include "reqserv.h"

struct admin {
	struct reqserv *srv;
	int fd;                     /* until the server owns it */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;                  /* of the socket we bound, to unlink only ours */
	ino_t ino;
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

/* Root (or our own user) only: the mode already keeps others out; say so
 * when it did not. */
static int
admin_admit(int fd)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);

	memset(&cred, 0, sizeof(cred));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
	    (cred.uid != 0 && cred.uid != geteuid())) {
		log_warnx("admin socket: refused a client of uid %d", (int)cred.uid);
		return -1;
	}
	return 0;
}

static int
admin_complete(const char *buf, size_t len)
{
	return memchr(buf, '\n', len) != NULL;
}

static int
set_reply(const char *text, char **out, size_t *outlen)
{
	*out = strdup(text);
	if (*out == NULL)
		return -1;
	*outlen = strlen(text);
	return 0;
}

/* The request line is in: build the reply. */
static int
admin_reply(struct target *t, char *line, size_t len, char **out, size_t *outlen)
{
	char *end = strchr(line, '\n');

	if (end != NULL)
		*end = '\0';
	len = strlen(line);
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
		line[--len] = '\0';
	if (strcmp(line, "stats") == 0 || strcmp(line, "stats human") == 0) {
		if (stats_render(t, line[5] != '\0', ADMIN_REPLY_MAX, out, outlen) == 0)
			return 0;
		log_warnx("admin socket: the statistics exceed %u bytes", ADMIN_REPLY_MAX);
		return set_reply("{\"error\": \"reply too large\"}\n", out, outlen);
	}
	return set_reply("{\"error\": \"unknown request (try \\\"stats\\\" or "
			 "\\\"stats human\\\")\"}\n", out, outlen);
}

static const struct reqserv_ops admin_ops = {
	.name = "admin socket",
	.admit = admin_admit,
	.complete = admin_complete,
	.reply = admin_reply,
};

int
admin_start(struct target *t)
{
	struct admin *a;
	char why[128];

	if (t->cfg->admin_socket[0] == '\0')
		return 0;                /* admin-socket = none */
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		log_warnx("admin socket: out of memory");
		return -1;
	}
	a->fd = -1;
	snprintf(a->path, sizeof(a->path), "%s", t->cfg->admin_socket);
	if (admin_bind(a, why, sizeof(why)) < 0)
		goto out_fail;
	a->srv = reqserv_create(t, a->fd, &admin_ops, ADMIN_MAX_CLIENTS, ADMIN_REQUEST_MAX,
				ADMIN_CLIENT_TIMEOUT_MS);
	if (a->srv == NULL) {
		snprintf(why, sizeof(why), "cannot serve it");
		unlink(a->path);
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

void
admin_stop(struct target *t)
{
	struct admin *a = t->admin;
	struct stat st;

	if (a == NULL)
		return;
	reqserv_destroy(t, a->srv);
	/* Unlink only the socket we bound, not a successor's. */
	if (stat(a->path, &st) == 0 && st.st_dev == a->dev && st.st_ino == a->ino)
		unlink(a->path);
	free(a);
	t->admin = NULL;
}

void
admin_expire(struct target *t)
{
	if (t->admin != NULL)
		reqserv_expire(t, t->admin->srv);
}
