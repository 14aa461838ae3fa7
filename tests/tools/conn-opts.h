/* The connection options shared by the test tools: -H -p -e -q -t -k -B.
 * conn_opt() applies one getopt result to *o: 1 when it took it, 0 when the
 * option is not one of these, -1 when its value is out of range. */
#ifndef RDMABLK_CONN_OPTS_H
#define RDMABLK_CONN_OPTS_H

#include <stdint.h>

#include "rdmablk.h"
#include "util.h"

static inline int
conn_opt(int opt, const char *arg, struct rb_opts *o)
{
	uint64_t v;

	switch (opt) {
	case 'H': o->host = arg; return 1;
	case 'e': o->export_name = arg; return 1;
	case 'B': o->source = arg; return 1;
	case 'p':
		if (rb_parse_uint(arg, 1, 65535, &v) < 0)
			return -1;
		o->port = (uint16_t)v;
		return 1;
	case 'q':
		if (rb_parse_uint(arg, 1, 1024, &v) < 0)
			return -1;
		o->queue_depth = (unsigned)v;
		return 1;
	case 't':
		if (rb_parse_uint(arg, 1, 86400, &v) < 0)
			return -1;
		o->timeout_s = (unsigned)v;
		return 1;
	case 'k':
		if (rb_parse_uint(arg, 0, 3600, &v) < 0)
			return -1;
		o->keepalive_s = (unsigned)v;
		return 1;
	default:
		return 0;
	}
}

#endif
