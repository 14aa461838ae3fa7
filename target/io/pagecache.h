/* Whether a small buffered write may run on an event loop now
 * (target/io/pagecache.c).
 *
 * Neither an ext4 file nor a block device takes a non-blocking buffered
 * write (pwritev2 RWF_NOWAIT fails with EOPNOTSUPP on Linux 6.12), so a
 * small write done on the loop is a plain pwrite: a copy into the page
 * cache, unless the kernel throttles the writer (balance_dirty_pages) or
 * reclaims for it.  The dirty-page counters that would say so in advance
 * (/proc/vmstat, /proc/sys/vm) are hidden by the unit's ProcSubset=pid, so
 * the gate goes by what the writes themselves took: one that took longer
 * than PAGECACHE_SLOW_NS closes it, first for PAGECACHE_BACKOFF_NS, then
 * twice as long each time slow writes recur, up to PAGECACHE_BACKOFF_MAX_NS.
 * Under lasting writeback pressure the loop then loses one throttled
 * write's pause (at most a few hundred ms) per PAGECACHE_BACKOFF_MAX_NS,
 * and every other write goes to the ioq. */
#ifndef RDMABLK_PAGECACHE_H
#define RDMABLK_PAGECACHE_H

#include <stdint.h>

/* Not less: under emulation a thread preempted for a few ms in a plain
 * copy is common, and the kernel's throttling pauses are longer. */
#define PAGECACHE_SLOW_NS        (10 * 1000 * 1000ull)
#define PAGECACHE_BACKOFF_NS     (1000 * 1000 * 1000ull)
#define PAGECACHE_BACKOFF_MAX_NS (64 * 1000 * 1000 * 1000ull)

/* 1 when a small buffered write may run on the calling loop thread now. */
int  pagecache_calm(uint64_t now_ns);
/* A write on a loop took took_ns: a slow one closes the gate. */
void pagecache_took(uint64_t now_ns, uint64_t took_ns);

#endif
