/* SPDX-License-Identifier: MIT */
/*
 * flush.h - the end of every writer of the library (histograms, metrics):
 * one check that what was written to a stdio stream reached it.
 */
#ifndef PW_CORE_FLUSH_H
#define PW_CORE_FLUSH_H

#include <errno.h>
#include <stdio.h>

/* -EIO if anything written to @f so far failed, flushing it first so that
 * a failure of the last, buffered, bytes is seen too; else 0. The thread
 * that writes @f. */
static inline int pw__flushed(FILE *f)
{
	return fflush(f) || ferror(f) ? -EIO : 0;
}

#endif /* PW_CORE_FLUSH_H */
