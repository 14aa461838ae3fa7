/* BLOCK_STATUS on an RBD image, on the image's own thread (rbd-extents.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helper-thread.h"
#include "log.h"
#include "protocol.h"
#include "rbd-extents.h"

struct rbd_extents {
	struct helper_thread h;
	int efd;
	const char *name;           /* the export's, for the log */
	rbd_image_t image;          /* under h.mu: what the queued jobs ask */
	struct job_list todo;       /* under h.mu */
	struct job_list done;       /* under h.mu */
};

/* One job's walk: the extents so far, up to pos. */
struct walk {
	struct rb_extent_list l;
	uint64_t pos, end;
	uint32_t block;
	int full;
};

static int
walk_add(struct walk *w, uint64_t upto, uint32_t flags)
{
	if (upto > w->end)
		upto = w->end;
	if (upto <= w->pos)
		return 0;
	if (rb_extent_list_add(&w->l, upto - w->pos, flags) < 0) {
		w->full = 1;
		return -1;
	}
	w->pos = upto;
	return 0;
}

/* rbd_diff_iterate2's callback: [off, off + len) exists (or not). */
static int
walk_extent(uint64_t off, size_t len, int exists, void *arg)
{
	struct walk *w = arg;
	uint64_t start = off - off % w->block, stop = off + len;

	if (!exists)
		return 0;           /* a hole: the gap before the next data says it */
	if (stop % w->block != 0)
		stop += w->block - stop % w->block;
	if (walk_add(w, start, RB_EXT_HOLE | RB_EXT_ZERO) < 0 ||
	    walk_add(w, stop, RB_EXT_DATA) < 0)
		return -ENOSPC;     /* the reply is full: it covers a prefix */
	return 0;
}

static void
run(rbd_image_t image, struct job *j)
{
	struct walk w = { .pos = j->off, .end = j->off + j->len, .block = j->block };
	int r;

	rb_extent_list_init(&w.l, j->buf);
	r = rbd_diff_iterate2(image, NULL, j->off, j->len, 1, 0, walk_extent, &w);
	if (r < 0 && !w.full) {
		j->result = r;
		return;
	}
	if (!w.full)
		walk_add(&w, w.end, RB_EXT_HOLE | RB_EXT_ZERO);
	j->nextents = w.l.n;
	j->result = 0;
}

static void *
rbd_extents_main(void *arg)
{
	struct rbd_extents *x = arg;
	uint64_t one = 1;
	struct job *j;
	rbd_image_t image;

	pthread_mutex_lock(&x->h.mu);
	for (;;) {
		j = STAILQ_FIRST(&x->todo);
		if (j == NULL) {
			if (helper_thread_sleep(&x->h, 60))
				break;
			continue;
		}
		STAILQ_REMOVE_HEAD(&x->todo, link);
		image = x->image;
		pthread_mutex_unlock(&x->h.mu);
		run(image, j);
		pthread_mutex_lock(&x->h.mu);
		STAILQ_INSERT_TAIL(&x->done, j, link);
		if (write(x->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("export %s: eventfd write", x->name);
	}
	pthread_mutex_unlock(&x->h.mu);
	return NULL;
}

struct rbd_extents *
rbd_extents_create(int efd, const char *name)
{
	struct rbd_extents *x = calloc(1, sizeof(*x));
	int r;

	if (x == NULL) {
		log_warnx("export %s: block status: out of memory", name);
		return NULL;
	}
	x->efd = efd;
	x->name = name;
	STAILQ_INIT(&x->todo);
	STAILQ_INIT(&x->done);
	r = helper_thread_start(&x->h, rbd_extents_main, x);
	if (r != 0) {
		log_warnx("export %s: block status: pthread_create: %s", name, strerror(r));
		free(x);
		return NULL;
	}
	return x;
}

void
rbd_extents_destroy(struct rbd_extents *x)
{
	if (x == NULL)
		return;
	helper_thread_stop(&x->h);
	free(x);
}

void
rbd_extents_submit(struct rbd_extents *x, rbd_image_t image, struct job *j)
{
	pthread_mutex_lock(&x->h.mu);
	x->image = image;
	STAILQ_INSERT_TAIL(&x->todo, j, link);
	pthread_cond_signal(&x->h.cond);
	pthread_mutex_unlock(&x->h.mu);
}

void
rbd_extents_take(struct rbd_extents *x, struct job_list *out)
{
	STAILQ_INIT(out);
	if (x == NULL)
		return;
	pthread_mutex_lock(&x->h.mu);
	STAILQ_CONCAT(out, &x->done);
	pthread_mutex_unlock(&x->h.mu);
}
