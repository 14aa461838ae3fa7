/* Whether a buffered write may run on an event loop now: the page cache is
 * far from the point where the kernel throttles writers (target/pagecache.c).
 *
 * Neither an ext4 file nor a block device takes a non-blocking buffered
 * write (pwritev2 RWF_NOWAIT fails with EOPNOTSUPP on Linux 6.12), so a
 * small write done on the loop is a plain pwrite, and what bounds it is
 * this gate: while the dirty and writeback pages stay under half the
 * background threshold, balance_dirty_pages lets a writer through without
 * sleeping, and a 4 KiB write into the page cache is a copy.  A write
 * that took longer than PAGECACHE_SLOW_NS anyway (a memory cgroup's own
 * limit, reclaim) closes the gate for PAGECACHE_BACKOFF_NS.  Not less:
 * under emulation a thread preempted for a few ms in a plain copy is
 * common, and the kernel's throttling pauses are longer than that. */
#ifndef RDMABLK_PAGECACHE_H
#define RDMABLK_PAGECACHE_H

#include <stdint.h>

#define PAGECACHE_CHECK_NS   (100 * 1000 * 1000ull)   /* re-read /proc/vmstat */
#define PAGECACHE_SLOW_NS    (10 * 1000 * 1000ull)    /* a loop write this slow... */
#define PAGECACHE_BACKOFF_NS (1000 * 1000 * 1000ull)  /* ...closes the gate this long */

/* 1 when a buffered write may run on the calling loop thread now.  Any
 * thread; reads /proc/vmstat at most every PAGECACHE_CHECK_NS. */
int  pagecache_calm(uint64_t now_ns);
/* A write on a loop took took_ns: a slow one closes the gate. */
void pagecache_took(uint64_t now_ns, uint64_t took_ns);

#endif
