/* OpenBSD-style logging (target/log.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

static int log_to_stderr = 1;
static int log_level = LOG_LEVEL_INFO;

void
log_init(int to_stderr, int level)
{
	log_to_stderr = to_stderr;
	log_level = level;
	if (!to_stderr)
		openlog("rdmablk-target", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_set_level(int level)
{
	log_level = level;
}

int
log_get_level(void)
{
	return log_level;
}

static void
vlog(int prio, const char *fmt, va_list ap, const char *suffix)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_to_stderr) {
		if (suffix != NULL)
			fprintf(stderr, "%s: %s\n", msg, suffix);
		else
			fprintf(stderr, "%s\n", msg);
		fflush(stderr);
	} else if (suffix != NULL) {
		syslog(prio, "%s: %s", msg, suffix);
	} else {
		syslog(prio, "%s", msg);
	}
}

void
log_warn(const char *fmt, ...)
{
	char err[128];
	va_list ap;
	int saved = errno;

	if (log_level < LOG_LEVEL_WARN)
		return;
	snprintf(err, sizeof(err), "%s", strerror(saved));
	va_start(ap, fmt);
	vlog(LOG_WARNING, fmt, ap, err);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	if (log_level < LOG_LEVEL_WARN)
		return;
	va_start(ap, fmt);
	vlog(LOG_WARNING, fmt, ap, NULL);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	if (log_level < LOG_LEVEL_INFO)
		return;
	va_start(ap, fmt);
	vlog(LOG_INFO, fmt, ap, NULL);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_level < LOG_LEVEL_DEBUG)
		return;
	va_start(ap, fmt);
	vlog(LOG_DEBUG, fmt, ap, NULL);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	char err[128];
	va_list ap;

	snprintf(err, sizeof(err), "%s", strerror(errno));
	va_start(ap, fmt);
	vlog(LOG_CRIT, fmt, ap, err);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, fmt, ap, NULL);
	va_end(ap);
	exit(1);
}
