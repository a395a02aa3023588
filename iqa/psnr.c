#include "iqa.h"

#include <math.h>

uint64_t iqa_sse_plane(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs, int w,
                       int h)
{
    uint64_t sse = 0;
    for (int y = 0; y < h; y++, a += as, b += bs) {
        uint32_t row = 0;   /* 4095 * 255^2 fits in 32 bits */
        for (int x = 0; x < w; x++) {
            int d = a[x] - b[x];
            row += (uint32_t)(d * d);
        }
        sse += row;
    }
    return sse;
}

double iqa_psnr_from_mse(double mse)
{
    if (mse <= 1e-10)
        return 100.0;
    return 10.0 * log10(255.0 * 255.0 / mse);
}
