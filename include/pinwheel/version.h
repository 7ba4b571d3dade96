/* SPDX-License-Identifier: MIT */
/* pinwheel/version.h - the version of these headers. */
#ifndef PINWHEEL_VERSION_H
#define PINWHEEL_VERSION_H

#define PW_VERSION_MAJOR 0
#define PW_VERSION_MINOR 1
#define PW_VERSION_PATCH 0
#define PW_VERSION	 "0.1.0"

#endif /* PINWHEEL_VERSION_H */
