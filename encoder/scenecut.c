/* scenecut.c — see scenecut.h. */
#include "scenecut.h"

#include <math.h>
#include <stddef.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/cpu.h"
#ifdef MPE_ARCH_X86
#include <immintrin.h>
#endif

void mpe_scenecut_init(MpeSceneCut *sc)
{
    memset(sc, 0, sizeof(*sc));
    sc->last = -1;
}

/* Sum of the luma of 16 samples of the 8x8 block at (x, y): every other
 * sample of every other row, a quarter of the reads and still a mean that
 * noise barely moves.  RGB input through frontend.h's fixed-point BT.601
 * conversion, YUV input's Y plane as it is. */
static int block_sum(const MpeFrame *f, int x, int y)
{
    int sum = 0;
    if (f->format == MPE_FRAME_YUV420) {
        for (int r = 0; r < 8; r += 2) {
            const uint8_t *p = f->data[0] + (ptrdiff_t)(y + r) * f->stride[0] + x;
            sum += p[0] + p[2] + p[4] + p[6];
        }
        return sum;
    }
    for (int r = 0; r < 8; r += 2) {
        const uint8_t *p = f->data[0] + (ptrdiff_t)(y + r) * f->stride[0] + 3 * x;
        for (int c = 0; c < 8; c += 2, p += 6)
            sum += (16829 * p[0] + 33039 * p[1] + 6416 * p[2] + (16 << 16) + 32768) >> 16;
    }
    return sum;
}

#ifdef MPE_ARCH_X86
#define AVX2 __attribute__((target("avx2")))

/* block_sum of an RGB block at p (rows stride apart): each sampled row's
 * 4 pixels (bytes 0, 6, 12, 18) gathered by pshufb from bytes 0..15 (the
 * first two) and 8..23 (the others, one per 128-bit lane) as the words
 * R G B G, which pmaddwd turns into 16829 R + 16520 G and 6416 B + 16519 G
 * (Y_G = 33039 split: int16 coefficients); their sum, + 16 << 16 + 32768,
 * >> 16 is block_sum's per pixel.  It read every sample of a 2048^2 frame
 * with 3 multiplies in scalar code: ~2 ms a frame on one thread, 2.5 % of
 * a PNG encode here. */
AVX2 static int block_sum_rgb_avx2(const uint8_t *p, ptrdiff_t stride)
{
    const __m256i gather = _mm256_setr_epi8(0, -1, 1, -1, 2, -1, 1, -1, 6, -1, 7, -1, 8, -1, 7, -1,
                                            4, -1, 5, -1, 6, -1, 5, -1, 10, -1, 11, -1, 12, -1, 11, -1);
    const __m256i coef = _mm256_set1_epi64x((long long)(((uint64_t)16519 << 48) | ((uint64_t)6416 << 32) |
                                                        ((uint64_t)16520 << 16) | 16829));
    const __m256i k = _mm256_set1_epi32((16 << 16) + 32768);
    __m256i acc = _mm256_setzero_si256();
    for (int r = 0; r < 8; r += 2) {
        const uint8_t *q = p + r * stride;
        const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)q)),
                                                  _mm_loadu_si128((const __m128i *)(q + 8)), 1);
        const __m256i m = _mm256_madd_epi16(_mm256_shuffle_epi8(v, gather), coef);
        /* dwords 0, 2 of each lane: a pixel's two halves added */
        const __m256i y = _mm256_add_epi32(m, _mm256_shuffle_epi32(m, 0xB1));
        acc = _mm256_add_epi32(acc, _mm256_srli_epi32(_mm256_add_epi32(y, k), 16));
    }
    __m128i a = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    a = _mm_add_epi32(a, _mm_unpackhi_epi64(a, a));
    return _mm_cvtsi128_si32(a);
}
#endif

/* Block row by's block sums, by level (sum / 16), into level[]; simd 0:
 * block_sum alone (the C reference); cpu_flags: MPE_CPU_AVX2 counts RGB
 * blocks with it. */
static void count_row(const MpeFrame *f, int by, int bw, uint32_t level[256], int simd, unsigned cpu_flags)
{
    int bx = 0;
#ifdef MPE_ARCH_X86
    if (simd && f->format == MPE_FRAME_RGB24 && (cpu_flags & MPE_CPU_AVX2)) {
        const uint8_t *p = f->data[0] + (ptrdiff_t)8 * by * f->stride[0];
        for (; bx < bw; bx++)
            level[block_sum_rgb_avx2(p + 24 * bx, f->stride[0]) / 16]++;
    }
#else
    (void)cpu_flags;
#endif
#if defined(__SSE2__)
    if (simd && f->format == MPE_FRAME_YUV420) {
        /* two blocks at a time: rows 0, 2, 4, 6 with their odd samples
         * masked off, summed by psadbw into one sum per block: block_sum's
         * sums exactly, in a third of the front end's time for this count */
        const __m128i even = _mm_set1_epi16(0x00FF), zero = _mm_setzero_si128();
        for (; bx + 2 <= bw; bx += 2) {
            const uint8_t *p = f->data[0] + (ptrdiff_t)8 * by * f->stride[0] + 8 * bx;
            __m128i acc = zero;
            for (int r = 0; r < 8; r += 2) {
                const __m128i v = _mm_loadu_si128((const __m128i *)(p + (ptrdiff_t)r * f->stride[0]));
                acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_and_si128(v, even), zero));
            }
            level[_mm_cvtsi128_si32(acc) / 16]++;
            level[_mm_cvtsi128_si32(_mm_unpackhi_epi64(acc, acc)) / 16]++;
        }
    }
