/* The target's side of the RBD module (target/rbd/rbd-module.h): finding and
 * loading rdmablk-rbd.so, and the calls of target/rbd/rbd.h passed on to it. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "rbd-module.h"

static pthread_mutex_t module_mu = PTHREAD_MUTEX_INITIALIZER;
static const struct rbd_module *mod; /* set once, never unloaded */

/* The module beside the executable, else the installed one. */
static void
module_path(char *path, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash != NULL) {
			*slash = '\0';
			snprintf(path, len, "%s/%s", exe, RBD_MODULE_FILE);
			if (access(path, R_OK) == 0)
				return;
		}
	}
	snprintf(path, len, "%s/%s", RDMABLK_MODULEDIR, RBD_MODULE_FILE);
}

static int
module_load_locked(char *err, size_t errlen)
{
	char path[PATH_MAX + sizeof(RBD_MODULE_FILE) + 1];
	const struct rbd_module *m;
	void *h;

	module_path(path, sizeof(path));
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(err, errlen, "the RBD module cannot be loaded (RBD exports need "
			 "librbd1 and librados2): %s", dlerror());
		return -1;
	}
	m = dlsym(h, RBD_MODULE_SYMBOL);
	if (m == NULL || m->abi != RBD_MODULE_ABI || m->size != sizeof(*m)) {
		snprintf(err, errlen, "%s is not this target's RBD module (%s)", path,
			 m == NULL ? "no " RBD_MODULE_SYMBOL : "another build's interface");
		dlclose(h);
		return -1;
	}
	/* Kept loaded: librados leaves threads and static state behind. */
	mod = m;
	log_debug("RBD module %s loaded", path);
	return 0;
}

static int
module_load(char *err, size_t errlen)
{
	int r = 0;

	pthread_mutex_lock(&module_mu);
	if (mod == NULL)
		r = module_load_locked(err, errlen);
	pthread_mutex_unlock(&module_mu);
	return r;
}

/* Every call below but the first has a backing, so the module is loaded. */
struct rbd_backing *
rbd_backing_create(const char *path, const struct rbd_opts *o, char *err, size_t errlen)
{
	if (module_load(err, errlen) < 0)
		return NULL;
	return mod->create(path, o, err, errlen);
}

void
rbd_backing_destroy(struct rbd_backing *b)
{
	if (b != NULL)
		mod->destroy(b);
}

uint64_t
rbd_backing_size(const struct rbd_backing *b)
{
	return mod->size_of(b);
}

int
rbd_backing_fd(const struct rbd_backing *b)
{
	return mod->fd(b);
}

void
rbd_backing_submit(struct rbd_backing *b, struct job *j)
{
	mod->submit(b, j);
}

void
rbd_job_submit(struct job *j)
{
	mod->submit(j->backing, j);
}

void
rbd_backing_reap(struct rbd_backing *b)
{
	mod->reap(b);
}

void
rbd_backing_idle(struct rbd_backing *b)
{
	mod->idle(b);
}

unsigned
rbd_backing_inflight(const struct rbd_backing *b)
{
	return mod->inflight(b);
}

int
rbd_backing_tick(struct rbd_backing *b, int failed)
{
	return mod->tick(b, failed);
}

void
rbd_backing_get_stats(const struct rbd_backing *b, struct rbd_stats *st)
{
	mod->get_stats(b, st);
}

const char *
rbd_backing_fenced(const struct rbd_backing *b)
{
	return mod->fenced(b);
}
