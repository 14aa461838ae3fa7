/* One page-aligned, registered memory region. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

int
rb_region_create(struct rb_region *r, struct ibv_pd *pd, size_t size,
		 int access, char *errbuf)
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
	r->mr = ibv_reg_mr(pd, r->base, size, access);
	if (r->mr == NULL) {
		err = errno ? errno : ENOMEM;
		rb_seterr(errbuf, "ibv_reg_mr %zu bytes: %s (is ulimit -l too low?)",
			  size, strerror(err));
		goto out_unmap;
	}
	return 0;

out_unmap:
	munmap(r->base, size);
	r->base = NULL;
	return -err;
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
