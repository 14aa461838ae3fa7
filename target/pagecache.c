/* The gate for buffered writes on an event loop (target/pagecache.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pagecache.h"

/* Shared by every loop: relaxed atomics (a stale value costs one write
 * through the ioq, or one more loop write before the gate closes). */
static uint64_t next_check_ns;
static uint64_t closed_until_ns;
static int calm;

/* From /proc/vmstat: 1 when the dirty and writeback pages are under half
 * the background threshold (the kernel's, computed as it does from the
 * dirtyable memory: free plus file pages), 0 otherwise or when unknown. */
static int
vmstat_calm(void)
{
	unsigned long long v, dirty = 0, wb = 0, free_p = 0, file = 0, ratio = 10, bytes = 0;
	char key[64];
	FILE *f;

	f = fopen("/proc/sys/vm/dirty_background_bytes", "re");
	if (f != NULL) {
		if (fscanf(f, "%llu", &bytes) != 1)
			bytes = 0;
		fclose(f);
	}
	f = fopen("/proc/sys/vm/dirty_background_ratio", "re");
	if (f != NULL) {
		if (fscanf(f, "%llu", &ratio) != 1)
			ratio = 10;
		fclose(f);
	}
	f = fopen("/proc/vmstat", "re");
	if (f == NULL)
		return 0;
	while (fscanf(f, "%63s %llu", key, &v) == 2) {
		if (strcmp(key, "nr_dirty") == 0)
			dirty = v;
		else if (strcmp(key, "nr_writeback") == 0)
			wb = v;
		else if (strcmp(key, "nr_free_pages") == 0)
			free_p = v;
		else if (strcmp(key, "nr_inactive_file") == 0 || strcmp(key, "nr_active_file") == 0)
			file += v;
	}
	fclose(f);
	if (bytes != 0)
		return (dirty + wb) * (unsigned long long)sysconf(_SC_PAGESIZE) < bytes / 2;
	return (dirty + wb) * 100 * 2 < (free_p + file) * ratio;
}

int
pagecache_calm(uint64_t now_ns)
{
	if (now_ns < __atomic_load_n(&closed_until_ns, __ATOMIC_RELAXED))
		return 0;
	if (now_ns >= __atomic_load_n(&next_check_ns, __ATOMIC_RELAXED)) {
		__atomic_store_n(&next_check_ns, now_ns + PAGECACHE_CHECK_NS, __ATOMIC_RELAXED);
		__atomic_store_n(&calm, vmstat_calm(), __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&calm, __ATOMIC_RELAXED);
}

void
pagecache_took(uint64_t now_ns, uint64_t took_ns)
{
	if (took_ns < PAGECACHE_SLOW_NS)
		return;
	__atomic_store_n(&closed_until_ns, now_ns + PAGECACHE_BACKOFF_NS, __ATOMIC_RELAXED);
	log_debug("a write on the event loop took %llu us: writes go to the workers for %llu ms",
		  (unsigned long long)(took_ns / 1000),
		  (unsigned long long)(PAGECACHE_BACKOFF_NS / 1000000));
}
