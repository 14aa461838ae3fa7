/* A ublk device's life: ADD_DEV with the export's geometry, SET_PARAMS,
 * queue threads issue their fetches, START_DEV; and the way back: STOP_DEV
 * (the kernel drains in-flight I/O, which the queue threads still serve,
 * then aborts their fetches), join, close /dev/ublkcN, DEL_DEV. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"
#include "ublk.h"

static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;

void
ub_queue_ready(struct ub_queue *q, int ok)
{
	pthread_mutex_lock(&ready_lock);
	q->ready = 1;
	q->failed = !ok;
	pthread_cond_broadcast(&ready_cond);
	pthread_mutex_unlock(&ready_lock);
}

static int
log2_exact(uint32_t v)
{
	int s = 0;

	while ((1u << s) < v)
		s++;
	return (1u << s) == v ? s : -1;
}

static int
set_params(struct ub_dev *d, struct ub_ctrl *c)
{
	struct ublk_params p;
	int lbs = log2_exact(d->desc.min_block), pbs = log2_exact(d->desc.pref_block);
	int r;

	if (lbs < 9 || lbs > 12 || pbs < lbs) {
		ub_log("export block sizes %u/%u cannot be a ublk device's "
		       "(a power of two, 512..4096)", d->desc.min_block, d->desc.pref_block);
		return -EINVAL;
	}
	memset(&p, 0, sizeof(p));
	p.len = sizeof(p);
	p.types = UBLK_PARAM_TYPE_BASIC;
	if (d->desc.flags & RB_EXP_READ_ONLY)
		p.basic.attrs |= UBLK_ATTR_READ_ONLY;
	/* A volatile cache is what makes the block layer send FLUSH and FUA. */
	if (d->desc.flags & RB_EXP_FLUSH)
		p.basic.attrs |= UBLK_ATTR_VOLATILE_CACHE;
	if (d->desc.flags & RB_EXP_FUA)
		p.basic.attrs |= UBLK_ATTR_FUA;
	p.basic.logical_bs_shift = (uint8_t)lbs;
	p.basic.physical_bs_shift = (uint8_t)pbs;
	p.basic.io_min_shift = (uint8_t)pbs;
	p.basic.io_opt_shift = (uint8_t)pbs;
	p.basic.max_sectors = d->io_bytes >> 9;
	p.basic.dev_sectors = d->desc.size >> 9;
	if ((d->desc.flags & RB_EXP_TRIM) && !(d->desc.flags & RB_EXP_READ_ONLY)) {
		p.types |= UBLK_PARAM_TYPE_DISCARD;
		p.discard.discard_granularity = d->desc.min_block;
		p.discard.max_discard_sectors = d->io_bytes >> 9;
		p.discard.max_discard_segments = 1;
		if (d->desc.flags & RB_EXP_ZEROES)
			p.discard.max_write_zeroes_sectors = d->io_bytes >> 9;
	}
	r = ub_ctrl_cmd(c, UB_CMD(UBLK_CMD_SET_PARAMS), d->info.dev_id, &p,
			sizeof(p), 0);
	if (r < 0)
		ub_log("SET_PARAMS: %s", strerror(-r));
	return r;
}

/* udev or devtmpfs creates /dev/ublkcN a moment after ADD_DEV. */
static int
open_cdev(struct ub_dev *d)
{
	char path[64];
	int i;

	snprintf(path, sizeof(path), "/dev/ublkc%u", d->info.dev_id);
	for (i = 0; i < 100; i++) {
		d->cdev_fd = open(path, O_RDWR | O_CLOEXEC);
		if (d->cdev_fd >= 0)
			return 0;
		if (errno != ENOENT)
			break;
		usleep(50 * 1000);
	}
	ub_log("%s: %s", path, strerror(errno));
	return -errno;
}

/* The CPUs the block layer maps to queue q (GET_QUEUE_AFFINITY): its
 * thread runs there, as ublksrv's do, so that a request submitted on
 * one of them wakes a thread on the same CPU.  Without the answer the
 * thread may run anywhere (logged). */
static void
get_affinity(struct ub_dev *d, struct ub_ctrl *c, struct ub_queue *q)
{
	int r;

	CPU_ZERO(&q->cpus);
	r = ub_ctrl_cmd(c, UB_CMD_R(UBLK_CMD_GET_QUEUE_AFFINITY), d->info.dev_id, &q->cpus,
			sizeof(q->cpus), q->id);
	if (r < 0 || CPU_COUNT(&q->cpus) == 0) {
		ub_log("queue %u: GET_QUEUE_AFFINITY: %s: its thread is not pinned", q->id,
		       r < 0 ? strerror(-r) : "no CPU");
		return;
	}
	q->have_cpus = 1;
}

