/* SPDX-License-Identifier: MIT */
/*
 * serve_int.h - what net/serve_run.c needs of the server record that
 * net/serve.c keeps private. Private to the library.
 */
#ifndef PW_NET_SERVE_INT_H
#define PW_NET_SERVE_INT_H

#include <stdbool.h>

#include "pinwheel/serve.h"

/**
 * pw__server_acceptors_ended - whether every acceptor of @srv has ended,
 * and so its listener is closed; if not, @cx's task is woken when the
 * last one ends (one waiter at a time: a later call replaces it).
 * Context: a task on a shard of @srv's runtime.
 */
bool pw__server_acceptors_ended(struct pw_server *srv, struct pw_cx *cx);

#endif /* PW_NET_SERVE_INT_H */
