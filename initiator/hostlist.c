/* hostname= lists: split at commas; each entry is a name or an address,
 * optionally followed by :PORT; an IPv6 address that carries a port goes
 * in brackets ("[fd00::1]:10810").  An entry with more than one ':' and no
 * brackets is a bare IPv6 address without a port (what hostname= always
 * accepted).  Every error names the entry. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hostlist.h"
#include "util.h"

static int
bad_entry(char *err, size_t errlen, unsigned idx, const char *entry,
	  const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "invalid hostname entry %u '%s': %s", idx, entry, why);
	return -EINVAL;
}

static int
parse_port(const char *s, unsigned idx, const char *entry, uint16_t *port,
	   char *err, size_t errlen)
{
	uint64_t v;

	if (s[0] == '\0')
		return bad_entry(err, errlen, idx, entry, "empty port after ':'");
	if (rb_parse_uint(s, 1, 65535, &v) < 0)
		return bad_entry(err, errlen, idx, entry, "port '%s' is not an "
				 "integer in 1..65535", s);
	*port = (uint16_t)v;
	return 0;
}

static int
set_name(struct rb_host_entry *e, const char *s, size_t len, unsigned idx,
	 const char *entry, char *err, size_t errlen)
{
	if (len == 0)
		return bad_entry(err, errlen, idx, entry, "empty address");
	if (len >= sizeof(e->name))
		return bad_entry(err, errlen, idx, entry, "address longer than %zu "
				 "bytes", sizeof(e->name) - 1);
	memcpy(e->name, s, len);
	e->name[len] = '\0';
	return 0;
}

/* One entry (NUL-terminated, idx counting from 1). */
static int
parse_entry(const char *entry, unsigned idx, struct rb_host_entry *e,
	    char *err, size_t errlen)
{
	const char *close, *colon, *p;

	e->port = 0;
	if (entry[0] == '\0')
		return bad_entry(err, errlen, idx, entry, "empty");
	for (p = entry; *p != '\0'; p++)
		if (isspace((unsigned char)*p) || !isprint((unsigned char)*p))
			return bad_entry(err, errlen, idx, entry, "contains a space "
					 "or a control character");
	if (entry[0] == '[') {
		close = strchr(entry, ']');
		if (close == NULL)
			return bad_entry(err, errlen, idx, entry, "no closing ']'");
		if (memchr(entry + 1, ':', (size_t)(close - entry - 1)) == NULL)
			return bad_entry(err, errlen, idx, entry, "brackets are for "
					 "IPv6 addresses only");
		if (set_name(e, entry + 1, (size_t)(close - entry - 1), idx, entry,
			     err, errlen) < 0)
			return -EINVAL;
		if (close[1] == '\0')
			return 0;
		if (close[1] != ':')
			return bad_entry(err, errlen, idx, entry, "expected ':PORT' or "
					 "the end after ']'");
		return parse_port(close + 2, idx, entry, &e->port, err, errlen);
	}
	if (strchr(entry, '[') != NULL || strchr(entry, ']') != NULL)
		return bad_entry(err, errlen, idx, entry, "a bracket inside the "
				 "entry (write an IPv6 address as [ADDR]:PORT)");
	colon = strchr(entry, ':');
	if (colon == NULL || strchr(colon + 1, ':') != NULL)
		/* No port, or a bare IPv6 address (which cannot carry one). */
		return set_name(e, entry, strlen(entry), idx, entry, err, errlen);
	if (set_name(e, entry, (size_t)(colon - entry), idx, entry, err, errlen) < 0)
		return -EINVAL;
	return parse_port(colon + 1, idx, entry, &e->port, err, errlen);
}

int
rb_host_list_parse(const char *list, struct rb_host_entry *out, unsigned max,
		   unsigned *n, char *err, size_t errlen)
{
	char entry[sizeof(out->name) + 16];
	const char *p = list, *comma;
	unsigned count = 0;
	size_t len;

	if (list[0] == '\0') {
		snprintf(err, errlen, "invalid hostname '': empty");
		return -EINVAL;
	}
	for (;;) {
		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (count == max) {
			snprintf(err, errlen, "invalid hostname '%s': more than %u "
				 "targets", list, max);
			return -EINVAL;
		}
		if (len >= sizeof(entry)) {
			snprintf(err, errlen, "invalid hostname entry %u '%.*s...': "
				 "longer than %zu bytes", count + 1, 40, p,
				 sizeof(entry) - 1);
			return -EINVAL;
		}
		memcpy(entry, p, len);
		entry[len] = '\0';
		if (parse_entry(entry, count + 1, &out[count], err, errlen) < 0)
			return -EINVAL;
		count++;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	*n = count;
	return 0;
}
