/* Unit tests for the target's pidfile: locked while held, never through a
 * symlink, and removed at exit only when it is still ours. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../target/log.h"
#include "../../target/ops/pidfile.h"

#include "check.h"

static int
file_has_pid(const char *path)
{
	char buf[32], want[32];
	FILE *f = fopen(path, "r");
	int ok;

	if (f == NULL)
		return 0;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	snprintf(want, sizeof(want), "%d\n", (int)getpid());
	return ok && strcmp(buf, want) == 0;
}

int
main(void)
{
	char dir[] = "/tmp/rdmablk-test-pidfile.XXXXXX", path[64], other[64], link[64];
	struct pidfile *pf, *pf2;
	int fd;

	log_init(1, LOG_LEVEL_ERROR);
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/target.pid", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	snprintf(link, sizeof(link), "%s/link.pid", dir);

	/* a stale file is taken over, its content replaced */
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0 && write(fd, "999999999\n", 10) == 10);
	close(fd);
	pf = pidfile_create(path);
	CHECK(pf != NULL && file_has_pid(path));
	/* a second daemon on the same pidfile is refused while we hold it */
	pf2 = pidfile_create(path);
	CHECK(pf2 == NULL);
	CHECK(file_has_pid(path));
	pidfile_destroy(pf);
	CHECK(access(path, F_OK) < 0);

	/* never through a symlink: the target file is untouched */
	fd = open(other, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0 && write(fd, "precious\n", 9) == 9);
	close(fd);
	CHECK(symlink(other, link) == 0);
	CHECK(pidfile_create(link) == NULL);
	{
		struct stat st;

		CHECK(stat(other, &st) == 0 && st.st_size == 9);
	}

	/* replaced behind our back: the newcomer's file is left alone */
	pf = pidfile_create(path);
	CHECK(pf != NULL);
	CHECK(rename(other, path) == 0);
	pidfile_destroy(pf);
	CHECK(access(path, F_OK) == 0);

	unlink(path);
	unlink(link);
	rmdir(dir);
	printf("test-pidfile: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
