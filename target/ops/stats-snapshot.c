/* Snapshots of the statistics for their renderings (stats-snapshot.h). */
#include "conn/conn.h"
#include "core/loop.h"
#include "core/target.h"
#include "stats-snapshot.h"

const char *const stats_op_names[RB_OP__COUNT] = {
	[RB_OP_READ] = "read", [RB_OP_WRITE] = "write", [RB_OP_FLUSH] = "flush",
	[RB_OP_TRIM] = "trim", [RB_OP_WRITE_ZEROES] = "zero", [RB_OP_NOP] = "nop",
	[RB_OP_BLOCK_STATUS] = "block_status",
};

void
stats_export_snapshot(struct target *t, struct export *e, struct stats_io *io,
		      uint64_t *in_flight)
{
	struct conn *c;
	unsigned li;

	*io = e->stats;
	*in_flight = 0;
	FOR_EACH_CONN(t, li, c) {
		if (c->rq.exp != e)
			continue;
		stats_io_add(io, &c->rq.stats);
		*in_flight += c->rq.credits_used;
	}
}

void
stats_total_snapshot(struct target *t, struct stats_io *io, uint64_t *in_flight)
{
	struct export *e;
	struct stats_io one;
	uint64_t inf;

	*io = t->stats.gone;
	*in_flight = 0;
	STAILQ_FOREACH(e, &t->exports, link) {
		stats_export_snapshot(t, e, &one, &inf);
		stats_io_add(io, &one);
		*in_flight += inf;
	}
}

/* In the target: the RBD module's code is loaded only for RBD exports. */
const char *
stats_imglock_state_name(enum imglock_state s)
{
	switch (s) {
	case IMGLOCK_NONE:    return "none";
	case IMGLOCK_WAITING: return "waiting";
	case IMGLOCK_OWNER:   return "owner";
	case IMGLOCK_LOST:    return "lost";
	}
	return "?";
}

int
stats_rbd_figures(const struct export *e, struct rbd_stats *st)
{
	if (e->cfg->rbd == NULL)
		return 0;
	rbd_backing_get_stats(e->cfg->rbd, st);
	return 1;
}
