/* The metrics listener (target/ops/metrics.h): HTTP/1.x, one request per
 * connection, on the event loop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/target.h"
#include "log.h"
#include "metrics.h"
#include "reqserv.h"

/* The request line and the headers are in: a blank line ends them (the
 * bytes may hold a NUL: garbage is answered too, with a 400). */
static int
metrics_complete(const char *buf, size_t len)
{
	return memmem(buf, len, "\r\n\r\n", 4) != NULL || memmem(buf, len, "\n\n", 2) != NULL;
}

static int
http_reply(const char *status, const char *type, const char *body, size_t blen,
	   char **out, size_t *outlen)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n", status, type, blen);

	*out = malloc((size_t)n + blen);
	if (*out == NULL)
		return -1;
	memcpy(*out, head, (size_t)n);
	memcpy(*out + n, body, blen);
	*outlen = (size_t)n + blen;
	return 0;
}

static int
text_reply(const char *status, const char *text, char **out, size_t *outlen)
{
	return http_reply(status, "text/plain; charset=utf-8", text, strlen(text), out, outlen);
}

static int
metrics_reply(struct target *t, char *req, size_t len, char **out, size_t *outlen)
{
	char method[16], path[256], version[16];
	char *body;
	size_t blen;
	int r;

	(void)len;
	if (sscanf(req, "%15s %255s %15s", method, path, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7) != 0)
		return text_reply("400 Bad Request", "not an HTTP/1 request\n", out, outlen);
	if (strcmp(method, "GET") != 0 || strcmp(path, "/metrics") != 0)
		return text_reply("404 Not Found", "only GET /metrics is served here\n", out,
				  outlen);
	if (metrics_render(t, METRICS_REPLY_MAX, &body, &blen) < 0) {
		log_warnx("metrics: the exposition exceeds %u bytes", METRICS_REPLY_MAX);
		return text_reply("500 Internal Server Error", "the metrics are too large\n",
				  out, outlen);
	}
	r = http_reply("200 OK", "text/plain; version=0.0.4; charset=utf-8", body, blen, out,
		       outlen);
	free(body);
	return r;
}

static const struct reqserv_ops metrics_ops = {
	.name = "metrics",
	.complete = metrics_complete,
	.reply = metrics_reply,
};

int
metrics_start(struct target *t)
{
	const struct config *c = t->cfg;
	int fd, one = 1;

	if (c->metrics_listen_len == 0)
		return 0;                /* metrics-listen = none, the default */
	fd = socket(c->metrics_listen.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_warn("metrics-listen %s: socket", c->metrics_listen_str);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&c->metrics_listen, c->metrics_listen_len) < 0 ||
	    listen(fd, METRICS_MAX_CLIENTS) < 0) {
		log_warn("metrics-listen %s", c->metrics_listen_str);
		close(fd);
		return -1;
	}
	t->metrics = reqserv_create(t, fd, &metrics_ops, METRICS_MAX_CLIENTS,
				    METRICS_REQUEST_MAX, METRICS_CLIENT_TIMEOUT_MS);
	if (t->metrics == NULL)
		return -1;
	log_info("metrics on http://%s/metrics", c->metrics_listen_str);
	return 0;
}

void
metrics_stop(struct target *t)
{
	reqserv_destroy(t, t->metrics);
	t->metrics = NULL;
}

void
metrics_expire(struct target *t)
{
	reqserv_expire(t, t->metrics);
}
