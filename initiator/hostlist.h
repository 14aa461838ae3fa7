/* hostname= lists: "A", "A,B", "A:PORT", "[V6]", "[V6]:PORT,B" (hostlist.c). */
#ifndef RDMABLK_HOSTLIST_H
#define RDMABLK_HOSTLIST_H

#include <stddef.h>
#include <stdint.h>

/* One entry, as written: a name or numeric address (IPv6 without its
 * brackets) and the port it carries, 0 when it carries none (port= then
 * applies). */
struct rb_host_entry {
	char     name[256];
	uint16_t port;
};

/* Split a comma-separated hostname= value into at most max entries.
 * 0 with *n >= 1, or -EINVAL with err (errlen bytes) naming the entry that
 * was wrong and why. */
int rb_host_list_parse(const char *list, struct rb_host_entry *out, unsigned max,
		       unsigned *n, char *err, size_t errlen);

#endif
