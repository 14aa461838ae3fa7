/* The RBD backend as a module: rdmablk-rbd.so holds target/rbd*.c and
 * links librbd and librados; the target loads it with dlopen() for its
 * first RBD export (rbd_backing_create).  A target without RBD exports,
 * and every `rdmablk-target --stats` or `-n`, never maps Ceph's thirty
 * libraries, and a host without them still serves files and devices.
 *
 * The module exports one symbol, RBD_MODULE_SYMBOL, a struct rbd_module
 * whose abi must equal RBD_MODULE_ABI: a module from another build is
 * refused by name.  Of the target it uses only what the target exports
 * (target/rbd/rbd-module.sym: the log). */
#ifndef RDMABLK_TARGET_RBD_MODULE_H
#define RDMABLK_TARGET_RBD_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "rbd.h"

#define RBD_MODULE_FILE   "rdmablk-rbd.so"
#define RBD_MODULE_SYMBOL "rdmablk_rbd_module"
/* Bump with any change of struct rbd_module or of the types it passes. */
#define RBD_MODULE_ABI    3u

struct rbd_module {
	unsigned abi;
	size_t size;                /* sizeof(struct rbd_module) */
	struct rbd_backing *(*create)(const char *path, const struct rbd_opts *o, char *err,
				      size_t errlen);
	void (*destroy)(struct rbd_backing *b);
	uint64_t (*size_of)(const struct rbd_backing *b);
	int (*fd)(const struct rbd_backing *b);
	void (*submit)(struct rbd_backing *b, struct job *j);
	void (*reap)(struct rbd_backing *b);
	void (*idle)(struct rbd_backing *b);
	unsigned (*inflight)(const struct rbd_backing *b);
	int (*tick)(struct rbd_backing *b, int failed);
	void (*get_stats)(const struct rbd_backing *b, struct rbd_stats *st);
	const char *(*fenced)(const struct rbd_backing *b);
};

/* Where the target looks for the module: beside its own executable (a
 * build tree), then in RDMABLK_MODULEDIR (set by the Makefile). */
#ifndef RDMABLK_MODULEDIR
#define RDMABLK_MODULEDIR "/usr/local/lib/rdmablk"
#endif

#endif
