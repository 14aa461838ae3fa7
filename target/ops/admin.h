/* The admin socket: a UNIX stream socket (mode 0600) served by the event
 * loop.  A client sends one line and gets one reply, then the target
 * closes the connection:
 *
 *   "stats\n"        the statistics as a JSON document (target/core/stats.h)
 *   "stats human\n"  the same as a table
 *
 * Requests and replies are bounded, every socket is non-blocking, and a
 * client that has not sent its line and read its reply within
 * ADMIN_CLIENT_TIMEOUT_MS is dropped: a stuck client never stalls the
 * data path. */
#ifndef RDMABLK_TARGET_ADMIN_H
#define RDMABLK_TARGET_ADMIN_H

#include <stdint.h>

#define ADMIN_MAX_CLIENTS        8
#define ADMIN_REQUEST_MAX        128               /* bytes, newline included */
#define ADMIN_REPLY_MAX          (4u << 20)
#define ADMIN_CLIENT_TIMEOUT_MS  5000

struct target;
struct sockaddr_un;

/* Start serving t->cfg->admin_socket.  Returns -1 when a socket named in
 * the config cannot be served; the default one only gets a warning. */
int  admin_start(struct target *t);
void admin_stop(struct target *t);
/* After each event-loop round: drop clients past their deadline. */
void admin_expire(struct target *t);

/* rdmablk-target --stats (admin-query.c): ask the daemon at path, print its
 * reply.  Returns the exit status. */
int  admin_query(const char *path, int human);
/* sun for path; -1 (ENAMETOOLONG) when it does not fit. */
int  admin_sun_fill(struct sockaddr_un *sun, const char *path);

#endif
