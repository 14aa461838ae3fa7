/* Per-device protection domain and pre-registered buffer pools: one per
 * event loop, buffer-pool split evenly between them (a pool is one loop's
 * alone, so it takes no lock). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/target.h"
#include "log.h"

struct device *
device_get(struct target *t, struct ibv_context *verbs)
{
	struct device *d;
	unsigned nbufs, i;

	STAILQ_FOREACH(d, &t->devices, link)
		if (d->verbs == verbs)
			return d;
	d = calloc(1, sizeof(*d));
	if (d == NULL) {
		log_warnx("device: out of memory");
		return NULL;
	}
	d->verbs = verbs;
	if (ibv_query_device(verbs, &d->attr) != 0) {
		log_warn("%s: ibv_query_device", ibv_get_device_name(verbs->device));
		goto out_free;
	}
	d->pd = ibv_alloc_pd(verbs);
	if (d->pd == NULL) {
		log_warn("%s: ibv_alloc_pd", ibv_get_device_name(verbs->device));
		goto out_free;
	}
	d->pools = calloc(t->nloops, sizeof(*d->pools));
	if (d->pools == NULL) {
		log_warnx("device: out of memory");
		goto out_dealloc_pd;
	}
	/* config.c: at least one buffer per loop */
	nbufs = (unsigned)(t->cfg->buffer_pool / t->cfg->max_io) / t->nloops;
	for (i = 0; i < t->nloops; i++) {
		d->pools[i] = pool_create(d->pd, t->cfg->max_io, nbufs);
		if (d->pools[i] == NULL)
			goto out_destroy_pools;
		d->npools = i + 1;
	}
	if (t->nloops == 1)
		log_info("%s: registered a pool of %u buffers of %u bytes",
			 ibv_get_device_name(verbs->device), nbufs, t->cfg->max_io);
	else
		log_info("%s: registered %u pools (one per event loop) of %u buffers of %u bytes",
			 ibv_get_device_name(verbs->device), t->nloops, nbufs, t->cfg->max_io);
	STAILQ_INSERT_HEAD(&t->devices, d, link);
	return d;

out_destroy_pools:
	while (i-- > 0)
		pool_destroy(d->pools[i]);
	free(d->pools);
out_dealloc_pd:
	ibv_dealloc_pd(d->pd);
out_free:
	free(d);
	return NULL;
}

void
device_destroy_all(struct target *t)
{
	struct device *d;
	unsigned i;

	while ((d = STAILQ_FIRST(&t->devices)) != NULL) {
		STAILQ_REMOVE_HEAD(&t->devices, link);
		for (i = 0; i < d->npools; i++)
			pool_destroy(d->pools[i]);
		free(d->pools);
		if (ibv_dealloc_pd(d->pd) != 0)
			log_warnx("ibv_dealloc_pd failed: resources still use it");
		free(d);
	}
}
