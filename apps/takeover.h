/* SPDX-License-Identifier: MIT */
/*
 * takeover.h - `--takeover PATH`: restarts that lose no connection
 * (docs/proxy.md, "Restarts without loss").
 *
 * Every generation of a server runs the same command line. At start it
 * connects to the Unix socket PATH: when nobody listens there (no file,
 * or a socket left by a dead process) it binds fresh; otherwise the
 * running process sends its listening sockets (SCM_RIGHTS, after a
 * versioned header naming the command, the address and the count), the
 * new one serves on them and answers "ready", and the old one stops
 * accepting without closing them and drains as on SIGTERM. Then the new
 * one listens on PATH (mode 0600) for the next generation.
 *
 * The driver (driver.h) makes four calls, all on the main thread; the
 * socket on PATH is served by a thread of its own, never by a shard:
 *
 *	pw_tko_begin()     before the service starts: d->adopt, d->nadopt
 *	pw_tko_ready()     after it started on d->listener
 *	pw_tko_stopping()  when the stop (SIGINT, SIGTERM) begins
 *	pw_tko_end()       at exit
 */
#ifndef PW_APPS_TAKEOVER_H
#define PW_APPS_TAKEOVER_H

#include "apps/driver.h"

/* How long the old process waits for the new one's "ready". */
#define PW_TKO_READY_NS (10 * PW_NSEC_PER_SEC)
/* How long either side waits for any other message. */
#define PW_TKO_MSG_NS (2 * PW_NSEC_PER_SEC)

struct pw_tko;

/**
 * pw_tko_begin - with d->takeover set, connect to that path: when a
 * process of the same command listens there, take its sockets into
 * d->adopt and d->nadopt (the address checked against d->listen: the
 * same host, and the same port unless d->listen's is 0); when nobody
 * does, leave d->nadopt 0 (bind fresh). Sets d->tko.
 * Return: 0; or an exit status (1) after telling why on stderr: PATH
 * is not a socket, the running process refused (another command, it is
 * stopping), its sockets do not fit (another address, more sockets than
 * shards, another scheduler), or the exchange failed.
 * Context: the main thread, before the service starts.
 */
int pw_tko_begin(struct pw_drv *d);

/**
 * pw_tko_ready - the service runs on d->listener: bind PATH's next
 * socket, tell the old process (if any) "ready", then put the socket at
 * PATH (replacing a stale one, never a file of another kind) and start
 * the thread that hands the sockets to the next generation. A failure
 * after "ready" is told on stderr and leaves the service running
 * without --takeover.
 * Return: 0; or 1 after telling why (the old process keeps serving).
 * Context: the main thread, after the service started.
 */
int pw_tko_ready(struct pw_drv *d);

/**
 * pw_tko_stopping - the process stops: refuse takeovers from now on and
 * never touch d->listener again (a hand-over in flight finishes first).
 * Harmless with d->tko NULL.
 * Context: the main thread, before the drain.
 */
void pw_tko_stopping(struct pw_drv *d);

/**
 * pw_tko_end - stop the thread, close the sockets, remove PATH if it is
 * still this process's socket and no hand-over happened; free d->tko.
 * Harmless with d->tko NULL.
 * Context: the main thread, at exit.
 */
void pw_tko_end(struct pw_drv *d);

#endif /* PW_APPS_TAKEOVER_H */
