/* rdmablk-json: one value out of a JSON document, for the tests' polls.
 *
 *   rdmablk-json FILE PATH...
 *
 * PATH is a dot-separated walk from the top value: a member name, "[N]"
 * (the Nth element of an array) or "[KEY=VALUE,...]" (the first element
 * of an array whose members KEY all print as VALUE), e.g.
 *
 *   connections.current
 *   exports[name=disk,removed=false].lock.state
 *   loops[1].connections
 *
 * A string prints unquoted (the escapes \" \\ \/ \n \t \r \b \f decoded),
 * a number, true, false or null as written, an object or an array as its
 * JSON text, one line per PATH. "#PATH", where PATH leads to an array or
 * ends in a selector, prints the number of its elements, or of those the
 * selector matches. Exit 0 with every value on stdout; 1 (and a message
 * naming the step) when a PATH leads nowhere, its line left out; 2 when
 * FILE is not JSON or a PATH is bad.
 *
 * Why a program: a test that waits for a counter of `rdmablk-target
 * --stats` asks many times, and under TCG one python3 start costs about
 * 0.4 s of CPU, one start of this about 35 ms. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct text {
	const char *p;
	const char *end;
};

static const char *file;
static char *doc_start;

static void
ws(struct text *t)
{
	while (t->p < t->end && (*t->p == ' ' || *t->p == '\t' || *t->p == '\r' ||
				 *t->p == '\n'))
		t->p++;
}

static int
bad(const struct text *t, const char *what)
{
	fprintf(stderr, "rdmablk-json: %s: not JSON at byte %ld: %s\n", file,
		(long)(t->p - doc_start), what);
	return -1;
}

/* Skip a string whose opening quote is at t->p. */
static int
skip_string(struct text *t)
{
	for (t->p++; t->p < t->end; t->p++) {
		if (*t->p == '\\')
			t->p++;
		else if (*t->p == '"') {
			t->p++;
			return 0;
		}
	}
	return bad(t, "unterminated string");
}

/* Skip one value starting at t->p (after white space). */
static int
skip_value(struct text *t)
{
	ws(t);
	if (t->p >= t->end)
		return bad(t, "value expected");
	if (*t->p == '"')
		return skip_string(t);
	if (*t->p == '{' || *t->p == '[') {
		char close = *t->p == '{' ? '}' : ']';

		t->p++;
		ws(t);
		if (t->p < t->end && *t->p == close) {
			t->p++;
			return 0;
		}
		for (;;) {
			if (close == '}') {
				ws(t);
				if (t->p >= t->end || *t->p != '"' || skip_string(t) < 0)
					return bad(t, "member name expected");
				ws(t);
				if (t->p >= t->end || *t->p != ':')
					return bad(t, "':' expected");
				t->p++;
			}
			if (skip_value(t) < 0)
				return -1;
			ws(t);
			if (t->p < t->end && *t->p == ',') {
				t->p++;
				continue;
			}
			if (t->p < t->end && *t->p == close) {
				t->p++;
				return 0;
			}
			return bad(t, "',' or a closing bracket expected");
		}
	}
	if (strchr("-0123456789tfn", *t->p) == NULL)
		return bad(t, "value expected");
	while (t->p < t->end && strchr(",]} \t\r\n", *t->p) == NULL)
		t->p++;
	return 0;
}

/* The value at v (its text up to *end) as it prints: strings decoded. */
static char *
scalar(const char *v, const char *end)
{
	size_t n = (size_t)(end - v);
	char *s = malloc(n + 1), *o = s;

	if (s == NULL) {
		perror("rdmablk-json");
		exit(2);
	}
	if (*v != '"') {
		memcpy(s, v, n);
		s[n] = '\0';
		return s;
	}
	for (v++; v < end - 1; v++) {
		if (*v == '\\' && v + 1 < end - 1) {
			v++;
			switch (*v) {
			case 'n': *o++ = '\n'; break;
			case 't': *o++ = '\t'; break;
			case 'r': *o++ = '\r'; break;
			case 'b': *o++ = '\b'; break;
			case 'f': *o++ = '\f'; break;
			default:  *o++ = *v; break;
			}
		} else
			*o++ = *v;
	}
	*o = '\0';
	return s;
}

/* In the object at t->p, find member NAME (length n): t->p at its value. */
static int
member(struct text *t, const char *name, size_t n)
{
	ws(t);
	if (t->p >= t->end || *t->p != '{')
		return 1;
	t->p++;
	for (;;) {
		const char *k;
		int same;

		ws(t);
		if (t->p < t->end && *t->p == '}')
			return 1;
		k = t->p + 1;
		if (t->p >= t->end || *t->p != '"' || skip_string(t) < 0)
			return bad(t, "member name expected");
		/* t->p is past the closing quote. */
		same = (size_t)(t->p - k) == n + 1 && memcmp(k, name, n) == 0;
		ws(t);
		if (t->p >= t->end || *t->p != ':')
			return bad(t, "':' expected");
		t->p++;
		ws(t);
		if (same)
			return 0;
		if (skip_value(t) < 0)
			return -1;
		ws(t);
		if (t->p < t->end && *t->p == ',')
			t->p++;
	}
}

/* Does the object at v match every KEY=VALUE of sel (length n)? */
static int
matches(const char *v, const char *end, const char *sel, size_t n)
{
	const char *c = sel;

	while (c < sel + n) {
		const char *comma = memchr(c, ',', (size_t)(sel + n - c));
		const char *eq, *stop = comma != NULL ? comma : sel + n;
		struct text t = { v, end };
		const char *val;
		char *s;
		int r, same;

		eq = memchr(c, '=', (size_t)(stop - c));
		if (eq == NULL)
			return -2;
		r = member(&t, c, (size_t)(eq - c));
		if (r != 0)
			return r < 0 ? -1 : 0;
		val = t.p;
		if (skip_value(&t) < 0)
			return -1;
		s = scalar(val, t.p);
		same = strlen(s) == (size_t)(stop - eq - 1) &&
		       memcmp(s, eq + 1, (size_t)(stop - eq - 1)) == 0;
		free(s);
		if (!same)
			return 0;
		c = stop + 1;
	}
	return 1;
}

