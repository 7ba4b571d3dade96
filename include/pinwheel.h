/* SPDX-License-Identifier: MIT */
/*
 * pinwheel.h - the whole public API of pinwheel, a thread-per-core async
 * runtime for Linux on io_uring. One header per module under pinwheel/.
 */
#ifndef PINWHEEL_H
#define PINWHEEL_H

#include "pinwheel/version.h"
#include "pinwheel/list.h"
#include "pinwheel/task.h"
#include "pinwheel/async.h"
#include "pinwheel/runtime.h"
#include "pinwheel/op.h"
#include "pinwheel/time.h"
#include "pinwheel/stream.h"
#include "pinwheel/channel.h"
#include "pinwheel/xchannel.h"
#include "pinwheel/oneshot.h"
#include "pinwheel/combinators.h"
#include "pinwheel/mesh.h"
#include "pinwheel/blocking.h"
#include "pinwheel/fiber.h"
#include "pinwheel/topo.h"
#include "pinwheel/hist.h"
#include "pinwheel/hist_hdr.h"
#include "pinwheel/net.h"
#include "pinwheel/file.h"
#include "pinwheel/reader.h"
#include "pinwheel/serve.h"
#include "pinwheel/signal.h"
#include "pinwheel/numa.h"
#include "pinwheel/metrics.h"

#endif /* PINWHEEL_H */
