/* SPDX-License-Identifier: MIT */
/*
 * plot.c - the gnuplot pieces the pinwheel command's plots share (see
 * plot.h): percentile curves of latency histograms, their axes, quoting.
 */
#include "apps/plot.h"

void pw_plot_curve(FILE *f, const struct pw_hist *h)
{
	double n = (double)pw_hist_count(h), rest = 1.0;

	for (int i = 0; i <= 60 && 1.0 / rest <= n; i++) {
		fprintf(f, "%.6g %.3f\n", 1.0 / rest,
			(double)pw_hist_percentile(h, 100.0 * (1.0 - rest)) /
				1e3);
		rest *= 0.7943282347242815; /* 10^(-1/10) */
	}
	fprintf(f, "%.6g %.3f\n", n, (double)pw_hist_max(h) / 1e3);
}

void pw_plot_percentile_axes(FILE *f)
{
	fprintf(f,
		"set logscale xy\nset grid\nset key top left noenhanced\n"
		"set xtics ('0%%%%' 1, '50%%%%' 2, '90%%%%' 10, '99%%%%' 100, "
		"'99.9%%%%' 1000, '99.99%%%%' 10000, '99.999%%%%' 100000, "
		"'99.9999%%%%' 1000000)\n"
		"set xlabel 'percentile'\nset ylabel 'latency (us)'\n");
}

void pw_plot_str(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++)
		fprintf(f, *s == '\'' ? "''" : "%c", *s);
	fputc('\'', f);
}
