/* The daemon's pidfile (target/ops/pidfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "pidfile.h"

struct pidfile *
pidfile_create(const char *path)
{
	struct pidfile *pf = calloc(1, sizeof(*pf));
	char buf[32];
	struct stat st;
	int n;

	if (pf == NULL || (pf->path = strdup(path)) == NULL) {
		log_warnx("pidfile %s: out of memory", path);
		goto out_free;
	}
	/* O_NOFOLLOW: a symlink planted in a shared directory must not make
	 * us truncate whatever it points at. */
	pf->fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (pf->fd < 0) {
		log_warn("pidfile %s%s", path, errno == ELOOP ? ": is a symbolic link" : "");
		goto out_free;
	}
	if (flock(pf->fd, LOCK_EX | LOCK_NB) < 0) {
		n = (int)read(pf->fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (errno == EWOULDBLOCK || errno == EAGAIN || n >= 0)
			log_warnx("pidfile %s: locked by a running rdmablk-target (pid %s)",
				  path, buf[0] ? buf : "?");
		goto out_close;
	}
	if (fstat(pf->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		log_warnx("pidfile %s: not a regular file", path);
		goto out_close;
	}
	pf->dev = st.st_dev;
	pf->ino = st.st_ino;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(pf->fd, 0) < 0 || pwrite(pf->fd, buf, (size_t)n, 0) != n) {
		log_warn("pidfile %s: write", path);
		goto out_close;
	}
	return pf;

out_close:
	close(pf->fd);
out_free:
	if (pf != NULL)
		free(pf->path);
	free(pf);
	return NULL;
}

void
pidfile_destroy(struct pidfile *pf)
{
	struct stat st;

	if (pf == NULL)
		return;
	/* Still the file we locked?  Someone may have replaced it. */
	if (lstat(pf->path, &st) == 0 && st.st_dev == pf->dev && st.st_ino == pf->ino)
		unlink(pf->path);
	else
		log_warnx("pidfile %s: no longer ours; left in place", pf->path);
	close(pf->fd);
	free(pf->path);
	free(pf);
}