static int
start_queues(struct ub_dev *d, struct ub_ctrl *c)
{
	unsigned i;
	int r = 0;

	d->queues = calloc(d->nr_queues, sizeof(*d->queues));
	if (d->queues == NULL) {
		ub_log("out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < d->nr_queues; i++) {
		struct ub_queue *q = &d->queues[i];

		q->dev = d;
		q->id = i;
		get_affinity(d, c, q);
		if (ub_queue_create(q) < 0)
			return -EIO;
	}
	for (i = 0; i < d->nr_queues; i++) {
		r = pthread_create(&d->queues[i].tid, NULL, ub_queue_run, &d->queues[i]);
		if (r != 0) {
			ub_log("pthread_create: %s", strerror(r));
			return -r;
		}
		d->queues[i].started = 1;
	}
	pthread_mutex_lock(&ready_lock);
	for (i = 0; i < d->nr_queues; i++) {
		while (!d->queues[i].ready)
			pthread_cond_wait(&ready_cond, &ready_lock);
		if (d->queues[i].failed)
			r = -EIO;
	}
	pthread_mutex_unlock(&ready_lock);
	return r;
}

static void
free_queues(struct ub_dev *d)
{
	unsigned i;

	if (d->queues == NULL)
		return;
	for (i = 0; i < d->nr_queues; i++)
		ub_queue_destroy(&d->queues[i]);
	free(d->queues);
	d->queues = NULL;
}

int
ub_dev_add(struct ub_dev *d, int *dev_id)
{
	struct ub_ctrl c;
	uint64_t features = 0;
	int r;

	d->cdev_fd = -1;
	r = rb_client_open(&d->opts, &d->first);
	if (r < 0)
		return r;
	d->desc = *rb_client_export(d->first);
	r = ub_ctrl_open(&c);
	if (r < 0)
		goto out_client;
	r = ub_ctrl_cmd(&c, UB_CMD_R(UBLK_CMD_GET_FEATURES), 0, &features,
			sizeof(features), 0);
	if (r < 0 || !(features & UBLK_F_CMD_IOCTL_ENCODE)) {
		ub_log("this kernel's ublk is too old: GET_FEATURES %s, features %#llx "
		       "(need UBLK_F_CMD_IOCTL_ENCODE, Linux 6.2 or later)",
		       r < 0 ? strerror(-r) : "ok", (unsigned long long)features);
		r = -EOPNOTSUPP;
		goto out_ctrl;
	}
	memset(&d->info, 0, sizeof(d->info));
	d->info.nr_hw_queues = (uint16_t)d->nr_queues;
	d->info.queue_depth = (uint16_t)d->depth;
	d->info.max_io_buf_bytes = d->desc.max_io;
	d->info.dev_id = (uint32_t)-1;
	d->info.ublksrv_pid = getpid();
	r = ub_ctrl_cmd(&c, UB_CMD(UBLK_CMD_ADD_DEV), (uint32_t)-1, &d->info,
			sizeof(d->info), 0);
	if (r < 0) {
		ub_log("ADD_DEV: %s", strerror(-r));
		goto out_ctrl;
	}
	/* The kernel may have lowered what we asked for (no more queues than
	 * CPUs): serve what it granted, and say so. */
	if (d->info.nr_hw_queues < 1 || d->info.nr_hw_queues > d->nr_queues ||
	    d->info.queue_depth < 1 || d->info.queue_depth > d->depth) {
		ub_log("ADD_DEV granted %u queues of depth %u, asked %u of %u",
		       d->info.nr_hw_queues, d->info.queue_depth, d->nr_queues, d->depth);
		r = -EINVAL;
		goto out_del;
	}
	/* The default of two queues on one CPU is granted one: no news. */
	if (d->info.queue_depth != d->depth ||
	    (d->info.nr_hw_queues != d->nr_queues && d->queues_set))
		ub_log("note: the kernel granted %u queue(s) of depth %u (asked %u of %u)",
		       d->info.nr_hw_queues, d->info.queue_depth, d->nr_queues, d->depth);
	else if (d->info.nr_hw_queues != d->nr_queues)
		ub_info("%u queue(s), one per CPU (the default asks %u)", d->info.nr_hw_queues,
			d->nr_queues);
	d->nr_queues = d->info.nr_hw_queues;
	d->depth = d->info.queue_depth;
	d->io_bytes = d->info.max_io_buf_bytes < d->desc.max_io ?
		d->info.max_io_buf_bytes : d->desc.max_io;
	d->io_bytes &= ~(d->desc.min_block - 1);
	r = set_params(d, &c);
	if (r < 0)
		goto out_del;
	r = open_cdev(d);
	if (r < 0)
		goto out_del;
	r = start_queues(d, &c);
	if (r < 0)
		goto out_stop;
	/* Returns once every queue has all its fetches in. */
	r = ub_ctrl_cmd(&c, UB_CMD(UBLK_CMD_START_DEV), d->info.dev_id, NULL, 0,
			(uint64_t)getpid());
	if (r < 0) {
		ub_log("START_DEV: %s", strerror(-r));
		goto out_stop;
	}
	ub_ctrl_close(&c);
	*dev_id = (int)d->info.dev_id;
	return 0;

out_stop:
	ub_ctrl_close(&c);
	ub_dev_remove(d, 1);
	return r;
out_del:
	ub_ctrl_cmd(&c, UB_CMD(UBLK_CMD_DEL_DEV), d->info.dev_id, NULL, 0, 0);
out_ctrl:
	ub_ctrl_close(&c);
out_client:
	rb_client_close(d->first);
	d->first = NULL;
	return r;
}

static void
join_queues(struct ub_dev *d)
{
	unsigned i;

	for (i = 0; d->queues != NULL && i < d->nr_queues; i++)
		if (d->queues[i].started)
			pthread_join(d->queues[i].tid, NULL);
}

void
ub_dev_remove(struct ub_dev *d, int own_stop)
{
	struct ub_ctrl c;
	int r, have_ctrl = ub_ctrl_open(&c) == 0;

	if (own_stop && have_ctrl) {
		r = ub_ctrl_cmd(&c, UB_CMD(UBLK_CMD_STOP_DEV), d->info.dev_id, NULL, 0, 0);
		if (r < 0)
			ub_log("STOP_DEV ublkb%u: %s", d->info.dev_id, strerror(-r));
	}
	join_queues(d);
	free_queues(d);
	if (d->cdev_fd >= 0)
		close(d->cdev_fd);
	d->cdev_fd = -1;
	rb_client_close(d->first);
	d->first = NULL;
	/* DEL_DEV waits for /dev/ublkcN to be closed: done above. */
	if (own_stop && have_ctrl) {
		r = ub_ctrl_cmd(&c, UB_CMD(UBLK_CMD_DEL_DEV), d->info.dev_id, NULL, 0, 0);
		if (r < 0 && r != -ENODEV)
			ub_log("DEL_DEV ublkb%u: %s", d->info.dev_id, strerror(-r));
	}
	if (have_ctrl)
		ub_ctrl_close(&c);
}

int
ub_del(int dev_id)
{
	struct ublksrv_ctrl_dev_info info;
	struct ub_ctrl c;
	int r;

	r = ub_ctrl_open(&c);
	if (r < 0)
		return r;
	r = ub_ctrl_cmd(&c, UB_CMD_R(UBLK_CMD_GET_DEV_INFO), (uint32_t)dev_id, &info,
			sizeof(info), 0);
	if (r < 0) {
		ub_log("/dev/ublkb%d: %s", dev_id, r == -ENODEV ? "no such ublk device" :
		       strerror(-r));
		goto out;
	}
	/* The server serves what is in flight until the kernel has drained
	 * it, then its fetches are aborted and it exits, closing
	 * /dev/ublkcN, which DEL_DEV waits for. */
	r = ub_ctrl_cmd(&c, UB_CMD(UBLK_CMD_STOP_DEV), (uint32_t)dev_id, NULL, 0, 0);
	if (r < 0) {
		ub_log("STOP_DEV /dev/ublkb%d: %s", dev_id, strerror(-r));
		goto out;
	}
	r = ub_ctrl_cmd(&c, UB_CMD(UBLK_CMD_DEL_DEV), (uint32_t)dev_id, NULL, 0, 0);
	if (r < 0)
		ub_log("DEL_DEV /dev/ublkb%d: %s", dev_id, strerror(-r));
out:
	ub_ctrl_close(&c);
	return r;
}

static const char *
state_name(unsigned s)
{
	switch (s) {
	case UBLK_S_DEV_DEAD:     return "dead";
	case UBLK_S_DEV_LIVE:     return "live";
	case UBLK_S_DEV_QUIESCED: return "quiesced";
	default:                  return "?";
	}
}

int
ub_list(void)
{
	struct ublksrv_ctrl_dev_info info;
	struct ub_ctrl c;
	struct dirent *e;
	DIR *dir;
	int r, id;
	char tail;

	r = ub_ctrl_open(&c);
	if (r < 0)
		return r;
	dir = opendir("/dev");
	if (dir == NULL) {
		ub_log("/dev: %s", strerror(errno));
		ub_ctrl_close(&c);
		return -errno;
	}
	while ((e = readdir(dir)) != NULL) {
		if (sscanf(e->d_name, "ublkc%d%c", &id, &tail) != 1)
			continue;
		r = ub_ctrl_cmd(&c, UB_CMD_R(UBLK_CMD_GET_DEV_INFO), (uint32_t)id, &info,
				sizeof(info), 0);
		if (r < 0)
			continue;
		printf("/dev/ublkb%u state=%s pid=%d queues=%u queue-depth=%u max-io=%u\n",
		       info.dev_id, state_name(info.state), info.ublksrv_pid,
		       info.nr_hw_queues, info.queue_depth, info.max_io_buf_bytes);
	}
	closedir(dir);
	ub_ctrl_close(&c);
	return 0;
}
