/* The daemon's part of every event loop (daemon.c). */
#ifndef RDMABLK_TARGET_DAEMON_H
#define RDMABLK_TARGET_DAEMON_H

#include "core/target.h"

/* Once the loops exist: set t->hooks, and watch SIGHUP, SIGTERM and
 * SIGINT on loop 0 (they must be blocked already).  -1, logged. */
int daemon_setup(struct target *t);

#endif
