/* Warn about exports that any initiator may write (docs/security.md).
 *
 * An export with neither `secret-file` nor `allow` serves whoever reaches
 * the target.  And `allow` alone is weak: the address is the initiator's
 * own claim, on InfiniBand (the GID an initiator sets in its path record,
 * the IPoIB address it maps to) as much as on a flat Ethernet, so only a
 * secret proves who is writing.  The config is valid all the same; these
 * are warnings, at -n, at startup and on reload. */
#include <stdio.h>

#include "config.h"

unsigned
config_warn(const struct config *c, config_error_fn *fn, void *arg)
{
	const struct cfg_export *e;
	unsigned n = 0;
	char msg[512];

	STAILQ_FOREACH(e, &c->exports, link) {
		if (e->read_only || e->secret_file != NULL || e->nallow != 0)
			continue;
		snprintf(msg, sizeof(msg), "%s:%d: warning: export %s is writable by any "
			 "initiator: it has no secret-file and no allow list (an allow list "
			 "alone holds only where addresses cannot be forged, never on "
			 "InfiniBand; see docs/security.md)", c->file, e->line, e->name);
		config_say(fn, arg, msg);
		n++;
	}
	return n + config_warn_rbd(c, fn, arg);
}
