/* The deterministic test pattern: every byte is a function of a seed and its
 * absolute offset in the export, so any sub-range can be generated and
 * verified on its own.  `rdmablk-io pattern OFF LEN SEED` prints it. */
#ifndef RDMABLK_PATTERN_H
#define RDMABLK_PATTERN_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t
pattern_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Byte at absolute offset off: byte (off % 8) of the 64-bit word number
 * off / 8, little-endian. */
static inline uint8_t
pattern_byte(uint64_t seed, uint64_t off)
{
	uint64_t w = pattern_mix(pattern_mix(seed) ^ (off >> 3));

	return (uint8_t)(w >> (8 * (off & 7)));
}

static inline void
pattern_fill(void *buf, uint64_t off, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	uint64_t ms = pattern_mix(seed), w = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t o = off + i;

		if (i == 0 || (o & 7) == 0)
			w = pattern_mix(ms ^ (o >> 3));
		p[i] = (uint8_t)(w >> (8 * (o & 7)));
	}
}

/* Index of the first byte that differs from the pattern, or -1. */
static inline long long
pattern_check(const void *buf, uint64_t off, size_t len, uint64_t seed)
{
	const uint8_t *p = buf;
	uint64_t ms = pattern_mix(seed), w = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		uint64_t o = off + i;

		if (i == 0 || (o & 7) == 0)
			w = pattern_mix(ms ^ (o >> 3));
		if (p[i] != (uint8_t)(w >> (8 * (o & 7))))
			return (long long)i;
	}
	return -1;
}

#endif
