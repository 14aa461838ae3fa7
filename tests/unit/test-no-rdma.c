/* Where no RDMA device is visible, the target and the library say exactly
 * that and how to get one (scripts/rxe-setup), never a bare "No such device"
 * from rdma_cm, and nothing about the project's own test guest.  Runs only where no device is visible (as on this project's
 * build machines); skips (77) elsewhere. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdmablk.h"

#include "check.h"

static char logged[4096];

static void
capture(enum rb_log_level level, const char *msg)
{
	if (level == RB_LOG_ERROR)
		snprintf(logged + strlen(logged), sizeof(logged) - strlen(logged), "%s\n", msg);
}

static int
devices_visible(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* The product's words: the missing thing, and the way to get one; nothing
 * about this project's test machines (scripts/vm-run). */
static int
says_no_device(const char *text)
{
	return strstr(text, "no RDMA device") != NULL &&
	       strstr(text, "scripts/rxe-setup") != NULL &&
	       strstr(text, "No such device") == NULL &&
	       strstr(text, "vm-run") == NULL;
}

static void
check_library(void)
{
	struct rb_client *c = NULL;
	struct rb_opts o;
	char err[256];
	int r;

	rb_set_log(capture);
	rb_opts_init(&o);
	CHECK(rb_opts_set(&o, "hostname", "127.0.0.1", err, sizeof(err)) == 0);
	CHECK(rb_opts_set(&o, "export", "disk0", err, sizeof(err)) == 0);
	CHECK(rb_opts_set(&o, "retry", "0", err, sizeof(err)) == 0);
	CHECK(rb_opts_resolve(&o, err, sizeof(err)) == 0);
	r = rb_client_open(&o, &c);
	CHECK(r == -ENODEV);
	CHECK(c == NULL);
	CHECK(says_no_device(logged));
	if (!says_no_device(logged))
		fprintf(stderr, "library said: %s", logged);
	rb_opts_free(&o);
}

static void
check_target(void)
{
	const char *build = getenv("RDMABLK_BUILD");
	char bin[512], conf[] = "/tmp/rdmablk-unit-no-rdma.XXXXXX", out[4096];
	char img[sizeof(conf) + 8];
	int fd, pfd[2], status;
	ssize_t n, len = 0;
	FILE *f;
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/rdmablk-target", build != NULL ? build : "build");
	fd = mkstemp(conf);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	snprintf(img, sizeof(img), "%s.img", conf);
	f = fopen(img, "w");
	CHECK(f != NULL && ftruncate(fileno(f), 1 << 20) == 0);
	if (f != NULL)
		fclose(f);
	dprintf(fd, "[target]\nlisten = 127.0.0.1\nadmin-socket = none\n"
		"[export disk0]\npath = %s\nsize = 1M\n", img);
	close(fd);
	CHECK(pipe(pfd) == 0);
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 2);
		dup2(pfd[1], 1);
		execl(bin, bin, "-f", "-c", conf, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], out + len, sizeof(out) - 1 - (size_t)len)) > 0)
		len += n;
	out[len] = '\0';
	close(pfd[0]);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	CHECK(says_no_device(out));
	if (!says_no_device(out))
		fprintf(stderr, "%s said: %s", bin, out);
	unlink(conf);
	unlink(img);
}

int
main(void)
{
	if (devices_visible()) {
		printf("skipped: an RDMA device is visible here\n");
		return 77;
	}
	check_library();
	check_target();
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
