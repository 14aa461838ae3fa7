/* The gate for small buffered writes on an event loop (target/io/pagecache.h). */
#include "log.h"
#include "pagecache.h"

/* Shared by every loop: relaxed atomics (a race costs one write through
 * the ioq, or one more loop write before the gate closes). */
static uint64_t closed_until_ns;   /* loop writes go to the ioq until then */
static uint64_t backoff_ns;        /* the last closing's length, or 0 */
static uint64_t last_slow_ns;

int
pagecache_calm(uint64_t now_ns)
{
	return now_ns >= __atomic_load_n(&closed_until_ns, __ATOMIC_RELAXED);
}

void
pagecache_took(uint64_t now_ns, uint64_t took_ns)
{
	uint64_t b, last;

	if (took_ns < PAGECACHE_SLOW_NS)
		return;
	b = __atomic_load_n(&backoff_ns, __ATOMIC_RELAXED);
	last = __atomic_load_n(&last_slow_ns, __ATOMIC_RELAXED);
	/* Twice as long while slow writes recur within two of the longest
	 * closings; afresh after a quiet spell. */
	if (b == 0 || now_ns - last > 2 * PAGECACHE_BACKOFF_MAX_NS)
		b = PAGECACHE_BACKOFF_NS;
	else if (b < PAGECACHE_BACKOFF_MAX_NS)
		b *= 2;
	__atomic_store_n(&backoff_ns, b, __ATOMIC_RELAXED);
	__atomic_store_n(&last_slow_ns, now_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&closed_until_ns, now_ns + b, __ATOMIC_RELAXED);
	log_debug("a write on the event loop took %llu us: small writes go to the workers "
		  "for %llu s", (unsigned long long)(took_ns / 1000),
		  (unsigned long long)(b / 1000000000u));
}
