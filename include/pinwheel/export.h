/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/export.h - the mark of the public API.
 *
 * The library is compiled with -fvisibility=hidden, so libpinwheel.so
 * exports only what is marked PW_API: the functions declared in these
 * headers. The library's internal functions and data (the pw__ names)
 * stay inside it; programs that link the static archive still reach
 * them, as a static link ignores visibility. The inline functions of
 * these headers need no mark: they are compiled into the caller.
 * scripts/check-exports.sh checks both halves against the built library.
 */
#ifndef PINWHEEL_EXPORT_H
#define PINWHEEL_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define PW_API __attribute__((visibility("default")))
#else
#define PW_API
#endif

#endif /* PINWHEEL_EXPORT_H */
