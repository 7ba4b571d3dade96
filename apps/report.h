/* SPDX-License-Identifier: MIT */
/*
 * report.h - `pinwheel report`: the latency of several `pinwheel load`
 * runs (their --hdr-log interval logs or --json outputs) merged into one
 * percentile table, JSON and plot.
 */
#ifndef PW_APPS_REPORT_H
#define PW_APPS_REPORT_H

/**
 * pw_app_report - `pinwheel report [--json FILE] [--plot FILE]
 * [--hgrm FILE] FILE...` with its own argv (argv[0] is its name).
 * Return: the exit status: 0; 1 when an input cannot be read or the
 * inputs do not merge (other significant digits or highest value), or an
 * output cannot be written; 2 for a bad flag or no input.
 * Context: the main thread.
 */
int pw_app_report(int argc, char **argv);

#endif /* PW_APPS_REPORT_H */