/* In the array at t->p, the element selected by sel (length n): an index
 * or KEY=VALUE,... */
static int
element(struct text *t, const char *sel, size_t n)
{
	char *endp;
	long idx = -1, i = 0;

	if (memchr(sel, '=', n) == NULL) {
		idx = strtol(sel, &endp, 10);
		if (n == 0 || endp != sel + n || idx < 0)
			return -2;
	}
	ws(t);
	if (t->p >= t->end || *t->p != '[')
		return 1;
	t->p++;
	for (;; i++) {
		const char *v;
		int r;

		ws(t);
		if (t->p < t->end && *t->p == ']')
			return 1;
		v = t->p;
		if (skip_value(t) < 0)
			return -1;
		if (idx >= 0)
			r = i == idx;
		else
			r = matches(v, t->p, sel, n);
		if (r < 0)
			return r;
		if (r) {
			t->p = v;
			return 0;
		}
		ws(t);
		if (t->p < t->end && *t->p == ',')
			t->p++;
	}
}

/* -c: how many elements of the array at t->p the selector sel (length n;
 * NULL: every element) matches. */
static long
count(struct text *t, const char *sel, size_t n)
{
	long c = 0;

	ws(t);
	if (t->p >= t->end || *t->p != '[')
		return -3;
	t->p++;
	for (;;) {
		const char *v;
		int r = 1;

		ws(t);
		if (t->p < t->end && *t->p == ']')
			return c;
		v = t->p;
		if (skip_value(t) < 0)
			return -1;
		if (sel != NULL)
			r = matches(v, t->p, sel, n);
		if (r < 0)
			return r;
		c += r;
		ws(t);
		if (t->p < t->end && *t->p == ',')
			t->p++;
	}
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	size_t cap = 65536, n = 0, r;
	char *b = malloc(cap);

	if (f == NULL || b == NULL) {
		fprintf(stderr, "rdmablk-json: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	while ((r = fread(b + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			cap *= 2;
			b = realloc(b, cap);
			if (b == NULL) {
				perror("rdmablk-json");
				exit(2);
			}
		}
	}
	fclose(f);
	*len = n;
	return b;
}

/* Print the value PATH leads to in the document (or, for "#PATH", a
 * count). 0, or 1 when PATH leads nowhere, 2 when it or the JSON is bad. */
static int
query(const char *doc, const char *end, const char *path)
{
	struct text t = { doc, end };
	const char *step, *last = NULL;
	size_t last_n = 0;
	int r = 0, counting = *path == '#';
	long c;
	char *s;

	path += counting;
	if (counting) {
		/* A final selector is what counts; it is not walked into. */
		size_t pl = strlen(path);

		if (pl > 0 && path[pl - 1] == ']') {
			last = strrchr(path, '[');
			if (last == NULL || memchr(last, '=', pl - (size_t)(last - path)) == NULL) {
				fprintf(stderr, "rdmablk-json: \"#%s\" does not end in a "
					"[KEY=VALUE] selector or an array\n", path);
				return 2;
			}
			last_n = pl - (size_t)(last - path) - 2;
		}
	}
	for (step = path; *step != '\0' && step != last && r == 0;) {
		size_t n;

		if (*step == '.')
			step++;
		if (*step == '[') {
			const char *close = strchr(step, ']');

			if (close == NULL) {
				r = -2;
				break;
			}
			r = element(&t, step + 1, (size_t)(close - step - 1));
			n = (size_t)(close - step + 1);
		} else {
			n = strcspn(step, ".[");
			r = n == 0 ? -2 : member(&t, step, n);
		}
		if (r == 1 && step == path)
			fprintf(stderr, "rdmablk-json: %s: no %.*s at the top\n", file,
				(int)n, step);
		else if (r == 1)
			fprintf(stderr, "rdmablk-json: %s: no %.*s in \"%.*s\"\n", file,
				(int)n, step, (int)(step - path - (step[-1] == '.')), path);
		step += n;
	}
	if (r == -2) {
		fprintf(stderr, "rdmablk-json: bad path \"%s\"\n", path);
		return 2;
	}
	if (r != 0)
		return r < 0 ? 2 : 1;
	if (counting) {
		c = count(&t, last != NULL ? last + 1 : NULL, last_n);
		if (c == -3)
			fprintf(stderr, "rdmablk-json: %s: \"%.*s\" is no array\n", file,
				(int)(last != NULL ? last - path : (long)strlen(path)), path);
		if (c == -2)
			fprintf(stderr, "rdmablk-json: bad selector in \"#%s\"\n", path);
		if (c < 0)
			return c == -3 ? 1 : 2;
		printf("%ld\n", c);
		return 0;
	}
	ws(&t);
	step = t.p;
	if (skip_value(&t) < 0)
		return 2;
	s = scalar(step, t.p);
	printf("%s\n", s);
	free(s);
	return 0;
}

int
main(int argc, char **argv)
{
	char *doc;
	size_t len;
	int i, r, worst = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: rdmablk-json FILE [#]PATH...\n");
		return 2;
	}
	file = argv[1];
	doc = doc_start = slurp(file, &len);
	for (i = 2; i < argc; i++) {
		r = query(doc, doc + len, argv[i]);
		if (r > worst)
			worst = r;
		if (r == 2)
			break;
	}
	free(doc);
	return worst;
}
