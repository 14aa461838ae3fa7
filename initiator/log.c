/* Logging hook and failure reasons for the initiator library. */
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *
rb_log_level_name(enum rb_log_level level)
{
	switch (level) {
	case RB_LOG_ERROR: return "error";
	case RB_LOG_WARN:  return "warning";
	case RB_LOG_INFO:  return "info";
	default:           return "debug";
	}
}

static void
default_log(enum rb_log_level level, const char *msg)
{
	if (level == RB_LOG_ERROR)
		fprintf(stderr, "rdmablk: %s\n", msg);
	else if (level == RB_LOG_WARN)
		fprintf(stderr, "rdmablk: warning: %s\n", msg);
}

static rb_log_fn *log_fn = default_log;

void
rb_set_log(rb_log_fn *fn)
{
	log_fn = fn != NULL ? fn : default_log;
}

void
rb_log(enum rb_log_level level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_fn(level, msg);
}

void
rb_seterr(char *errbuf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, RB_ERRBUF, fmt, ap);
	va_end(ap);
}

const char *
rb_reason(uint16_t err)
{
	switch (err) {
	case RB_OK:        return "success";
	case RB_EPERM:     return "export is read-only";
	case RB_ENOENT:    return "no such export";
	case RB_EIO:       return "I/O error on the target";
	case RB_ENOMEM:    return "target out of resources";
	case RB_EACCES:    return "address not allowed";
	case RB_EBUSY:     return "busy (max-connections reached)";
	case RB_EINVAL:    return "invalid request";
	case RB_ENOSPC:    return "no space left on the target";
	case RB_EPROTO:    return "protocol mismatch";
	case RB_EOVERFLOW: return "beyond the end of the export";
	case RB_ENOTSUP:   return "not supported by this export";
	case RB_ESHUTDOWN: return "target is shutting down or fenced off the image";
	case RB_ETIMEDOUT: return "not started within its ttl";
	default:           return "unknown error";
	}
}

const char *
rb_verbs_info(char *buf, size_t size)
{
	char path[PATH_MAX];
	const char *lib = "libibverbs (unknown version)";
	struct ibv_device **list;
	Dl_info info;
	int n = 0;

	/* The soname's full file name carries rdma-core's version. */
	if (dladdr((void *)(uintptr_t)ibv_get_device_list, &info) != 0 &&
	    info.dli_fname != NULL &&
	    realpath(info.dli_fname, path) != NULL) {
		lib = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
	}
	list = ibv_get_device_list(&n);
	if (list != NULL)
		ibv_free_device_list(list);
	else
		n = 0;
	snprintf(buf, size, "%s, %d device(s)", lib, n);
	return buf;
}
