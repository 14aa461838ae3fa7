/* One page-aligned memory region, registered with its mapping or later
 * (the request pool: only when a request needs it, slots.c). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

/* Anonymous and untouched: it costs no memory until used or registered. */
int
rb_region_map(struct rb_region *r, size_t size, char *errbuf)
{
	int err;

	memset(r, 0, sizeof(*r));
	r->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->base == MAP_FAILED) {
		err = errno;
		rb_seterr(errbuf, "mmap %zu bytes: %s", size, strerror(err));
		r->base = NULL;
		return -err;
	}
	r->size = size;
	return 0;
}

/* Registering pins every page of the mapping. */
int
rb_region_register(struct rb_region *r, struct ibv_pd *pd, int access, char *errbuf)
{
	int err;

	r->mr = ibv_reg_mr(pd, r->base, r->size, access);
	if (r->mr == NULL) {
		err = errno ? errno : ENOMEM;
		rb_seterr(errbuf, "ibv_reg_mr %zu bytes: %s (is ulimit -l too low?)",
			  r->size, strerror(err));
		return -err;
	}
	return 0;
}

int
rb_region_create(struct rb_region *r, struct ibv_pd *pd, size_t size,
		 int access, char *errbuf)
{
	int err = rb_region_map(r, size, errbuf);

	if (err < 0)
		return err;
	err = rb_region_register(r, pd, access, errbuf);
	if (err < 0)
		goto out_unmap;
	return 0;

out_unmap:
	rb_region_destroy(r);
	return err;
}

/* Only after the QP using this memory is destroyed. */
void
rb_region_destroy(struct rb_region *r)
{
	if (r->mr != NULL)
		ibv_dereg_mr(r->mr);
	if (r->base != NULL)
		munmap(r->base, r->size);
	memset(r, 0, sizeof(*r));
}
