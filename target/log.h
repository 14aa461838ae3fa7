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

/* log_warn appends ": strerror(errno)"; log_warnx does not. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

#endif
