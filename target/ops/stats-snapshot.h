/* What the renderings of the statistics (stats-render.c for --stats,
 * metrics-render.c for Prometheus) read: an export's and the target's
 * figures summed over their connections, and the names they print.  Call
 * with the other loops stopped (loops_stop_world), on loop 0. */
#ifndef RDMABLK_TARGET_STATS_SNAPSHOT_H
#define RDMABLK_TARGET_STATS_SNAPSHOT_H

#include <stdint.h>

#include "core/stats.h"
#include "rbd/rbd.h"

struct target;
struct export;

/* "read", "write", "flush", "trim", "zero", "nop", "block_status". */
extern const char *const stats_op_names[RB_OP__COUNT];

/* An export's figures: its closed connections plus its live ones, and
 * the requests in flight on those. */
void stats_export_snapshot(struct target *t, struct export *e, struct stats_io *io,
			   uint64_t *in_flight);
/* Every export's, and those of the exports removed by reloads. */
void stats_total_snapshot(struct target *t, struct stats_io *io, uint64_t *in_flight);
/* "owner", "waiting", "none", "lost". */
const char *stats_imglock_state_name(enum imglock_state s);
/* An RBD export's lock (its lock thread's figures, under its mutex) and
 * reopens: 1 and st filled, or 0 for a file export. */
int  stats_rbd_figures(const struct export *e, struct rbd_stats *st);

#endif
