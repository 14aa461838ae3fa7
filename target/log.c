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

/* The syslog priority of each level. */
static const int level_prio[] = {
	[LOG_LEVEL_ERROR] = LOG_ERR,
	[LOG_LEVEL_WARN]  = LOG_WARNING,
	[LOG_LEVEL_INFO]  = LOG_INFO,
	[LOG_LEVEL_DEBUG] = LOG_DEBUG,
};

static void
vlog(int prio, int with_errno, const char *fmt, va_list ap)
{
	char msg[1024], err[128] = "";

	if (with_errno)
		snprintf(err, sizeof(err), "%s", strerror(errno));
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_to_stderr) {
		if (err[0] != '\0')
			fprintf(stderr, "%s: %s\n", msg, err);
		else
			fprintf(stderr, "%s\n", msg);
		fflush(stderr);
	} else if (err[0] != '\0') {
		syslog(prio, "%s: %s", msg, err);
	} else {
		syslog(prio, "%s", msg);
	}
}

void
log_msg(int level, int with_errno, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	if (level > log_level || level < 0 ||
	    (size_t)level >= sizeof(level_prio) / sizeof(level_prio[0]))
		return;
	va_start(ap, fmt);
	vlog(level_prio[level], with_errno, fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_fatal(int with_errno, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, with_errno, fmt, ap);
	va_end(ap);
	exit(1);
}
