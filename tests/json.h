/* SPDX-License-Identifier: MIT */
/*
 * json.h - a small JSON syntax checker for the tests that read the JSON
 * pinwheel writes (RFC 8259 syntax only, no semantics).
 */
#ifndef PW_TESTS_JSON_H
#define PW_TESTS_JSON_H

#include <stdbool.h>
#include <string.h>

static inline const char *pw__tj_value(const char *p);

static inline const char *pw__tj_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static inline const char *pw__tj_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (; *p != '"'; p++) {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF",
						    p[i]) ||
					    !p[i])
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
	}
	return p + 1;
}

static inline const char *pw__tj_number(const char *p)
{
	const char *s = p;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (*p == '.') {
		p++;
		if (!(*p >= '0' && *p <= '9'))
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return p > s ? p : NULL;
}

static inline const char *pw__tj_seq(const char *p, char close, bool keys)
{
	p = pw__tj_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (keys) {
			p = pw__tj_string(pw__tj_ws(p));
			if (!p)
				return NULL;
			p = pw__tj_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = pw__tj_value(p);
		if (!p)
			return NULL;
		p = pw__tj_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static inline const char *pw__tj_value(const char *p)
{
	p = pw__tj_ws(p);
	switch (*p) {
	case '{':
		return pw__tj_seq(p, '}', true);
	case '[':
		return pw__tj_seq(p, ']', false);
	case '"':
		return pw__tj_string(p);
	case 't':
		return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f':
		return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n':
		return strncmp(p, "null", 4) ? NULL : p + 4;
	default:
		return pw__tj_number(p);
	}
}

/* True when @s is one JSON value (RFC 8259 syntax), then only blanks. */
static inline bool pw_test_json_valid(const char *s)
{
	const char *end = pw__tj_value(s);
	return end && !*pw__tj_ws(end);
}

#endif /* PW_TESTS_JSON_H */
