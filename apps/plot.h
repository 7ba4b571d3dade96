/* SPDX-License-Identifier: MIT */
/*
 * plot.h - pieces of the gnuplot scripts the pinwheel command writes
 * (`pinwheel bench`, `pinwheel report`): a latency histogram as a
 * percentile curve, the percentile axis under it, and gnuplot's quoting.
 * Running gnuplot stays with each command (they report its failures in
 * their own ways).
 */
#ifndef PW_APPS_PLOT_H
#define PW_APPS_PLOT_H

#include <stdio.h>

#include "pinwheel/hist.h"

/**
 * pw_plot_curve - @h's percentile curve as gnuplot data lines "x y":
 * x = 1 / (1 - p) (so 90% is 10, 99% is 100), y the latency in us (@h
 * holds ns); ten points per decade up to the percentile the samples
 * support, then the maximum.
 * Context: any thread, while no writer runs on @h.
 */
void pw_plot_curve(FILE *f, const struct pw_hist *h);

/**
 * pw_plot_percentile_axes - the settings of a percentile plot: log
 * scales, a grid, x tics named 0% to 99.9999%, the axis labels, the key
 * at the top left.
 * Context: any thread.
 */
void pw_plot_percentile_axes(FILE *f);

/**
 * pw_plot_str - @s as a gnuplot single-quoted string (quotes doubled).
 * Context: any thread.
 */
void pw_plot_str(FILE *f, const char *s);

#endif /* PW_APPS_PLOT_H */
