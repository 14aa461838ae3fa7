/* Unit test for the initiator's pure helpers: the rdmablk-io test pattern
 * (tests/tools/pattern.h: any sub-range is generated consistently, a flipped
 * byte is found at the right index, seeds differ) and the reply tag layout
 * (slot index + generation).  No RDMA needed.  Exits 0 or 1. */
#include <stdio.h>
#include <string.h>

#include "../../initiator/internal.h"
#include "../tools/pattern.h"
#include "check.h"

int
main(void)
{
	static uint8_t whole[65536], part[65536];
	uint64_t off, tag;
	size_t len;

	pattern_fill(whole, 1000, sizeof(whole), 42);
	for (off = 0; off < 64; off += 7) {
		len = 4096 + off * 13;
		pattern_fill(part, 1000 + off, len, 42);
		check(memcmp(part, whole + off, len) == 0, "sub-range equals the whole's slice");
		check(pattern_check(whole + off, 1000 + off, len, 42) == -1,
		      "pattern_check accepts the pattern");
	}
	check(pattern_byte(42, 1000 + 12345) == whole[12345], "pattern_byte agrees with fill");
	whole[31337] ^= 1;
	check(pattern_check(whole, 1000, sizeof(whole), 42) == 31337,
	      "pattern_check finds the flipped byte");
	pattern_fill(part, 1000, 4096, 43);
	check(memcmp(part, whole, 4096) != 0, "another seed gives other bytes");
	pattern_fill(part, 0, 4096, 42);
	check(memcmp(part, whole, 4096) != 0, "another offset gives other bytes");

	tag = rb_tag(37, 123456789);
	check((tag & ((1u << RB_TAG_INDEX_BITS) - 1)) == 37, "tag keeps the slot index");
	check(tag >> RB_TAG_INDEX_BITS == 123456789, "tag keeps the generation");
	check(rb_tag(37, 1) != rb_tag(37, 2), "a new generation changes the tag");

	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
