/* rdmablk-target --stats: the admin socket's client (target/ops/admin.h says
 * what it asks and what the daemon answers). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "admin.h"

#define ADMIN_QUERY_TIMEOUT_MS 10000

static int
query_fail(const char *path, const char *what)
{
	fprintf(stderr, "rdmablk-target: cannot reach the admin socket %s: is the daemon "
		"running? (%s: %s)\n", path, what, strerror(errno));
	return 1;
}

int
admin_query(const char *path, int human)
{
	const char *req = human ? "stats human\n" : "stats\n";
	struct sockaddr_un sun;
	struct pollfd pfd;
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, rc = 1;

	if (admin_sun_fill(&sun, path) < 0)
		return query_fail(path, "socket path");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return query_fail(path, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		rc = query_fail(path, "connect");
		goto out_close;
	}
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		rc = query_fail(path, "write");
		goto out_close;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	for (;;) {
		n = poll(&pfd, 1, ADMIN_QUERY_TIMEOUT_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ETIMEDOUT;
			rc = query_fail(path, "read");
			goto out_free;
		}
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap);
			if (nb == NULL) {
				fprintf(stderr, "rdmablk-target: out of memory\n");
				goto out_free;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = query_fail(path, "read");
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len == 0) {
		fprintf(stderr, "rdmablk-target: %s: the daemon closed the admin connection "
			"without a reply\n", path);
		goto out_free;
	}
	if (len >= 9 && memcmp(buf, "{\"error\":", 9) == 0) {
		fprintf(stderr, "rdmablk-target: %s: %.*s", path, (int)len, buf);
		goto out_free;
	}
	rc = fwrite(buf, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : 1;
out_free:
	free(buf);
out_close:
	close(fd);
	return rc;
}