#else
    (void)simd;
#endif
    for (; bx < bw; bx++)
        level[block_sum(f, 8 * bx, 8 * by) / 16]++;
}

static void count_levels(const MpeFrame *f, uint32_t level[256], int simd, unsigned cpu_flags)
{
    for (int by = 0; by < f->height / 8; by++)
        count_row(f, by, f->width / 8, level, simd, cpu_flags);
}

void mpe_scenecut_levels_c(const MpeFrame *f, uint32_t level[256])
{
    count_levels(f, level, 0, 0);
}

void mpe_scenecut_levels(const MpeFrame *f, uint32_t level[256], unsigned cpu_flags)
{
    count_levels(f, level, 1, cpu_flags);
}

/* The block means' histogram, in bins of the frame's own standard score
 * (mean level and contrast divided out): a fade or a brightness change
 * scales and shifts every block alike and keeps the histogram, a cut does
 * not.  Scores cover -4..4 standard deviations, clamped at the ends; a
 * flat frame (deviation under one level) counts as deviation one.  Near
 * black, at a fade's end, the levels are too few for the shape to hold:
 * such frames can still score as cuts (seen: 2 of a 10-frame fade). */
/* Bands of block rows, each counted into a histogram of its own (added up
 * after: the counts do not depend on how the rows were cut). */
#define LEVEL_BANDS 16

typedef struct LevelJob {
    const MpeFrame *f;
    int bands;
    unsigned cpu_flags;
    uint32_t level[LEVEL_BANDS][256];
} LevelJob;

static void level_band(void *arg, int band, int worker)
{
    LevelJob *j = arg;
    const int bh = j->f->height / 8;
    (void)worker;
    for (int by = bh * band / j->bands; by < bh * (band + 1) / j->bands; by++)
        count_row(j->f, by, j->f->width / 8, j->level[band], 1, j->cpu_flags);
}

double mpe_scenecut_score(MpeSceneCut *sc, int n, const MpeFrame *f)
{
    return mpe_scenecut_score_pool(sc, n, f, NULL);
}

double mpe_scenecut_score_pool(MpeSceneCut *sc, int n, const MpeFrame *f, MpePool *pool)
{
    uint32_t *h = sc->hist[n & 1];
    uint32_t level[256] = { 0 };
    const int bw = f->width / 8, bh = f->height / 8;
    uint64_t s1 = 0, s2 = 0;

    /* an RGB frame's block levels take ~2 ms at 2048^2 on one thread */
    const int bands = pool ? MPE_MAX(1, MPE_MIN(LEVEL_BANDS, bh / 16)) : 1;
    if (bands > 1) {
        LevelJob job = { .f = f, .bands = bands, .cpu_flags = sc->cpu_flags };   /* 16 KiB of counts */
        mpe_pool_run(pool, bands, level_band, &job);
        for (int b = 0; b < bands; b++)
            for (int v = 0; v < 256; v++)
                level[v] += job.level[b][v];
    } else {
        mpe_scenecut_levels(f, level, sc->cpu_flags);
    }
    sc->blocks = bw * bh;
    for (int v = 0; v < 256; v++) {
        s1 += (uint64_t)v * level[v];
        s2 += (uint64_t)v * v * level[v];
    }
    memset(h, 0, sizeof(sc->hist[0]));
    if (sc->blocks) {
        const double nb = sc->blocks, mean = (double)s1 / nb;
        double var = (double)s2 / nb - mean * mean;
        const double sd = var > 1.0 ? sqrt(var) : 1.0;
        for (int v = 0; v < 256; v++) {
            if (!level[v])
                continue;
            const double z = ((double)v - mean) / sd;
            int bin = (int)floor((z + 4.0) * (MPE_SCENECUT_BINS / 8.0));
            bin = bin < 0 ? 0 : bin >= MPE_SCENECUT_BINS ? MPE_SCENECUT_BINS - 1 : bin;
            h[bin] += level[v];
        }
    }
    const int have_prev = sc->last == n - 1 && n > 0;
    sc->last = n;
    sc->mean[n & 1] = sc->blocks ? (double)s1 / sc->blocks : 0;
    if (!have_prev || !sc->blocks)
        return -1;
    /* a jump of the mean level no fade makes in one frame (a cut between
     * two flat pictures, black to white, keeps the standard-score
     * histogram) */
    if (fabs(sc->mean[n & 1] - sc->mean[(n - 1) & 1]) > MPE_SCENECUT_MEAN_JUMP)
        return 100.0;
    const uint32_t *g = sc->hist[(n - 1) & 1];
    uint64_t moved = 0;
    for (int i = 0; i < MPE_SCENECUT_BINS; i++)
        moved += h[i] > g[i] ? h[i] - g[i] : g[i] - h[i];
    return 100.0 * (double)moved / (2.0 * sc->blocks);
}
