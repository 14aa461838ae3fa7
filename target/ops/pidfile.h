/* The daemon's pidfile: created without following symlinks, locked while
 * the daemon runs (a second daemon on the same pidfile refuses to start),
 * and removed at exit only if it is still ours. */
#ifndef RDMABLK_TARGET_PIDFILE_H
#define RDMABLK_TARGET_PIDFILE_H

#include <sys/types.h>

struct pidfile {
	char *path;
	int fd;                 /* open and flock()ed while we run */
	dev_t dev;
	ino_t ino;
};

/* Create or take over PATH, lock it and write our pid.  NULL on failure,
 * with one log line naming what was wrong. */
struct pidfile *pidfile_create(const char *path);
/* Unlink the file if PATH still names the file we locked, then close and
 * free.  NULL-safe. */
void pidfile_destroy(struct pidfile *pf);

#endif
