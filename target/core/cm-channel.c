/* RDMA CM event channels, the listener's and each loop's (loop.h), and
 * what the target says when the host has no RDMA device at all. */
#include <errno.h>

#include "log.h"
#include "target.h"
#include "util.h"

void
no_rdma_device(const struct target *t)
{
	fatalx("no RDMA device serves %s: %s", t->cfg->listen_host, RB_NO_RDMA_HINT);
}

struct rdma_event_channel *
cm_channel_create(const struct target *t, const char *who)
{
	struct rdma_event_channel *ch;

	ch = rdma_create_event_channel();
	if (ch == NULL) {
		if (errno == ENODEV || errno == ENOENT)
			no_rdma_device(t);
		log_warn("%s: rdma_create_event_channel", who);
		return NULL;
	}
	if (rb_fd_set_nonblock(ch->fd) < 0) {
		log_warn("%s: CM event channel O_NONBLOCK", who);
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	return ch;
}
