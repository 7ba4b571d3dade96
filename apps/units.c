/* SPDX-License-Identifier: MIT */
/*
 * units.c - adaptive duration units for human tables (units.h). The
 * rounding is done in integers, so the boundaries are exact: no binary
 * fraction decides whether a value prints as 999.99us or 1.00ms.
 */
#include <inttypes.h>
#include <stdio.h>

#include "apps/units.h"

char *pw_units_ns(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		const char *name;
		uint64_t hundredth; /* ns in a hundredth of the unit */
	} units[] = { { "us", 10 }, { "ms", 10000 }, { "s", 10000000 } };
	size_t last = sizeof(units) / sizeof(units[0]) - 1;
	uint64_t h = 0;
	size_t i;

	for (i = 0; i <= last; i++) {
		uint64_t d = units[i].hundredth;
		/* Halves up, without overflow near UINT64_MAX. */
		h = ns / d + (ns % d >= (d + 1) / 2);
		if (h < 100000 || i == last)
			break;
	}
	snprintf(buf, len, "%" PRIu64 ".%02" PRIu64 "%s", h / 100, h % 100,
		 units[i].name);
	return buf;
}
