/* A configuration that cannot fail over from a hung RBD target: warned at
 * -n, at startup and on reload (exposure.c's config_warn calls this).
 *
 * A target breaks the lock of a holder that keeps its watch but answers
 * nothing (rbd-silence.h), and librbd blocklists that holder first: it can
 * never write again.  With `rbd_blocklist_on_break_lock = false` in the
 * client's ceph.conf, librbd would break the lock without the blocklist,
 * so the target does not break it at all (rbd-lock.c), and a failover from
 * a hung target waits for its watch to lapse (osd_client_watch_timeout,
 * 30 s by default): longer than an initiator's default timeout. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "rbd/rbd.h"

/* Ceph's option names: spaces, underscores and dashes are all one.  In
 * place: lower case, words joined by one '_' (the value is trimmed). */
static void
canon(char *s)
{
	char *r, *w = s;
	int sep = 0;

	for (r = s; *r != '\0'; r++) {
		if (strchr(" _-\t", *r) != NULL) {
			sep = 1;
			continue;
		}
		if (sep && w != s)
			*w++ = '_';
		sep = 0;
		*w++ = (char)tolower((unsigned char)*r);
	}
	*w = '\0';
}

/* 1 when the ceph.conf at path turns rbd_blocklist_on_break_lock off for
 * clients ([global], [client], [client.ID]); line: where. */
int
ceph_conf_no_blocklist(const char *path, int *line)
{
	char buf[512], *eq, *k, *v, *end;
	int n = 0, client = 1, off = 0;
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return 0;   /* opening the export says what is wrong with it */
	while (fgets(buf, sizeof(buf), f) != NULL) {
		n++;
		buf[strcspn(buf, "#;\n")] = '\0';
		for (k = buf; isspace((unsigned char)*k); k++)
			;
		if (*k == '[') {
			client = strncmp(k, "[global]", 8) == 0 || strncmp(k, "[client", 7) == 0;
			continue;
		}
		eq = strchr(k, '=');
		if (!client || eq == NULL)
			continue;
		*eq = '\0';
		for (v = eq + 1; isspace((unsigned char)*v); v++)
			;
		for (end = v + strlen(v); end > v && isspace((unsigned char)end[-1]); end--)
			;
		*end = '\0';
		for (end = eq; end > k && isspace((unsigned char)end[-1]); end--)
			;
		*end = '\0';
		canon(k);
		canon(v);
		if (strcmp(k, "rbd_blocklist_on_break_lock") == 0) {
			off = strcmp(v, "false") == 0 || strcmp(v, "0") == 0 ||
			      strcmp(v, "no") == 0 || strcmp(v, "off") == 0;
			*line = n;
		}
	}
	fclose(f);
	return off;
}

unsigned
config_warn_rbd(const struct config *c, config_error_fn *fn, void *arg)
{
	const struct cfg_export *e;
	const char *conf;
	unsigned n = 0;
	char msg[768];
	int line = 0;

	STAILQ_FOREACH(e, &c->exports, link) {
		if (!e->is_rbd || e->read_only)
			continue;
		conf = e->ceph_conf != NULL ? e->ceph_conf : RBD_DEFAULT_CONF;
		if (!ceph_conf_no_blocklist(conf, &line))
			continue;
		snprintf(msg, sizeof(msg), "%s:%d: warning: export %s: %s:%d sets "
			 "rbd_blocklist_on_break_lock = false, so this target cannot fence a "
			 "hung lock holder and will not break its lock: a failover from a hung "
			 "target waits for its watch to lapse (osd_client_watch_timeout, 30 s by "
			 "default), longer than an initiator's default timeout (docs/rbd.md)",
			 c->file, e->line, e->name, conf, line);
		config_say(fn, arg, msg);
		n++;
	}
	return n;
}
