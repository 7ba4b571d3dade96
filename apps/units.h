/* SPDX-License-Identifier: MIT */
/*
 * units.h - durations as people read them in the commands' tables: the
 * adaptive units wrk prints (812.45us, 12.34ms, 1.03s), two decimals.
 * Machine outputs (JSON) keep raw numbers; only human text goes through
 * here.
 */
#ifndef PW_APPS_UNITS_H
#define PW_APPS_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Room for any pw_units_ns() text with its NUL ("18446744073.71s"). */
#define PW_UNITS_LEN 24

/**
 * pw_units_ns - write @ns as a duration with two decimals and the
 * largest unit that keeps the number under 1000 once rounded: "0.00us"
 * to "999.99us", then "1.00ms" to "999.99ms", then seconds ("1.00s",
 * "3600.00s"). Rounding is to the nearest hundredth, halves up, so
 * 999.994 us prints as "999.99us" and 999.995 us as "1.00ms".
 * Return: @buf, holding the text (cut to @len - 1 bytes when shorter
 * than PW_UNITS_LEN).
 * Context: any thread.
 */
char *pw_units_ns(uint64_t ns, char *buf, size_t len);

#endif /* PW_APPS_UNITS_H */
