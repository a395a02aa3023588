/* test_mem.c — mpe_large_alloc (common/mem.h): zeroed, aligned as it says,
 * every byte writable, and freed with its size, at sizes around its 1 MiB
 * switch to huge pages. */
#include <stdint.h>

#include "common/mem.h"
#include "tests/test.h"

static void t_zeroed_aligned_writable(TestCtx *t)
{
    const size_t mib = (size_t)1 << 20;
    const size_t sizes[] = { 1, 63, 4097, mib - 1, mib, mib + 1, 2 * mib, 2 * mib + 1, 9 * mib + 77 };
    for (int round = 0; round < 2; round++)   /* the second round reuses freed memory */
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            const size_t n = sizes[i], align = n >= mib ? 2 * mib : 64;
            uint8_t *p = mpe_large_alloc(n);
            CHECK(t, p != NULL, "%zu bytes: NULL", n);
            if (!p)
                continue;
            CHECK(t, (uintptr_t)p % align == 0, "%zu bytes at %p: not %zu-aligned", n, (void *)p, align);
            size_t bad = SIZE_MAX;
            for (size_t k = 0; k < n && bad == SIZE_MAX; k++)
                if (p[k])
                    bad = k;
            CHECK(t, bad == SIZE_MAX, "%zu bytes (round %d): byte %zu not zero", n, round, bad);
            memset(p, 0xA5, n);   /* dirty it for the next round */
            mpe_large_free(p, n);
        }
    mpe_large_free(NULL, 12345);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_mem");
    test_run(&t, "zeroed_aligned_writable", t_zeroed_aligned_writable);
    return test_finish(&t);
}
