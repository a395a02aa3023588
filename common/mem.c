/* mem.c — large buffers in 2 MiB pages (mem.h). */
#include "common/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

/* From 1 MiB up a buffer takes whole huge pages: at most half of the last
 * one is left unused. */
static size_t mapped_size(size_t size)
{
    return size >= HUGE_PAGE / 2 ? (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1) : 0;
}

void *mpe_large_alloc(size_t size)
{
    const size_t len = mapped_size(size);

    if (!len) {
        void *p = NULL;
        if (posix_memalign(&p, 64, size ? size : 1) != 0)
            return NULL;
        return memset(p, 0, size);
    }
    /* map a huge page more than needed and keep the aligned part: the
     * kernel backs only 2 MiB-aligned ranges with huge pages */
    uint8_t *m = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)m + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (p > m)
        munmap(m, (size_t)(p - m));
    if (p + len < m + len + HUGE_PAGE)
        munmap(p + len, (size_t)(m + len + HUGE_PAGE - (p + len)));
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE); /* a hint: without it, 4 KiB pages */
#endif
    return p;
}

void mpe_large_free(void *p, size_t size)
{
    const size_t len = mapped_size(size);

    if (!p)
        return;
    if (len)
        munmap(p, len);
    else
        free(p);
}
