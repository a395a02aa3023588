/* mem.h — large buffers (planes, per-sample tables) in 2 MiB pages where
 * the kernel gives them (transparent huge pages on request).
 *
 * The motion search reads such buffers at scattered rows: with 4 KiB pages
 * every row of a 2048-wide plane is a page of its own and the TLB misses;
 * and the first touch of a buffer costs one page fault per 4 KiB (the
 * solar clip's first frames spent a few % of the process's CPU time in
 * them).  The kernel zeroes the memory, so there is no second pass. */
#ifndef MPE_MEM_H
#define MPE_MEM_H

#include <stddef.h>

/* size bytes, zeroed, 64-byte aligned (2 MiB from 1 MiB up, where the
 * size is rounded up to whole 2 MiB pages); NULL when out of memory. */
void *mpe_large_alloc(size_t size);
/* p from mpe_large_alloc(size), the same size; NULL is ignored. */
void mpe_large_free(void *p, size_t size);

#endif
