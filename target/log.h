/* OpenBSD-style logging: stderr in the foreground, syslog when daemonized. */
#ifndef RDMABLK_TARGET_LOG_H
#define RDMABLK_TARGET_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN  = 1,
	LOG_LEVEL_INFO  = 2,
	LOG_LEVEL_DEBUG = 3,
};

/* to_stderr: 1 in the foreground (and for -n), 0 for syslog. */
void log_init(int to_stderr, int level);
void log_set_level(int level);
int  log_get_level(void);

/* One entry point for each kind, named below by level.  with_errno
 * appends ": strerror(errno)"; errno is kept across the call. */
void log_msg(int level, int with_errno, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Logs at LOG_CRIT whatever the level, then exit(1). */
void log_fatal(int with_errno, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* log_warn appends ": strerror(errno)"; log_warnx does not. */
#define log_warn(...)   log_msg(LOG_LEVEL_WARN, 1, __VA_ARGS__)
#define log_warnx(...)  log_msg(LOG_LEVEL_WARN, 0, __VA_ARGS__)
#define log_info(...)   log_msg(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_debug(...)  log_msg(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)
#define fatal(...)      log_fatal(1, __VA_ARGS__)
#define fatalx(...)     log_fatal(0, __VA_ARGS__)

#endif
