/* The "rbd:POOL/IMAGE" of an export's path (target/rbd/rbd.h).  In the
 * target itself, for the config's checks, and in the RBD module. */
#include <stdio.h>
#include <string.h>

#include "rbd.h"

int
rbd_is_spec(const char *path)
{
	return strncmp(path, RBD_PREFIX, strlen(RBD_PREFIX)) == 0;
}

static int
rbd_name_ok(const char *s)
{
	for (; *s != '\0'; s++)
		if (*s == '/' || *s == '@' || *s <= ' ' || *s == 0x7f)
			return 0;
	return 1;
}

int
rbd_spec_parse(const char *path, char *pool, size_t poollen, char *image, size_t imagelen,
	       const char **why)
{
	const char *s = path + strlen(RBD_PREFIX), *slash;

	if (!rbd_is_spec(path)) {
		*why = "does not start with rbd:";
		return -1;
	}
	slash = strchr(s, '/');
	if (slash == NULL || slash == s || slash[1] == '\0') {
		*why = "expected rbd:POOL/IMAGE";
		return -1;
	}
	if ((size_t)(slash - s) >= poollen || strlen(slash + 1) >= imagelen) {
		*why = "pool or image name too long";
		return -1;
	}
	memcpy(pool, s, (size_t)(slash - s));
	pool[slash - s] = '\0';
	snprintf(image, imagelen, "%s", slash + 1);
	if (!rbd_name_ok(pool) || !rbd_name_ok(image)) {
		*why = "pool and image names may not contain '/', '@', spaces or control "
		       "characters (snapshots and namespaces are not supported)";
		return -1;
	}
	return 0;
}
