/* Prometheus metrics: `metrics-listen = ADDR:PORT` in [target] (off by
 * default) serves GET /metrics in the text exposition format 0.0.4 from
 * the event loop, with no thread per scrape.  Like the admin socket it
 * bounds its clients, their requests and their time (reqserv.h); anything
 * but GET /metrics gets a 404, a request that is not HTTP a 400. */
#ifndef RDMABLK_TARGET_METRICS_H
#define RDMABLK_TARGET_METRICS_H

#include <stddef.h>

#define METRICS_MAX_CLIENTS        16
#define METRICS_REQUEST_MAX        8192      /* request line and headers */
#define METRICS_REPLY_MAX          (8u << 20)
#define METRICS_CLIENT_TIMEOUT_MS  5000

struct target;

/* Listen on t->cfg->metrics_listen, when set.  -1 (logged) when it cannot. */
int  metrics_start(struct target *t);
void metrics_stop(struct target *t);
/* After each event-loop round: drop clients past their deadline. */
void metrics_expire(struct target *t);
/* The exposition (metrics-render.c): *out malloc'd.  0, or -1 when it
 * would exceed max bytes. */
int  metrics_render(struct target *t, size_t max, char **out, size_t *len);

#endif
