/* SPDX-License-Identifier: MIT */
/* apps.h - the subcommands of the pinwheel command. */
#ifndef PW_APPS_H
#define PW_APPS_H

/* Each takes the subcommand's own argv (argv[0] is its name) and returns
 * the process exit status: 0 success, 1 runtime failure, 2 bad usage. */
int pw_app_demo(int argc, char **argv);
int pw_app_topo(int argc, char **argv);
int pw_app_echo(int argc, char **argv);
int pw_app_udp_echo(int argc, char **argv);
int pw_app_http(int argc, char **argv);
int pw_app_load(int argc, char **argv);
int pw_app_proxy(int argc, char **argv);
int pw_app_bench(int argc, char **argv);

#endif /* PW_APPS_H */
