/* A one-request server on the event loop, for the admin socket and the
 * metrics listener: a listening socket the loop watches, at most
 * max_clients clients, each of which sends one request of at most req_max
 * bytes and gets one reply, after which the target closes it.  A client
 * that has not sent its request and read its reply within timeout_ms is
 * dropped, so a stuck or slow client (slowloris) never stalls the loop or
 * holds a slot for long, and every socket is non-blocking. */
#ifndef RDMABLK_TARGET_REQSERV_H
#define RDMABLK_TARGET_REQSERV_H

#include <stddef.h>
#include <stdint.h>

struct target;
struct ep_handler;

struct reqserv_ops {
	const char *name;       /* for the log: "admin socket", "metrics" */
	/* A new client's fd: 0 to serve it, -1 to close it (the callee
	 * logs why).  NULL: serve everyone. */
	int (*admit)(int fd);
	/* 1 when buf[0..len) holds a whole request. */
	int (*complete)(const char *buf, size_t len);
	/* The reply to the request in req (NUL-terminated at len): *out
	 * (malloc'd) and *outlen; -1 drops the client instead. */
	int (*reply)(struct target *t, char *req, size_t len, char **out, size_t *outlen);
};

struct reqserv;

/* Serve the listening socket lfd (non-blocking; the server owns it from
 * now on, and closes it).  NULL (logged) on failure: lfd is closed. */
struct reqserv *reqserv_create(struct target *t, int lfd, const struct reqserv_ops *ops,
			       unsigned max_clients, size_t req_max, unsigned timeout_ms);
void reqserv_destroy(struct target *t, struct reqserv *s);
/* After each event-loop round: drop clients past their deadline. */
void reqserv_expire(struct target *t, struct reqserv *s);

#endif
