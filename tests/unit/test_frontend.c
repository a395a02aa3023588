/* test_frontend.c — the cpu front end against independent straightforward
 * implementations, on random inputs and odd sizes (DESIGN.md invariant 3),
 * and against known BT.601 values. */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cpu.h"
#include "dsp/sad.h"
#include "encoder/bdecide.h"
#include "gpu/frontend.h"
#include "gpu/frontend_internal.h"
#include "tests/test.h"

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Direct formula per output sample, written independently of the tested
 * code's row buffering: 4x4 taps over clamped source coordinates. */
static void convert_ref(MpePicture *pic, const uint8_t *rgb, int w, int h)
{
    static const int taps[4] = { 1, 3, 3, 1 };
    for (int y = 0; y < pic->plane_h[0]; y++)
        for (int x = 0; x < pic->plane_w[0]; x++) {
            const uint8_t *p = rgb + 3 * (clampi(y, 0, h - 1) * w + clampi(x, 0, w - 1));
            long v = 16829L * p[0] + 33039L * p[1] + 6416L * p[2];
            pic->plane[0][y * pic->stride[0] + x] = (uint8_t)(16 + (v + 32768) / 65536);
        }
    for (int cy = 0; cy < pic->plane_h[1]; cy++)
        for (int cx = 0; cx < pic->plane_w[1]; cx++) {
            long long cb = 0, cr = 0;
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++) {
                    int sx = clampi(2 * cx - 1 + i, 0, w - 1), sy = clampi(2 * cy - 1 + j, 0, h - 1);
                    const uint8_t *p = rgb + 3 * (sy * w + sx);
                    long wgt = taps[i] * taps[j];
                    cb += wgt * (-9714L * p[0] - 19070L * p[1] + 28784L * p[2]);
                    cr += wgt * (28784L * p[0] - 24103L * p[1] - 4681L * p[2]);
                }
            /* round half up of cb / 2^22, as floor((cb + 2^21) / 2^22) */
            long long d = 1LL << 22;
            long long qb = (cb + (1LL << 21)) >= 0 ? (cb + (1LL << 21)) / d : -((-(cb + (1LL << 21)) + d - 1) / d);
            long long qr = (cr + (1LL << 21)) >= 0 ? (cr + (1LL << 21)) / d : -((-(cr + (1LL << 21)) + d - 1) / d);
            pic->plane[1][cy * pic->stride[1] + cx] = (uint8_t)clampi((int)(128 + qb), 16, 240);
            pic->plane[2][cy * pic->stride[2] + cx] = (uint8_t)clampi((int)(128 + qr), 16, 240);
        }
}

static int planes_equal(const MpePicture *a, const MpePicture *b, int *where_c, int *where_x,
                        int *where_y)
{
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < a->plane_h[c]; y++)
            for (int x = 0; x < a->plane_w[c]; x++)
                if (a->plane[c][y * a->stride[c] + x] != b->plane[c][y * b->stride[c] + x]) {
                    *where_c = c;
                    *where_x = x;
                    *where_y = y;
                    return 0;
                }
    return 1;
}

static void fill_sentinel(MpePicture *p, uint8_t v)
{
    for (int c = 0; c < 3; c++)
        memset(p->plane[c], v, (size_t)p->stride[c] * p->plane_h[c]);
}

static void test_convert_random(TestCtx *t)
{
    static const int sizes[][2] = { { 16, 16 }, { 17, 33 }, { 330, 250 }, { 47, 18 }, { 64, 64 } };
    TestRng rng = { 0x1234567 };
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        int w = sizes[s][0], h = sizes[s][1];
        uint8_t *rgb = malloc((size_t)w * h * 3);
        MpePicture a, b;
        CHECK(t, rgb && mpe_picture_alloc(&a, w, h) == 0 && mpe_picture_alloc(&b, w, h) == 0, "alloc");
        for (int i = 0; i < w * h * 3; i++)
            rgb[i] = (uint8_t)test_rand(&rng);
        fill_sentinel(&a, 0xAA);
        fill_sentinel(&b, 0x55);
        gpu_convert_rgb_c(&a, rgb, w * 3);
        convert_ref(&b, rgb, w, h);
        int c = 0, x = 0, y = 0;
        CHECK(t, planes_equal(&a, &b, &c, &x, &y), "%dx%d: plane %d differs at (%d,%d)", w, h, c, x, y);
        mpe_picture_free(&a);
        mpe_picture_free(&b);
        free(rgb);
    }
}

static void convert_solid(MpePicture *p, int r, int g, int b)
{
    uint8_t rgb[16 * 16 * 3];
    for (int i = 0; i < 16 * 16; i++) {
        rgb[3 * i] = (uint8_t)r;
        rgb[3 * i + 1] = (uint8_t)g;
        rgb[3 * i + 2] = (uint8_t)b;
    }
    gpu_convert_rgb_c(p, rgb, 16 * 3);
}

static void test_convert_bt601_values(TestCtx *t)
{
    /* ITU-R BT.601 studio range: black 16/128/128, white 235/128/128, and the
     * 75%-free primaries of the classic tables (rounded) */
    static const int cases[][6] = {
        { 0, 0, 0, 16, 128, 128 },       { 255, 255, 255, 235, 128, 128 },
        { 255, 0, 0, 81, 90, 240 },      { 0, 255, 0, 145, 54, 34 },
        { 0, 0, 255, 41, 240, 110 },     { 128, 128, 128, 126, 128, 128 },
    };
    MpePicture p;
    CHECK(t, mpe_picture_alloc(&p, 16, 16) == 0, "alloc");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const int *c = cases[i];
        convert_solid(&p, c[0], c[1], c[2]);
        CHECK(t, p.plane[0][0] == c[3] && p.plane[1][0] == c[4] && p.plane[2][0] == c[5],
              "RGB(%d,%d,%d) -> YCbCr(%d,%d,%d), expected (%d,%d,%d)", c[0], c[1], c[2],
              p.plane[0][0], p.plane[1][0], p.plane[2][0], c[3], c[4], c[5]);
    }
    mpe_picture_free(&p);
}

static void test_padding_replicates_edges(TestCtx *t)
{
    const int w = 21, h = 19;
    uint8_t rgb[21 * 19 * 3];
    TestRng rng = { 99 };
    MpePicture p;
    for (size_t i = 0; i < sizeof(rgb); i++)
        rgb[i] = (uint8_t)test_rand(&rng);
    CHECK(t, mpe_picture_alloc(&p, w, h) == 0, "alloc");
    gpu_convert_rgb_c(&p, rgb, w * 3);
    CHECK(t, p.plane_w[0] == 32 && p.plane_h[0] == 32, "padded to %dx%d", p.plane_w[0], p.plane_h[0]);
    for (int y = 0; y < 32; y++)
        for (int x = 0; x < 32; x++) {
            int sx = x < w ? x : w - 1, sy = y < h ? y : h - 1;
            CHECK(t, p.plane[0][y * p.stride[0] + x] == p.plane[0][sy * p.stride[0] + sx],
                  "luma padding at (%d,%d)", x, y);
        }
    mpe_picture_free(&p);
}

/* Exhaustive search written the obvious way: every candidate in the window,
 * strict total order of DESIGN.md invariant 2. */
static void search_ref(GpuMotion *mv, const MpePicture *cur, const MpePicture *ref, int range)
{
    for (int mby = 0; mby < cur->mb_height; mby++)
        for (int mbx = 0; mbx < cur->mb_width; mbx++) {
            long best = -1;
            int bdx = 0, bdy = 0;
            uint32_t sad0 = 0;
            for (int dy = -range; dy <= range; dy++)
                for (int dx = -range; dx <= range; dx++) {
                    int x = mbx * 16 + dx, y = mby * 16 + dy;
                    if (x < 0 || y < 0 || x + 16 > cur->plane_w[0] || y + 16 > cur->plane_h[0])
                        continue;
                    long sad = 0;
                    for (int j = 0; j < 16; j++)
                        for (int i = 0; i < 16; i++)
                            sad += abs(cur->plane[0][(mby * 16 + j) * cur->stride[0] + mbx * 16 + i] -
                                       ref->plane[0][(y + j) * ref->stride[0] + x + i]);
                    if (!dx && !dy)
                        sad0 = (uint32_t)sad;
                    int l1 = abs(dx) + abs(dy), bl1 = abs(bdx) + abs(bdy);
                    if (best < 0 || sad < best ||
                        (sad == best && (l1 < bl1 || (l1 == bl1 && (dy < bdy || (dy == bdy && dx < bdx)))))) {
                        best = sad;
                        bdx = dx;
                        bdy = dy;
                    }
                }
            GpuMotion *m = &mv[mby * cur->mb_width + mbx];
            m->dx = (int16_t)bdx;
            m->dy = (int16_t)bdy;
            m->sad = (uint32_t)best;
            m->sad0 = sad0;
        }
}

/* levels 0: a checkerboard (its inverse is made by the caller), where
 * every odd-L1 vector matches exactly and only the tie-break decides */
static void random_picture(MpePicture *p, TestRng *rng, int levels)
{
    if (levels <= 0) {
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < p->plane_h[c]; y++)
                for (int x = 0; x < p->plane_w[c]; x++)
                    p->plane[c][y * p->stride[c] + x] = (uint8_t)(((x + y) & 1) ^ (levels < 0) ? 200 : 40);
        return;
    }
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < p->plane_h[c]; y++)
            for (int x = 0; x < p->plane_w[c]; x++)
                p->plane[c][y * p->stride[c] + x] = (uint8_t)(test_rand(rng) % (unsigned)levels);
}

static void test_search_random(TestCtx *t)
{
    /* few grey levels make many equal SADs, which exercises the tie-break */
    static const int cases[][4] = { /* w, h, range, levels */
        { 64, 48, 7, 4 }, { 80, 64, 16, 256 }, { 33, 17, 5, 2 }, { 48, 48, 0, 256 }, { 96, 80, 20, 3 },
        { 64, 64, 16, 0 },
    };
    TestRng rng = { 777 };
    MpeSadDsp best_sad;
    mpe_sad_dsp_init(&best_sad, mpe_cpu_flags());
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        MpePicture cur, ref;
        int w = cases[k][0], h = cases[k][1], r = cases[k][2];
        CHECK(t, mpe_picture_alloc(&cur, w, h) == 0 && mpe_picture_alloc(&ref, w, h) == 0, "alloc");
        random_picture(&cur, &rng, cases[k][3]);
        random_picture(&ref, &rng, cases[k][3] ? cases[k][3] : -1);
        size_t n = (size_t)cur.mb_width * cur.mb_height;
        GpuMotion *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
        memset(a, 0xAB, n * sizeof(*a));
        memset(b, 0x5C, n * sizeof(*b));
        gpu_motion_search_c(a, &cur, &ref, r, mpe_sad16_c);
        search_ref(b, &cur, &ref, r);
        for (size_t i = 0; i < n; i++)
            CHECK(t, !memcmp(&a[i], &b[i], sizeof(*a)),
                  "%dx%d R=%d mb %zu: got (%d,%d) sad %u sad0 %u, want (%d,%d) sad %u sad0 %u", w, h,
                  r, i, a[i].dx, a[i].dy, a[i].sad, a[i].sad0, b[i].dx, b[i].dy, b[i].sad, b[i].sad0);
        gpu_motion_search_c(a, &cur, &ref, r, best_sad.sad16);
        for (size_t i = 0; i < n; i++)
            CHECK(t, !memcmp(&a[i], &b[i], sizeof(*a)), "fast SAD: mb %zu differs", i);
        free(a);
        free(b);
        mpe_picture_free(&cur);
        mpe_picture_free(&ref);
    }
}

static void test_search_finds_shift(TestCtx *t)
{
    /* a textured picture moved by a known vector is found exactly with SAD 0
     * for every macroblock whose source lies inside the frame */
    const int w = 128, h = 96, sx = 5, sy = -3;
    MpePicture ref, cur;
    TestRng rng = { 4242 };
    CHECK(t, mpe_picture_alloc(&ref, w, h) == 0 && mpe_picture_alloc(&cur, w, h) == 0, "alloc");
    random_picture(&ref, &rng, 256);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            cur.plane[0][y * cur.stride[0] + x] =
                ref.plane[0][clampi(y + sy, 0, h - 1) * ref.stride[0] + clampi(x + sx, 0, w - 1)];
    GpuMotion mv[8 * 6];
    gpu_motion_search_c(mv, &cur, &ref, 8, mpe_sad16_c);
    int checked = 0;
    for (int mby = 0; mby < 6; mby++)
        for (int mbx = 0; mbx < 8; mbx++) {
            int x = mbx * 16 + sx, y = mby * 16 + sy;
            if (x < 0 || y < 0 || x + 16 > w || y + 16 > h)
                continue;
            const GpuMotion *m = &mv[mby * 8 + mbx];
            CHECK(t, m->dx == sx && m->dy == sy && m->sad == 0, "mb (%d,%d): (%d,%d) sad %u", mbx,
                  mby, m->dx, m->dy, m->sad);
            checked++;
        }
    CHECK(t, checked >= 30, "only %d macroblocks checked", checked);
    mpe_picture_free(&ref);
    mpe_picture_free(&cur);
}

static void test_backend_cpu_interface(TestCtx *t)
{
    const int w = 70, h = 50;
    GpuFrontend *ctx = NULL;
    MpeError err;
    MpeFrame f0, f1;
    MpePicture direct0, direct1, got;
    TestRng rng = { 5 };
    GpuConfig cfg = { .width = w, .height = h, .slots = 2, .log = NULL };

    CHECK(t, gpu_frontend_open(&ctx, "cpu", &cfg, NULL, &err) == 0, "open: %s", err.msg);
    CHECK(t, mpe_frame_alloc(&f0, MPE_FRAME_RGB24, w, h) == 0 && mpe_frame_alloc(&f1, MPE_FRAME_RGB24, w, h) == 0, "alloc");
    /* f1 is f0 moved by 3 pixels with a little noise: f0 must be complete first */
    for (int i = 0; i < w * h * 3; i++)
        f0.data[0][i] = (uint8_t)test_rand(&rng);
    for (int i = 0; i < w * h * 3; i++)
        f1.data[0][i] = (uint8_t)(f0.data[0][(i + 9) % (w * h * 3)] ^ (test_rand(&rng) & 7));
    mpe_picture_alloc(&direct0, w, h);
    mpe_picture_alloc(&direct1, w, h);
    mpe_picture_alloc(&got, w, h);
    gpu_convert_rgb_c(&direct0, f0.data[0], f0.stride[0]);
    gpu_convert_rgb_c(&direct1, f1.data[0], f1.stride[0]);
    size_t n = (size_t)got.mb_width * got.mb_height;
    GpuMotion mv_direct[64], mv_got[64];
    gpu_motion_search_c(mv_direct, &direct1, &direct0, 12, mpe_sad16_c);

    CHECK(t, gpu_frontend_submit(ctx, 0, &f0, &err) == 0, "submit 0");
    CHECK(t, gpu_frontend_submit(ctx, 1, &f1, &err) == 0, "submit 1");
    CHECK(t, gpu_frontend_search(ctx, 1, 0, 12, &err) == 0, "search");
    CHECK(t, gpu_frontend_wait(ctx, 1, &err) == 0, "wait");
    fill_sentinel(&got, 0xEE);
    memset(mv_got, 0xEE, sizeof(mv_got));
    CHECK(t, gpu_frontend_download(ctx, 1, &got, mv_got, &err) == 0, "download: %s", err.msg);
    int c = 0, x = 0, y = 0;
    CHECK(t, planes_equal(&got, &direct1, &c, &x, &y), "planes differ at plane %d (%d,%d)", c, x, y);
    CHECK(t, !memcmp(mv_got, mv_direct, n * sizeof(GpuMotion)), "vectors differ");
    /* the cpu backend's planes are read in place (the encoder's source, no
     * copy): the same as downloaded, and vectors alone come without a pic */
    const MpePicture *host = gpu_frontend_host_planes(ctx, 1);
    CHECK(t, host && planes_equal(host, &direct1, &c, &x, &y),
          "host planes %s at plane %d (%d,%d)", host ? "differ" : "missing", c, x, y);
    memset(mv_got, 0xEE, sizeof(mv_got));
    CHECK(t, gpu_frontend_download(ctx, 1, NULL, mv_got, &err) == 0, "vectors-only download: %s",
          err.msg);
    CHECK(t, !memcmp(mv_got, mv_direct, n * sizeof(GpuMotion)), "vectors-only download differs");
    CHECK(t, !gpu_frontend_host_planes(ctx, 2), "host planes of slot 2 of 2");
    /* a slot without a search has no vectors to give */
    CHECK(t, gpu_frontend_download(ctx, 0, &got, mv_got, &err) < 0, "download of unsearched slot succeeded");
    CHECK(t, gpu_frontend_search(ctx, 1, 0, 65, &err) < 0, "range 65 accepted");
    CHECK(t, gpu_frontend_submit(ctx, 2, &f0, &err) < 0, "slot 2 accepted");

    gpu_frontend_close(ctx);
    mpe_frame_free(&f0);
    mpe_frame_free(&f1);
    mpe_picture_free(&direct0);
    mpe_picture_free(&direct1);
    mpe_picture_free(&got);
}

/* ---- the cpu backend's fast kernels (every set this CPU runs) against the
 * references, checkasm style: random and adversarial inputs, odd sizes,
 * rows done one band at a time in a scrambled order ---- */

/* a permutation of 0..n-1 */
/* The kernel set of every subset of this CPU's SIMD flags (common/cpu.h):
 * n of them in k[], the C set first. */
static int kernel_sets(GpuCpuKernels k[8])
{
    const unsigned have = mpe_cpu_flags() & MPE_CPU_ALL;
    int n = 0;
    for (unsigned sub = 0; sub <= MPE_CPU_ALL; sub++)
        if ((sub & have) == sub && !(sub & MPE_CPU_FAST_C))   /* the block DSP's bit only */
            gpu_cpu_kernels_init(&k[n++], sub);
    return n;
}

static void shuffle_rows(int *order, int n, TestRng *rng)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(test_rand(rng) % (unsigned)(i + 1)), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
}

/* RGB content: 0 random bytes, 1 only 0 and 255 (the matrix's and the
 * clamp's extremes), 2 one random colour per 8x8 patch (flat areas),
 * 3 saturated primaries in stripes */
static void fill_rgb(uint8_t *rgb, int w, int h, ptrdiff_t stride, int mode, TestRng *rng)
{
    static const uint8_t prim[6][3] = { { 255, 0, 0 }, { 0, 255, 0 }, { 0, 0, 255 },
                                        { 255, 255, 0 }, { 0, 255, 255 }, { 255, 0, 255 } };
    uint8_t patch[3] = { 0, 0, 0 };
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                uint8_t *p = rgb + y * stride + 3 * x + c;
                if (mode == 0)
                    *p = (uint8_t)test_rand(rng);
                else if (mode == 1)
                    *p = test_rand(rng) & 1 ? 255 : 0;
                else if (mode == 2) {
                    if (c == 0) {
                        unsigned v = (unsigned)(x / 8 * 7919 + y / 8 * 104729) * 2654435761u;
                        patch[0] = (uint8_t)(v >> 24);
                        patch[1] = (uint8_t)(v >> 16);
                        patch[2] = (uint8_t)(v >> 8);
                    }
                    *p = patch[c];
                } else
                    *p = prim[(x / 3 + y) % 6][c];
            }
}

static void test_kernels_convert(TestCtx *t)
{
    /* widths around the vector steps (16, 32) and the largest plane */
    static const int sizes[][2] = { { 16, 16 }, { 17, 33 }, { 330, 250 }, { 47, 18 }, { 1, 1 },
                                    { 5, 3 },   { 31, 17 }, { 4095, 18 }, { 2048, 34 }, { 97, 49 } };
    TestRng rng = { 0xC0FFEE };
    GpuCpuKernels ks[8];
    for (int ki = 0, nk = kernel_sets(ks); ki < nk; ki++) {
        const GpuCpuKernels *k = &ks[ki];
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            for (int mode = 0; mode < 4; mode++) {
                const int w = sizes[s][0], h = sizes[s][1];
                const ptrdiff_t stride = 3 * w + (mode & 1) * 7;   /* padded rows too */
                uint8_t *rgb = malloc((size_t)stride * h);
                MpePicture a, b;
                int order[256];
                CHECK(t, rgb && mpe_picture_alloc(&a, w, h) == 0 && mpe_picture_alloc(&b, w, h) == 0,
                      "alloc");
                fill_rgb(rgb, w, h, stride, mode, &rng);
                fill_sentinel(&a, 0xAA);
                gpu_convert_rgb_c(&b, rgb, stride);
                shuffle_rows(order, a.mb_height, &rng);
                for (int i = 0; i < a.mb_height; i++)
                    k->convert_rgb_rows(&a, rgb, stride, order[i], order[i] + 1);
                int c = 0, x = 0, y = 0;
                CHECK(t, planes_equal(&a, &b, &c, &x, &y), "%s %dx%d content %d: plane %d differs at (%d,%d)",
                      k->name, w, h, mode, c, x, y);
                /* all rows at once gives the same */
                fill_sentinel(&a, 0x55);
                k->convert_rgb_rows(&a, rgb, stride, 0, a.mb_height);
                CHECK(t, planes_equal(&a, &b, &c, &x, &y), "%s %dx%d content %d, one call: plane %d differs at (%d,%d)",
                      k->name, w, h, mode, c, x, y);
                mpe_picture_free(&a);
                mpe_picture_free(&b);
                free(rgb);
            }
        }
    }
}

/* Colours whose conversion lands exactly halfway between two outputs, in
 * flat 8x8 patches (each patch has chroma samples whose whole 4x4 window is
 * that colour): the rounding must be the reference's, which random
 * pictures hardly ever test (one sample in 2^22 for chroma). */
static void test_kernels_convert_halves(TestCtx *t)
{
    enum { W = 256, H = 64, N = (W / 8) * (H / 8) };
    uint8_t colours[N][3];
    int n = 0, kinds[3] = { 0, 0, 0 };
    /* 1/3 each: Y, Cb, Cr exactly at .5 (sum = 2^15 mod 2^16; the chroma
     * filter's 64 = 2^6 keeps that property at 2^21 mod 2^22) */
    for (int kind = 0; kind < 3; kind++)
        for (unsigned v = 0; v < (1u << 24) && n < (kind + 1) * N / 3; v++) {
            int r = v >> 16, g = (v >> 8) & 255, b = v & 255;
            long sum = kind == 0 ? 16829L * r + 33039L * g + 6416L * b
                       : kind == 1 ? -9714L * r - 19070L * g + 28784L * b
                                   : 28784L * r - 24103L * g - 4681L * b;
            if ((sum & 65535) != 32768)
                continue;
            colours[n][0] = (uint8_t)r;
            colours[n][1] = (uint8_t)g;
            colours[n][2] = (uint8_t)b;
            kinds[kind]++;
            n++;
        }
    CHECK(t, kinds[0] > 0 && kinds[1] > 0 && kinds[2] > 0, "found %d/%d/%d halfway colours", kinds[0],
          kinds[1], kinds[2]);
    uint8_t *rgb = malloc((size_t)W * H * 3);
    CHECK(t, rgb != NULL, "alloc");
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            memcpy(rgb + 3 * (y * W + x), colours[((y / 8) * (W / 8) + x / 8) % n], 3);
    MpePicture a, b;
    CHECK(t, mpe_picture_alloc(&a, W, H) == 0 && mpe_picture_alloc(&b, W, H) == 0, "alloc");
    gpu_convert_rgb_c(&b, rgb, 3 * W);
    GpuCpuKernels ks[8];
    for (int ki = 0, nk = kernel_sets(ks); ki < nk; ki++) {
        int c = 0, x = 0, y = 0;
        fill_sentinel(&a, 0x33);
        ks[ki].convert_rgb_rows(&a, rgb, 3 * W, 0, a.mb_height);
        CHECK(t, planes_equal(&a, &b, &c, &x, &y), "%s: plane %d differs at (%d,%d)",
              ks[ki].name, c, x, y);
    }
    mpe_picture_free(&a);
    mpe_picture_free(&b);
    free(rgb);
}

/* A band writes its own rows and nothing else: what lets the pool run
 * bands at once. */
static void test_kernels_convert_rows_only(TestCtx *t)
{
    const int w = 75, h = 70;
    TestRng rng = { 8086 };
    uint8_t *rgb = malloc((size_t)w * h * 3);
    CHECK(t, rgb != NULL, "alloc");
    fill_rgb(rgb, w, h, 3 * w, 0, &rng);
    GpuCpuKernels ks[8];
    for (int ki = 0, nk = kernel_sets(ks); ki < nk; ki++) {
        const GpuCpuKernels *k = &ks[ki];
        MpePicture a, ref;
        CHECK(t, mpe_picture_alloc(&a, w, h) == 0 && mpe_picture_alloc(&ref, w, h) == 0, "alloc");
        gpu_convert_rgb_c(&ref, rgb, 3 * w);
        for (int row = 0; row < a.mb_height; row++) {
            fill_sentinel(&a, 0x77);
            k->convert_rgb_rows(&a, rgb, 3 * w, row, row + 1);
            for (int c = 0; c < 3; c++) {
                const int rows = c ? 8 : 16;
                for (int y = 0; y < a.plane_h[c]; y++) {
                    const int mine = y / rows == row;
                    for (int x = 0; x < a.stride[c]; x++) {
                        const uint8_t got = a.plane[c][y * a.stride[c] + x];
                        if (mine && x < a.plane_w[c]) {
                            if (got != ref.plane[c][y * ref.stride[c] + x]) {
                                CHECK(t, 0, "%s row %d: plane %d (%d,%d) is %d, want %d", k->name, row,
                                      c, x, y, got, ref.plane[c][y * ref.stride[c] + x]);
                                goto next;
                            }
                        } else if (!mine && got != 0x77) {
                            CHECK(t, 0, "%s row %d wrote plane %d at (%d,%d), outside its rows", k->name,
                                  row, c, x, y);
                            goto next;
                        }
                    }
                }
            }
        }
    next:
        mpe_picture_free(&a);
        mpe_picture_free(&ref);
    }
    free(rgb);
}

static void test_kernels_block_sums(TestCtx *t)
{
    static const int sizes[][2] = { { 16, 16 }, { 33, 17 }, { 48, 40 }, { 64, 64 }, { 70, 50 },
                                    { 4095, 20 }, { 200, 33 } };
    TestRng rng = { 0xB10C };
    GpuCpuKernels ks[8];
    for (int ki = 0, nk = kernel_sets(ks); ki < nk; ki++) {
        const GpuCpuKernels *k = &ks[ki];
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            for (int mode = 0; mode < 3; mode++) {
                MpePicture p;
                GpuBlockSums bs;
                int order[256], bad = 0;
                CHECK(t, mpe_picture_alloc(&p, sizes[s][0], sizes[s][1]) == 0 &&
                             gpu_block_sums_alloc(&bs, &p) == 0, "alloc");
                /* random; all 255 (the largest sums); random 0 / 255 */
                for (int y = 0; y < p.plane_h[0]; y++)
                    for (int x = 0; x < p.plane_w[0]; x++)
                        p.plane[0][y * p.stride[0] + x] =
                            (uint8_t)(mode == 0 ? test_rand(&rng) : mode == 1 ? 255 : test_rand(&rng) & 1 ? 255 : 0);
                shuffle_rows(order, p.mb_height, &rng);
                for (int i = 0; i < p.mb_height; i++)
                    gpu_block_sums_rows(&k->sad, &bs, &p, order[i], order[i] + 1);
                /* and the current picture's rows of them (gpu_block_sums_grid) */
                /* its table holds gpu_grid_entries (the kernels write nothing past
                 * them: guard entries after) */
                const size_t entries = gpu_grid_entries(&p), guard = 64;
                uint16_t *grid = malloc((entries + guard) * sizeof(*grid));
                CHECK(t, grid != NULL, "alloc");
                for (size_t i = 0; i < entries + guard; i++)
                    grid[i] = 0xA5A5;
                const GpuBlockSums gs = gpu_block_sums_grid(grid, &p);
                shuffle_rows(order, p.mb_height, &rng);
                for (int i = 0; i < p.mb_height; i++)
                    k->grid_rows(grid, &p, order[i], order[i] + 1);
                for (size_t i = entries; i < entries + guard && !bad; i++)
                    if (grid[i] != 0xA5A5) {
                        CHECK(t, 0, "%s %dx%d content %d: grid_rows wrote entry %zu of a %zu-entry table",
                              k->name, sizes[s][0], sizes[s][1], mode, i, entries);
                        bad = 1;
                    }
                /* at 1/64 of the luma (the quarters' sums a row of the plane
                 * apart touched every page of an 8-times larger table) */
                CHECK(t, entries <= (size_t)(p.plane_h[0] / 8) * (size_t)(p.plane_w[0] / 8 + 7),
                      "%dx%d: grid table of %zu entries", sizes[s][0], sizes[s][1], entries);
                for (int y = 0; y + 8 <= p.plane_h[0] && !bad; y++)
                    for (int x = 0; x + 8 <= p.plane_w[0] && !bad; x++) {
                        unsigned want = 0;
                        for (int j = 0; j < 8; j++)
                            for (int i = 0; i < 8; i++)
                                want += p.plane[0][(y + j) * p.stride[0] + x + i];
                        if (bs.sum[y * bs.stride + x] != want) {
                            CHECK(t, 0, "%s %dx%d content %d: sum at (%d,%d) is %u, want %u", k->name,
                                  sizes[s][0], sizes[s][1], mode, x, y, bs.sum[y * bs.stride + x], want);
                            bad = 1;
                        } else if (y % 8 == 0 && x % 8 == 0 && gs.sum[y * gs.stride + (x >> gs.x_shift)] != want) {
                            CHECK(t, 0, "%s %dx%d content %d: grid sum at (%d,%d) is %u, want %u", k->name,
                                  sizes[s][0], sizes[s][1], mode, x, y, gs.sum[y * gs.stride + (x >> gs.x_shift)], want);
                            bad = 1;
                        }
                    }
                free(grid);
                gpu_block_sums_free(&bs);
                mpe_picture_free(&p);
            }
        }
    }
}

/* Each macroblock's intra cost (the SAD against its rounded mean, the mean
 * from the grid sums) against mpe_bdecide_intra_costs, every kernel set,
 * bands in a shuffled order: random, all 255 (the largest sums), random
 * 0 / 255 (means rounding at .5), and flat 8x8 patches with one pixel off
 * (means just below and above a rounding step); odd macroblock columns
 * (the AVX2 kernel's single one at the end of a row). */
static void test_kernels_intra_costs(TestCtx *t)
{
    static const int sizes[][2] = { { 16, 16 }, { 33, 17 }, { 48, 40 }, { 208, 144 }, { 1000, 66 }, { 4095, 18 } };
    TestRng rng = { 0x1C05 };
    GpuCpuKernels ks[8];
    for (int ki = 0, nk = kernel_sets(ks); ki < nk; ki++) {
        const GpuCpuKernels *k = &ks[ki];
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            for (int mode = 0; mode < 4; mode++) {
                MpePicture p;
                CHECK(t, mpe_picture_alloc(&p, sizes[s][0], sizes[s][1]) == 0, "alloc");
                for (int y = 0; y < p.plane_h[0]; y++)
                    for (int x = 0; x < p.plane_w[0]; x++) {
                        const unsigned r = test_rand(&rng);
                        const unsigned patch = (unsigned)(x / 8 * 7919 + y / 8 * 104729) % 256;
                        p.plane[0][y * p.stride[0] + x] =
                            (uint8_t)(mode == 0 ? r : mode == 1 ? 255 : mode == 2 ? (r & 1 ? 255 : 0)
                                                                 : (r % 97 ? patch : patch ^ 1));
                    }
                const size_t n = (size_t)p.mb_width * p.mb_height;
                uint16_t *grid = malloc(gpu_grid_entries(&p) * sizeof(*grid));
                uint32_t *got = malloc(n * sizeof(*got)), *want = malloc(n * sizeof(*want));
                CHECK(t, grid && got && want, "alloc");
                int order[256];
                shuffle_rows(order, p.mb_height, &rng);
                for (int i = 0; i < p.mb_height; i++) {
                    k->grid_rows(grid, &p, order[i], order[i] + 1);
                    k->intra_cost_rows(got, &p, grid, order[i], order[i] + 1);
                }
                mpe_bdecide_intra_costs(want, &p, mpe_sad16_c);
                size_t bad = SIZE_MAX;
                for (size_t i = 0; i < n && bad == SIZE_MAX; i++)
                    if (got[i] != want[i])
                        bad = i;
                CHECK(t, bad == SIZE_MAX, "%s %dx%d content %d: macroblock %zu's intra cost %u, want %u", k->name,
                      sizes[s][0], sizes[s][1], mode, bad, bad == SIZE_MAX ? 0 : got[bad],
                      bad == SIZE_MAX ? 0 : want[bad]);
                free(grid);
                free(got);
                free(want);
                mpe_picture_free(&p);
            }
    }
}

/* The pyramid (stage 1 of the hierarchical search): every sample, and
 * nothing written past either plane (the 32 bytes of slack stay as set). */
static void test_kernels_pyramid(TestCtx *t)
{
    static const int sizes[][2] = { { 16, 16 }, { 33, 17 }, { 70, 50 }, { 4095, 18 }, { 200, 120 },
                                    { 1000, 40 }, { 48, 33 } };
    TestRng rng = { 0x9A1D };
    GpuCpuKernels ks[8];
    for (int ki = 0, nk = kernel_sets(ks); ki < nk; ki++) {
        const GpuCpuKernels *k = &ks[ki];
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            for (int mode = 0; mode < 3; mode++) {
                MpePicture p;
                GpuPyramid got, want;
                CHECK(t, mpe_picture_alloc(&p, sizes[s][0], sizes[s][1]) == 0 &&
                             gpu_pyramid_alloc(&got, &p) == 0 && gpu_pyramid_alloc(&want, &p) == 0,
                      "alloc");
                /* random; all 255 (the largest sums); random 0 / 255 (rounding at both ends) */
                for (int y = 0; y < p.plane_h[0]; y++)
                    for (int x = 0; x < p.plane_w[0]; x++)
                        p.plane[0][y * p.stride[0] + x] =
                            (uint8_t)(mode == 0 ? test_rand(&rng) : mode == 1 ? 255 : test_rand(&rng) & 1 ? 255 : 0);
                const size_t nh = (size_t)got.hw * got.hh, nq = (size_t)got.qw * got.qh;
                memset(got.half, 0xAA, nh + 32);
                memset(got.quarter, 0xAA, nq + 32);
                gpu_pyramid_build_c(&want, &p);
                /* band by band, in any order (the backend's pool) */
                int order[256];
                shuffle_rows(order, p.mb_height, &rng);
                for (int i = 0; i < p.mb_height; i++)
                    k->pyramid_rows(&got, &p, order[i], order[i] + 1);
                size_t bad = SIZE_MAX;
                for (size_t i = 0; i < nh + 32 && bad == SIZE_MAX; i++)
                    if (got.half[i] != (i < nh ? want.half[i] : 0xAA))
                        bad = i;
                CHECK(t, bad == SIZE_MAX, "%s %dx%d content %d: 1/2 plane byte %zu of %zu", k->name,
                      sizes[s][0], sizes[s][1], mode, bad, nh);
                bad = SIZE_MAX;
                for (size_t i = 0; i < nq + 32 && bad == SIZE_MAX; i++)
                    if (got.quarter[i] != (i < nq ? want.quarter[i] : 0xAA))
                        bad = i;
                CHECK(t, bad == SIZE_MAX, "%s %dx%d content %d: 1/4 plane byte %zu of %zu", k->name,
                      sizes[s][0], sizes[s][1], mode, bad, nq);
                gpu_pyramid_free(&got);
                gpu_pyramid_free(&want);
                mpe_picture_free(&p);
            }
    }
}

/* cur's sums the way the cpu backend keeps them: gpu_block_sums_grid (a
 * kernel reading a row that is not a multiple of 8 gets another row's) */
static GpuBlockSums grid_of(const GpuCpuKernels *k, const MpePicture *p, uint16_t **buf)
{
    if ((*buf = malloc(gpu_grid_entries(p) * sizeof(**buf))))
        k->grid_rows(*buf, p, 0, p->mb_height);
    return gpu_block_sums_grid(*buf, p);
}

/* The vectors must not depend on the hint (it only orders the work) nor
 * on which rows are searched when. */
static void check_kernel_search(TestCtx *t, const GpuCpuKernels *k, const MpePicture *cur,
                                const MpePicture *ref, int range, const char *what, TestRng *rng)
{
    const int n = cur->mb_width * cur->mb_height;
    GpuMotion *want = malloc((size_t)n * sizeof(*want)), *got = malloc((size_t)n * sizeof(*got));
    GpuMotion *hint = malloc((size_t)n * sizeof(*hint));
    GpuBlockSums cs, rs;
    int order[256];

    CHECK(t, want && got && hint && gpu_block_sums_alloc(&cs, cur) == 0 && gpu_block_sums_alloc(&rs, ref) == 0,
          "alloc");
    gpu_motion_search_c(want, cur, ref, range, mpe_sad16_c);
    gpu_block_sums_rows(&k->sad, &cs, cur, 0, cur->mb_height);
    gpu_block_sums_rows(&k->sad, &rs, ref, 0, ref->mb_height);
    uint16_t *grid_buf;
    const GpuBlockSums grid = grid_of(k, cur, &grid_buf);
    CHECK(t, grid_buf != NULL, "alloc");
    for (int pass = 0; pass < 3; pass++) {
        /* no hint; the answer itself; garbage, much of it outside the window */
        for (int i = 0; i < n; i++) {
            hint[i] = want[i];
            if (pass == 2) {
                hint[i].dx = (int16_t)((int)(test_rand(rng) % 201) - 100);
                hint[i].dy = (int16_t)((int)(test_rand(rng) % 201) - 100);
            }
        }
        memset(got, 0xA5, (size_t)n * sizeof(*got));
        shuffle_rows(order, cur->mb_height, rng);
        for (int i = 0; i < cur->mb_height; i++)
            k->motion_search_rows(k, got, cur, pass == 2 ? &grid : &cs, ref, &rs, range,
                                  pass ? hint : NULL, order[i], order[i] + 1);
        for (int i = 0; i < n; i++)
            if (memcmp(&got[i], &want[i], sizeof(*got))) {
                CHECK(t, 0, "%s %s %dx%d R=%d hint %d mb %d: got (%d,%d) sad %u sad0 %u, want (%d,%d) sad %u sad0 %u",
                      k->name, what, cur->width, cur->height, range, pass, i, got[i].dx, got[i].dy,
                      got[i].sad, got[i].sad0, want[i].dx, want[i].dy, want[i].sad, want[i].sad0);
                break;
            }
    }
    gpu_block_sums_free(&cs);
    gpu_block_sums_free(&rs);
    free(grid_buf);
    free(want);
    free(got);
    free(hint);
}

static void fill_luma(MpePicture *p, int mode, TestRng *rng)
{
    /* 0 texture; 1 flat 128 (every SAD 0); 2 all 255; 3 all 0; 4 textured
     * in 4x4 patches of 2 levels (many equal sums, near ties) */
    for (int y = 0; y < p->plane_h[0]; y++)
        for (int x = 0; x < p->plane_w[0]; x++) {
            unsigned v = mode == 0 ? test_rand(rng) & 255 : mode == 1 ? 128 : mode == 2 ? 255 : mode == 3 ? 0
                         : ((unsigned)(x / 4 * 31 + y / 4 * 17) * 2654435761u >> 31) * 60 + 100;
            p->plane[0][y * p->stride[0] + x] = (uint8_t)v;
        }
}

static void test_kernels_search(TestCtx *t)
{
    static const int cases[][4] = { /* w, h, range, levels (0: checkerboard) */
        { 64, 48, 7, 4 },   { 80, 64, 16, 256 }, { 33, 17, 5, 2 },   { 48, 48, 0, 256 },
        { 96, 80, 20, 3 },  { 64, 64, 16, 0 },   { 16, 16, 16, 2 },  { 200, 40, 1, 256 },
        { 176, 160, 64, 2 }, { 161, 150, 33, 5 }, { 70, 50, 12, 0 },
    };
    TestRng rng = { 4711 };
    GpuCpuKernels ks[8];
    const int nk = kernel_sets(ks);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        MpePicture cur, ref;
        const int w = cases[c][0], h = cases[c][1];
        CHECK(t, mpe_picture_alloc(&cur, w, h) == 0 && mpe_picture_alloc(&ref, w, h) == 0, "alloc");
        random_picture(&cur, &rng, cases[c][3]);
        random_picture(&ref, &rng, cases[c][3] ? cases[c][3] : -1);
        for (int ki = 0; ki < nk; ki++)
            check_kernel_search(t, &ks[ki], &cur, &ref, cases[c][2], "random", &rng);
        mpe_picture_free(&cur);
        mpe_picture_free(&ref);
    }
}

/* Pictures where the pruning bounds are tight or equal to the best SAD:
 * flat (all SADs 0), opposite extremes (every SAD 65280 = every bound),
 * patches of two levels, a moved texture with fresh noise, and the same
 * picture as its own reference. */
static void test_kernels_search_adversarial(TestCtx *t)
{
    static const int modes[][2] = { { 1, 1 }, { 2, 3 }, { 3, 2 }, { 4, 4 }, { 2, 0 }, { 4, 1 } };
    static const int ranges[] = { 0, 1, 7, 16, 64 };
    TestRng rng = { 1999 };
    const int w = 163, h = 149;
    MpePicture cur, ref;
    GpuCpuKernels ks[8];
    const int nk = kernel_sets(ks);
    CHECK(t, mpe_picture_alloc(&cur, w, h) == 0 && mpe_picture_alloc(&ref, w, h) == 0, "alloc");
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        fill_luma(&cur, modes[m][0], &rng);
        fill_luma(&ref, modes[m][1], &rng);
        for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++)
            for (int ki = 0; ki < nk; ki++) {
                char what[32];
                snprintf(what, sizeof(what), "modes %d/%d", modes[m][0], modes[m][1]);
                check_kernel_search(t, &ks[ki], &cur, &ref, ranges[r], what, &rng);
            }
    }
    /* sparse dots on a flat ground, moved by one pixel: SADs of 0, 1, 2 ...,
     * where the bounds are nearly exact and a dot leaving the block edge
     * makes sad0 = 1 */
    for (int y = 0; y < ref.plane_h[0]; y++)
        for (int x = 0; x < ref.plane_w[0]; x++)
            ref.plane[0][y * ref.stride[0] + x] = (uint8_t)(test_rand(&rng) % 97 ? 100 : 101);
    for (int y = 0; y < cur.plane_h[0]; y++)
        for (int x = 0; x < cur.plane_w[0]; x++)
            cur.plane[0][y * cur.stride[0] + x] = ref.plane[0][y * ref.stride[0] + clampi(x + 1, 0, cur.plane_w[0] - 1)];
    for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++)
        for (int ki = 0; ki < nk; ki++)
            check_kernel_search(t, &ks[ki], &cur, &ref, ranges[r], "dots", &rng);
    /* a texture moved by (3, -2) plus small noise: near-equal SADs around the true vector */
    fill_luma(&ref, 0, &rng);
    for (int y = 0; y < cur.plane_h[0]; y++)
        for (int x = 0; x < cur.plane_w[0]; x++) {
            int v = ref.plane[0][clampi(y - 2, 0, cur.plane_h[0] - 1) * ref.stride[0] +
                                 clampi(x + 3, 0, cur.plane_w[0] - 1)] + (int)(test_rand(&rng) % 5) - 2;
            cur.plane[0][y * cur.stride[0] + x] = (uint8_t)clampi(v, 0, 255);
        }
    for (size_t r = 0; r < sizeof(ranges) / sizeof(ranges[0]); r++)
        for (int ki = 0; ki < nk; ki++) {
            check_kernel_search(t, &ks[ki], &cur, &ref, ranges[r], "moved", &rng);
            check_kernel_search(t, &ks[ki], &cur, &cur, ranges[r], "itself", &rng);
        }
    mpe_picture_free(&cur);
    mpe_picture_free(&ref);
}

/* The backend on 1..3 threads, over a sequence (so that later searches get
 * the previous vectors as hints), RGB and YUV input: the references'
 * planes and vectors every time. */
static void test_backend_cpu_threads(TestCtx *t)
{
    const int w = 150, h = 90, frames = 4, range = 10;
    TestRng rng = { 271828 };
    MpeFrame src[4], yuv[4];
    MpePicture refpic[4], got;
    GpuMotion mv_ref[60], mv_got[60];
    MpeError err;

    CHECK(t, mpe_picture_alloc(&got, w, h) == 0, "alloc");
    for (int i = 0; i < frames; i++) {
        CHECK(t, mpe_frame_alloc(&src[i], MPE_FRAME_RGB24, w, h) == 0 &&
                     mpe_frame_alloc(&yuv[i], MPE_FRAME_YUV420, w, h) == 0 &&
                     mpe_picture_alloc(&refpic[i], w, h) == 0, "alloc");
        /* a smooth pattern drifting by (2, 1) per frame, with noise */
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int c = 0; c < 3; c++) {
                    int sx = x + 2 * i, sy = y + i;
                    int v = ((sx * 7 + sy * 3 + c * 50) ^ (sx * sy / 5)) & 255;
                    src[i].data[0][y * src[i].stride[0] + 3 * x + c] = (uint8_t)clampi(v + (int)(test_rand(&rng) % 7) - 3, 0, 255);
                }
        for (int p = 0; p < 3; p++)
            for (int y = 0; y < (p ? (h + 1) / 2 : h); y++)
                for (int x = 0; x < (p ? (w + 1) / 2 : w); x++)
                    yuv[i].data[p][y * yuv[i].stride[p] + x] = src[i].data[0][(p ? 2 * y : y) * src[i].stride[0] + 3 * (p ? 2 * x : x) + p];
    }
    for (int fmt = 0; fmt < 2; fmt++) {
        MpeFrame *in = fmt ? yuv : src;
        for (int i = 0; i < frames; i++) {
            if (fmt)
                mpe_picture_from_yuv(&refpic[i], &in[i]);
            else
                gpu_convert_rgb_c(&refpic[i], in[i].data[0], in[i].stride[0]);
        }
        for (int threads = 1; threads <= 3; threads++) {
            GpuFrontend *ctx = NULL;
            GpuConfig cfg = { .width = w, .height = h, .slots = 2, .threads = threads,
                              .cpu_flags = mpe_cpu_flags() };
            CHECK(t, gpu_frontend_open(&ctx, "cpu", &cfg, NULL, &err) == 0, "open: %s", err.msg);
            for (int i = 0; i < frames && ctx; i++) {
                int c = 0, x = 0, y = 0;
                CHECK(t, gpu_frontend_submit(ctx, i % 2, &in[i], &err) == 0, "submit: %s", err.msg);
                if (i)
                    CHECK(t, gpu_frontend_search(ctx, i % 2, (i + 1) % 2, range, &err) == 0,
                          "search: %s", err.msg);
                CHECK(t, gpu_frontend_wait(ctx, i % 2, &err) == 0, "wait");
                memset(mv_got, 0xEE, sizeof(mv_got));
                CHECK(t, gpu_frontend_download(ctx, i % 2, &got, i ? mv_got : NULL, &err) == 0,
                      "download: %s", err.msg);
                CHECK(t, planes_equal(&got, &refpic[i], &c, &x, &y),
                      "%s frame %d, %d threads: plane %d differs at (%d,%d)", fmt ? "yuv" : "rgb", i,
                      threads, c, x, y);
                if (i) {
                    gpu_motion_search_c(mv_ref, &refpic[i], &refpic[i - 1], range, mpe_sad16_c);
                    CHECK(t, !memcmp(mv_got, mv_ref, (size_t)got.mb_width * got.mb_height * sizeof(GpuMotion)),
                          "%s frame %d, %d threads: vectors differ", fmt ? "yuv" : "rgb", i, threads);
                }
            }
            gpu_frontend_close(ctx);
        }
    }
    for (int i = 0; i < frames; i++) {
        mpe_frame_free(&src[i]);
        mpe_frame_free(&yuv[i]);
        mpe_picture_free(&refpic[i]);
    }
    mpe_picture_free(&got);
}

/* One search through the front end against gpu_motion_search_c's vectors
 * of the same pictures: 1 when they match. */
static int search_matches(TestCtx *t, GpuFrontend *ctx, int cur_slot, int ref_slot, const MpePicture *cur,
                          const MpePicture *ref, int range, const char *what)
{
    GpuMotion want[24], got[24];   /* 6 x 4 macroblocks at most */
    const size_t n = (size_t)cur->mb_width * cur->mb_height;
    MpeError err = { "" };

    memset(got, 0xEE, sizeof(got));
    if (n > 24 || gpu_frontend_search(ctx, cur_slot, ref_slot, range, &err) < 0 ||
        gpu_frontend_wait(ctx, cur_slot, &err) < 0 || gpu_frontend_download(ctx, cur_slot, NULL, got, &err) < 0) {
        CHECK(t, 0, "%s: search: %s", what, err.msg);
        return 0;
    }
    gpu_motion_search_c(want, cur, ref, range, mpe_sad16_c);
    if (memcmp(got, want, n * sizeof(GpuMotion))) {
        CHECK(t, 0, "%s: vectors differ", what);
        return 0;
    }
    return 1;
}

/* The cpu backend keeps a picture's sums at every position in a table
 * taken when its slot is first a reference and given back at the slot's
 * next submit, or taken from the slot searched against longest ago when
 * all it holds (one at first) are in use; a slot searched against after
 * that has its sums made again.  In the encoder's order (anchors 3 apart,
 * each picture between searched against the older one, then the newer:
 * here interleaved, which takes the older anchor's table and then needs
 * it again) every search must find gpu_motion_search_c's vectors, which a
 * table kept past its slot's submit or left to a slot it was taken from
 * (another picture's sums as bounds) breaks.  Frame n is in slot n % 4, so
 * the anchors' slots 0 3 2 1 0 3 are each a reference again with another
 * picture; last, a slot searched against, given another frame and
 * searched against again at once. */
static void test_backend_cpu_shared_sums(TestCtx *t)
{
    enum { FRAMES = 16, SLOTS = 4 };
    const int w = 96, h = 64, range = 10;
    TestRng rng = { 161803 };
    MpeFrame yuv[FRAMES];
    MpePicture pic[FRAMES];
    MpeError err = { "" };
    GpuFrontend *ctx = NULL;
    GpuConfig cfg = { .width = w, .height = h, .slots = SLOTS, .threads = 2, .cpu_flags = mpe_cpu_flags() };
    char what[64];
    int searches = 0, ok = 1;

    for (int i = 0; i < FRAMES; i++) {
        CHECK(t, mpe_frame_alloc(&yuv[i], MPE_FRAME_YUV420, w, h) == 0 && mpe_picture_alloc(&pic[i], w, h) == 0,
              "alloc");
        /* a pattern drifting by (3, 2) a frame, with noise: every picture differs */
        for (int p = 0; p < 3; p++)
            for (int y = 0; y < (p ? h / 2 : h); y++)
                for (int x = 0; x < (p ? w / 2 : w); x++) {
                    const int sx = x + 3 * i, sy = y + 2 * i;
                    const int v = ((sx * 5 + sy * 9 + p * 60) ^ (sx * sy / 7)) & 255;
                    yuv[i].data[p][y * yuv[i].stride[p] + x] = (uint8_t)clampi(v + (int)(test_rand(&rng) % 9) - 4, 0, 255);
                }
        mpe_picture_from_yuv(&pic[i], &yuv[i]);
    }
    CHECK(t, gpu_frontend_open(&ctx, "cpu", &cfg, NULL, &err) == 0, "open: %s", err.msg);
    for (int a = 0; ctx && ok && a + 3 < FRAMES; a += 3) {
        /* frames a+1 .. a+3 in; a+3 against a, then a+1 and a+2 against both */
        const int next = a + 3;
        int pairs[8][2], np = 0;
        pairs[np][0] = next, pairs[np++][1] = a;
        for (int b = a + 1; b < next; b++) {
            pairs[np][0] = b, pairs[np++][1] = a;
            pairs[np][0] = b, pairs[np++][1] = next;
        }
        for (int n = a + (a == 0 ? 0 : 1); n <= next && ok; n++)
            if (gpu_frontend_submit(ctx, n % SLOTS, &yuv[n], &err) < 0) {
                CHECK(t, 0, "submit %d: %s", n, err.msg);
                ok = 0;
            }
        for (int k = 0; k < np && ok; k++) {
            const int cur = pairs[k][0], ref = pairs[k][1];
            snprintf(what, sizeof(what), "frame %d (slot %d) against %d (slot %d)", cur, cur % SLOTS, ref,
                     ref % SLOTS);
            ok = search_matches(t, ctx, cur % SLOTS, ref % SLOTS, &pic[cur], &pic[ref], range, what);
            searches++;
        }
    }
    CHECK(t, !ok || searches == 5 * 5, "%d searches made", searches);
    /* slot 0 against frame 1, then against frame 2 in slot 0 */
    if (ctx && ok && (gpu_frontend_submit(ctx, 0, &yuv[0], &err) < 0 || gpu_frontend_submit(ctx, 1, &yuv[1], &err) < 0))
        CHECK(t, 0, "submit: %s", err.msg);
    else if (ctx && ok && search_matches(t, ctx, 1, 0, &pic[1], &pic[0], range, "frame 1 against 0 (slot 0)")) {
        CHECK(t, gpu_frontend_submit(ctx, 0, &yuv[2], &err) == 0, "submit: %s", err.msg);
        search_matches(t, ctx, 1, 0, &pic[1], &pic[2], range, "frame 1 against 2, slot 0 again");
    }
    gpu_frontend_close(ctx);
    for (int i = 0; i < FRAMES; i++) {
        mpe_frame_free(&yuv[i]);
        mpe_picture_free(&pic[i]);
    }
}

/* The framework's checks hold for every backend, the cpu one included:
 * a search or download needs a submitted frame, and the frame must have
 * the configured size. */
static void test_frontend_slot_checks(TestCtx *t)
{
    GpuFrontend *fe = NULL;
    MpeError err = { "" };
    MpeFrame f, small;
    MpePicture pic;
    GpuConfig cfg = { .width = 48, .height = 32, .slots = 3, .device = -1 };

    CHECK(t, gpu_frontend_open(&fe, "cpu", &cfg, NULL, &err) == 0, "open: %s", err.msg);
    CHECK(t, mpe_frame_alloc(&f, MPE_FRAME_RGB24, 48, 32) == 0 &&
                 mpe_frame_alloc(&small, MPE_FRAME_RGB24, 32, 32) == 0 &&
                 mpe_picture_alloc(&pic, 48, 32) == 0, "alloc");
    memset(f.data[0], 100, (size_t)f.stride[0] * 32);
    CHECK(t, gpu_frontend_submit(fe, 0, &f, &err) == 0, "submit: %s", err.msg);
    CHECK(t, gpu_frontend_search(fe, 0, 2, 4, &err) < 0 && strstr(err.msg, "no frame"),
          "search against an empty slot accepted: '%s'", err.msg);
    CHECK(t, gpu_frontend_download(fe, 2, &pic, NULL, &err) < 0 && strstr(err.msg, "slot 2"),
          "download of an empty slot accepted: '%s'", err.msg);
    CHECK(t, gpu_frontend_submit(fe, 1, &small, &err) < 0 && strstr(err.msg, "32x32"),
          "a 32x32 frame accepted: '%s'", err.msg);
    CHECK(t, gpu_frontend_timings(fe, 0, &(GpuTimings){ 0 }) == -ENOSYS, "cpu has timers?");
    CHECK(t, gpu_frontend_search(fe, 0, 0, 4, &err) == 0, "search itself: %s", err.msg);
    CHECK(t, gpu_frontend_download(fe, 0, &pic, NULL, &err) == 0, "download: %s", err.msg);
    gpu_frontend_close(fe);
    mpe_frame_free(&f);
    mpe_frame_free(&small);
    mpe_picture_free(&pic);
}

/* A YUV frame's copy into the slot, in bands of rows on a pool (the front
 * end's submit with GpuConfig.pool), is mpe_picture_from_yuv's, padding
 * included, and that is the source's samples padded by repetition
 * (mpe_picture_from_yuv's streaming stores against the plain rule): odd sizes (right and bottom padding in every plane), frames
 * taller than the bands and frames with fewer rows than bands; the bands
 * alone (mpe_picture_from_yuv_band, in reverse order) likewise. */
static void test_submit_banded_copy(TestCtx *t)
{
    static const int sizes[][2] = { { 37, 301 }, { 176, 144 }, { 1000, 66 }, { 18, 17 }, { 302, 1001 } };
    TestRng rng = { 0xC0B1ULL };
    MpePool *pool = NULL;
    MpeError err = { "" };
    CHECK(t, mpe_pool_open(&pool, 3, &err) == 0, "pool: %s", err.msg);
    for (size_t k = 0; pool && k < sizeof(sizes) / sizeof(sizes[0]) && !t->case_failed; k++) {
        const int w = sizes[k][0], h = sizes[k][1];
        GpuConfig cfg = { .width = w, .height = h, .slots = 2, .device = -1, .pool = pool };
        GpuFrontend *fe = NULL;
        MpeFrame f;
        MpePicture want, got, bands;
        if (mpe_frame_alloc(&f, MPE_FRAME_YUV420, w, h) < 0 || mpe_picture_alloc(&want, w, h) < 0 ||
            mpe_picture_alloc(&got, w, h) < 0 || mpe_picture_alloc(&bands, w, h) < 0) {
            CHECK(t, 0, "alloc");
            break;
        }
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < f.stride[c] * (c ? (h + 1) / 2 : h); i++)
                f.data[c][i] = (uint8_t)test_rand(&rng);
        mpe_picture_from_yuv(&want, &f);
        /* mpe_picture_from_yuv itself against the rule: the rows, each
         * padded with its last sample, then the last row repeated */
        for (int c = 0; c < 3 && !t->case_failed; c++) {
            const int pw = c ? (w + 1) / 2 : w, ph = c ? (h + 1) / 2 : h;
            for (int y = 0; y < want.plane_h[c] && !t->case_failed; y++)
                for (int x = 0; x < want.plane_w[c]; x++) {
                    const uint8_t rule = f.data[c][(size_t)MPE_MIN(y, ph - 1) * f.stride[c] + MPE_MIN(x, pw - 1)];
                    if (want.plane[c][(size_t)y * want.stride[c] + x] != rule) {
                        CHECK(t, 0, "%dx%d plane %d (%d,%d): %d, the source's padded %d", w, h, c, x, y,
                              want.plane[c][(size_t)y * want.stride[c] + x], rule);
                        break;
                    }
                }
        }
        for (int b = 6; b >= 0; b--)
            mpe_picture_from_yuv_band(&bands, &f, b, 7);
        CHECK(t, gpu_frontend_open(&fe, "cpu", &cfg, NULL, &err) == 0, "open: %s", err.msg);
        CHECK(t, fe && gpu_frontend_submit(fe, 1, &f, &err) == 0 && gpu_frontend_wait(fe, 1, &err) == 0 &&
                     gpu_frontend_download(fe, 1, &got, NULL, &err) == 0,
              "%dx%d: %s", w, h, err.msg);
        for (int c = 0; c < 3 && !t->case_failed; c++)
            for (int y = 0; y < want.plane_h[c]; y++) {
                const uint8_t *a = want.plane[c] + (size_t)y * want.stride[c];
                CHECK(t, !memcmp(a, got.plane[c] + (size_t)y * got.stride[c], (size_t)want.plane_w[c]) &&
                             !memcmp(a, bands.plane[c] + (size_t)y * bands.stride[c], (size_t)want.plane_w[c]),
                      "%dx%d plane %d row %d differs from mpe_picture_from_yuv's", w, h, c, y);
                if (t->case_failed)
                    break;
            }
        gpu_frontend_close(fe);
        mpe_frame_free(&f);
        mpe_picture_free(&want);
        mpe_picture_free(&got);
        mpe_picture_free(&bands);
    }
    mpe_pool_close(pool);
}

/* The device's vector words (dx | dy << 16, sad, sad0 per macroblock)
 * into GpuMotion: gpu_unpack_vectors (a copy where the host's layout is
 * GpuMotion's) against the words decoded one by one, on random words of
 * every sign and size, odd macroblock counts. */
static void test_unpack_vectors(TestCtx *t)
{
    TestRng rng = { 0x7EC7ULL };
    for (int k = 0; k < 20 && !t->case_failed; k++) {
        GpuGeometry geo = { 0 };
        geo.mb_w = 1 + (int)(test_rand(&rng) % 37);
        geo.mb_h = 1 + (int)(test_rand(&rng) % 23);
        const int n = geo.mb_w * geo.mb_h;
        uint8_t *words = malloc(12 * (size_t)n);
        GpuMotion *mv = malloc(sizeof(*mv) * (size_t)n);
        if (!words || !mv) {
            CHECK(t, 0, "out of memory");
            free(words);
            free(mv);
            return;
        }
        for (int i = 0; i < 12 * n; i++)
            words[i] = (uint8_t)test_rand(&rng);
        memset(mv, 0xA5, sizeof(*mv) * (size_t)n);
        gpu_unpack_vectors(mv, words, &geo);
        for (int i = 0; i < n && !t->case_failed; i++) {
            uint32_t v[3];
            for (int j = 0; j < 3; j++)
                v[j] = (uint32_t)words[12 * i + 4 * j] | (uint32_t)words[12 * i + 4 * j + 1] << 8 |
                       (uint32_t)words[12 * i + 4 * j + 2] << 16 | (uint32_t)words[12 * i + 4 * j + 3] << 24;
            const int dx = (int16_t)(v[0] & 0xFFFF), dy = (int16_t)(v[0] >> 16);
            CHECK(t, mv[i].dx == dx && mv[i].dy == dy && mv[i].sad == v[1] && mv[i].sad0 == v[2],
                  "%dx%d macroblocks, #%d: (%d, %d) %u %u, words say (%d, %d) %u %u", geo.mb_w,
                  geo.mb_h, i, mv[i].dx, mv[i].dy, mv[i].sad, mv[i].sad0, dx, dy, v[1], v[2]);
        }
        free(words);
        free(mv);
    }
}

static void test_backend_select(TestCtx *t)
{
    const GpuBackend *b = NULL;
    MpeError err;
    CHECK(t, gpu_backend_select(&b, "auto", NULL, &err) == 0 && b, "auto found nothing");
    CHECK(t, gpu_backend_select(&b, "cpu", NULL, &err) == 0 && !strcmp(gpu_backend_name(b), "cpu"), "cpu");
    CHECK(t, gpu_backend_select(&b, "nonesuch", NULL, &err) < 0 && strstr(err.msg, "nonesuch"),
          "unknown backend accepted");
}

/* touch dir/name (name may be "sub/leaf"; sub must exist) */
static int touch(const char *dir, const char *name)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (!(f = fopen(path, "w")))
        return -1;
    return fclose(f);
}

static void untouch(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    remove(path);
}

static void test_device_nodes(TestCtx *t)
{
    /* nodes that mean a GPU, and names beside them that do not */
    static const char *const gpu[] = { "dri/renderD128", "dri/card0", "kfd", "nvidia0",
                                       "nvidia3", "dxg", "mali0", "kgsl-3d0", "galcore",
                                       "accel/accel0" };
    static const char *const other[] = { "nvidiactl", "nvidia-uvm", "nvidia-modeset", "kfd0",
                                         "dri/by-path", "null", "tty0", "accel/x" };
    char dir[] = "/tmp/mpe_test_nodes.XXXXXX", sub[600];
    if (!mkdtemp(dir)) {
        CHECK(t, 0, "mkdtemp");
        return;
    }
    snprintf(sub, sizeof(sub), "%s/dri", dir);
    CHECK(t, mkdir(sub, 0700) == 0, "mkdir dri");
    snprintf(sub, sizeof(sub), "%s/accel", dir);
    CHECK(t, mkdir(sub, 0700) == 0, "mkdir accel");
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        CHECK(t, touch(dir, other[i]) == 0, "touch %s", other[i]);
    CHECK(t, !gpu_has_device_node(dir), "no GPU node, yet one was found");
    for (size_t i = 0; i < sizeof(gpu) / sizeof(gpu[0]); i++) {
        CHECK(t, touch(dir, gpu[i]) == 0, "touch %s", gpu[i]);
        CHECK(t, gpu_has_device_node(dir), "%s not taken for a GPU node", gpu[i]);
        untouch(dir, gpu[i]);
    }
    CHECK(t, !gpu_has_device_node("/nonexistent/dev"), "a missing directory has a GPU node");
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        untouch(dir, other[i]);
    untouch(dir, "dri");
    untouch(dir, "accel");
    CHECK(t, remove(dir) == 0, "temporary directory not empty");
}

/* The hierarchical search: the cpu kernels (each flag subset, rows in any
 * order) equal gpu_motion_search_hier_c, with and without the co-located
 * candidates, on random pictures and on a texture moved by a known vector. */
static void check_kernel_hier(TestCtx *t, const GpuCpuKernels *k, const MpePicture *cur,
                              const MpePicture *ref, const GpuMotion *prev, int range, int reach,
                              const char *what, TestRng *rng)
{
    const int n = cur->mb_width * cur->mb_height;
    GpuMotion *want = malloc((size_t)n * sizeof(*want)), *got = malloc((size_t)n * sizeof(*got));
    GpuMotion *coarse = malloc((size_t)n * sizeof(*coarse));
    GpuBlockSums cs, rs;
    GpuPyramid pc, pr;
    int order[256];

    CHECK(t, want && got && coarse && gpu_block_sums_alloc(&cs, cur) == 0 &&
                 gpu_block_sums_alloc(&rs, ref) == 0 && gpu_pyramid_alloc(&pc, cur) == 0 &&
                 gpu_pyramid_alloc(&pr, ref) == 0, "alloc");
    CHECK(t, gpu_motion_search_hier_c(want, cur, ref, prev, range, reach, mpe_sad16_c) == 0, "reference");
    gpu_block_sums_rows(&k->sad, &cs, cur, 0, cur->mb_height);
    gpu_block_sums_rows(&k->sad, &rs, ref, 0, ref->mb_height);
    gpu_pyramid_build_c(&pc, cur);
    gpu_pyramid_build_c(&pr, ref);
    memset(got, 0xA5, (size_t)n * sizeof(*got));
    memset(coarse, 0x5A, (size_t)n * sizeof(*coarse));
    shuffle_rows(order, cur->mb_height, rng);
    for (int i = 0; i < cur->mb_height; i++)
        k->coarse_rows(coarse, &pc, &pr, cur->mb_width, reach, order[i], order[i] + 1);
    /* stages 2-3 themselves (the final window can hide a wrong coarse vector) */
    GpuMotion *want_coarse = malloc((size_t)n * sizeof(*want_coarse));
    CHECK(t, want_coarse != NULL, "alloc");
    gpu_hier_coarse_rows(want_coarse, &pc, &pr, cur->mb_width, reach, 0, cur->mb_height);
    for (int i = 0; i < n; i++)
        if (memcmp(&coarse[i], &want_coarse[i], sizeof(*coarse))) {
            CHECK(t, 0, "%s %s %dx%d reach %d mb %d: coarse (%d,%d) sad %u, want (%d,%d) sad %u", k->name, what,
                  cur->width, cur->height, reach, i, coarse[i].dx, coarse[i].dy, coarse[i].sad,
                  want_coarse[i].dx, want_coarse[i].dy, want_coarse[i].sad);
            break;
        }
    free(want_coarse);
    /* cur's sums as the backend has them (grid_of) where prev is given */
    uint16_t *grid_buf;
    const GpuBlockSums grid = grid_of(k, cur, &grid_buf);
    CHECK(t, grid_buf != NULL, "alloc");
    shuffle_rows(order, cur->mb_height, rng);
    for (int i = 0; i < cur->mb_height; i++)
        k->hier_final_rows(k, got, cur, prev ? &grid : &cs, ref, &rs, coarse, prev, range, reach,
                           order[i], order[i] + 1);
    free(grid_buf);
    for (int i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(*got))) {
            CHECK(t, 0, "%s %s %dx%d R=%d reach %d prev %d mb %d: got (%d,%d) sad %u sad0 %u, want (%d,%d) sad %u sad0 %u",
                  k->name, what, cur->width, cur->height, range, reach, prev != NULL, i, got[i].dx,
                  got[i].dy, got[i].sad, got[i].sad0, want[i].dx, want[i].dy, want[i].sad, want[i].sad0);
            break;
        }
    gpu_block_sums_free(&cs);
    gpu_block_sums_free(&rs);
    gpu_pyramid_free(&pc);
    gpu_pyramid_free(&pr);
    free(want);
    free(got);
    free(coarse);
}

/* cur = ref moved by (-dx, -dy): the block at p matches ref at p + (dx, dy) */
static void shifted_picture(MpePicture *cur, const MpePicture *ref, int dx, int dy)
{
    for (int y = 0; y < cur->plane_h[0]; y++)
        for (int x = 0; x < cur->plane_w[0]; x++)
            cur->plane[0][y * cur->stride[0] + x] =
                ref->plane[0][clampi(y + dy, 0, ref->plane_h[0] - 1) * ref->stride[0] +
                              clampi(x + dx, 0, ref->plane_w[0] - 1)];
}

static void test_kernels_hier(TestCtx *t)
{
    static const int cases[][5] = { /* w, h, range, reach, levels (0: checkerboard) */
        { 64, 48, 4, 127, 256 }, { 80, 64, 8, 16, 3 },  { 33, 17, 4, 127, 2 }, { 200, 120, 0, 60, 256 },
        { 176, 160, 16, 255, 256 }, { 161, 150, 4, 33, 5 }, { 70, 50, 12, 4, 0 }, { 16, 16, 4, 127, 256 },
        { 320, 240, 4, 127, 256 },
    };
    TestRng rng = { 1234 };
    GpuCpuKernels ks[8];
    const int nk = kernel_sets(ks);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        MpePicture cur, ref;
        const int w = cases[c][0], h = cases[c][1];
        CHECK(t, mpe_picture_alloc(&cur, w, h) == 0 && mpe_picture_alloc(&ref, w, h) == 0, "alloc");
        const int n = cur.mb_width * cur.mb_height;
        GpuMotion *prev = malloc((size_t)n * sizeof(*prev));
        CHECK(t, prev != NULL, "alloc");
        for (int i = 0; i < n; i++) {   /* garbage too: outside the reach or the plane */
            prev[i].dx = (int16_t)((int)(test_rand(&rng) % 301) - 150);
            prev[i].dy = (int16_t)((int)(test_rand(&rng) % 301) - 150);
        }
        random_picture(&ref, &rng, cases[c][4] ? cases[c][4] : -1);
        for (int moved = 0; moved < 5; moved++) {
            if (moved == 4) {
                /* the same at 1/4 resolution, not at 1/2: each 4x4 pixel
                 * tile flat in rows 0-1, A A B B in rows 2-3 of ref and
                 * B B A A of cur (the 1/2 plane's odd rows differ, their
                 * 2x2 means do not): stage 2 finds SAD 0 at zero, stage 3
                 * must still search (its best: 2 pixels across) */
                for (int y = 0; y < ref.plane_h[0]; y++)
                    for (int x = 0; x < ref.plane_w[0]; x++) {
                        const int a = 40 + 9 * ((x / 4 + 3 * (y / 4)) % 7), b = a + 50;
                        const int odd = (y & 3) >= 2, left = (x & 3) < 2;
                        ref.plane[0][y * ref.stride[0] + x] = (uint8_t)(odd ? (left ? a : b) : 128);
                        cur.plane[0][y * cur.stride[0] + x] = (uint8_t)(odd ? (left ? b : a) : 128);
                    }
            } else if (moved == 3) {
                /* still but for a moved patch: the zero vector's SAD is 0
                 * outside it (the fast kernels stop there at once) */
                shifted_picture(&cur, &ref, 0, 0);
                MpePicture patch;
                CHECK(t, mpe_picture_alloc(&patch, w, h) == 0, "alloc");
                shifted_picture(&patch, &ref, (int)(test_rand(&rng) % 41) - 20, (int)(test_rand(&rng) % 21) - 10);
                for (int y = h / 4; y < h / 2; y++)
                    memcpy(cur.plane[0] + y * cur.stride[0] + w / 3, patch.plane[0] + y * patch.stride[0] + w / 3,
                           (size_t)(w / 3));
                mpe_picture_free(&patch);
            } else if (moved == 2) {
                /* every row the same: SAD 0 along whole columns of vectors,
                 * where only |dx|+|dy| decides */
                for (int y = 1; y < ref.plane_h[0]; y++)
                    memcpy(ref.plane[0] + y * ref.stride[0], ref.plane[0], (size_t)ref.plane_w[0]);
                shifted_picture(&cur, &ref, (int)(test_rand(&rng) % 41) - 20, 0);
            } else if (moved)
                shifted_picture(&cur, &ref, (int)(test_rand(&rng) % 121) - 60, (int)(test_rand(&rng) % 61) - 30);
            else
                random_picture(&cur, &rng, cases[c][4]);
            for (int ki = 0; ki < nk; ki++)
                for (int p = 0; p < 2; p++)
                    check_kernel_hier(t, &ks[ki], &cur, &ref, p ? prev : NULL, cases[c][2], cases[c][3],
                                      moved ? "moved" : "random", &rng);
        }
        free(prev);
        mpe_picture_free(&cur);
        mpe_picture_free(&ref);
    }
}

/* A texture moved by 70 right and 45 up per picture, far outside any
 * +-16 window: the macroblocks whose match lies inside the picture get
 * exactly that vector at SAD 0 -- nearly all: a 4x4 block at 1/4
 * resolution matches a few of them somewhere else (8 of 180 here), and
 * its neighbours' vectors do not always rescue it. */
static void test_hier_finds_large_shift(TestCtx *t)
{
    MpePicture cur, ref;
    TestRng rng = { 99 };
    const int w = 320, h = 240, dx = 70, dy = -45;
    CHECK(t, mpe_picture_alloc(&cur, w, h) == 0 && mpe_picture_alloc(&ref, w, h) == 0, "alloc");
    /* a texture with structure at 1/4 resolution, as real pictures have
     * (white noise decimated at another phase matches nothing): noise
     * box-blurred over 6x6 */
    random_picture(&cur, &rng, 256);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int sum = 0;
            for (int j = 0; j < 6; j++)
                for (int i = 0; i < 6; i++)
                    sum += cur.plane[0][clampi(y + j, 0, h - 1) * cur.stride[0] + clampi(x + i, 0, w - 1)];
            ref.plane[0][y * ref.stride[0] + x] = (uint8_t)(sum / 36 * 3 - 250);
        }
    shifted_picture(&cur, &ref, dx, dy);
    const int n = cur.mb_width * cur.mb_height;
    GpuMotion *mv = malloc((size_t)n * sizeof(*mv));
    CHECK(t, mv && gpu_motion_search_hier_c(mv, &cur, &ref, NULL, 4, 127, mpe_sad16_c) == 0, "search");
    int inside = 0, found = 0;
    for (int mby = 0; mby < cur.mb_height; mby++)
        for (int mbx = 0; mbx < cur.mb_width; mbx++) {
            const int x = 16 * mbx + dx, y = 16 * mby + dy;
            if (x < 0 || y < 0 || x + 16 > w || y + 16 > h)
                continue;
            const GpuMotion *m = &mv[mby * cur.mb_width + mbx];
            inside++;
            found += m->dx == dx && m->dy == dy && m->sad == 0;
        }
    CHECK(t, inside > 50 && found * 20 >= inside * 19, "found (%d,%d) in %d of %d macroblocks", dx, dy, found, inside);
    free(mv);
    mpe_picture_free(&cur);
    mpe_picture_free(&ref);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "frontend");
    test_run(&t, "convert-random-vs-reference", test_convert_random);
    test_run(&t, "convert-bt601-values", test_convert_bt601_values);
    test_run(&t, "padding-replicates-edges", test_padding_replicates_edges);
    test_run(&t, "search-random-vs-reference", test_search_random);
    test_run(&t, "search-finds-known-shift", test_search_finds_shift);
    test_run(&t, "backend-cpu-interface", test_backend_cpu_interface);
    test_run(&t, "frontend-slot-checks", test_frontend_slot_checks);
    test_run(&t, "submit-banded-copy", test_submit_banded_copy);
    test_run(&t, "unpack-vectors", test_unpack_vectors);
    test_run(&t, "backend-select", test_backend_select);
    test_run(&t, "gpu-device-nodes", test_device_nodes);
    test_run(&t, "kernels-convert-vs-reference", test_kernels_convert);
    test_run(&t, "kernels-convert-exact-halves", test_kernels_convert_halves);
    test_run(&t, "kernels-convert-writes-own-rows", test_kernels_convert_rows_only);
    test_run(&t, "kernels-block-sums-vs-direct", test_kernels_block_sums);
    test_run(&t, "kernels-search-random-vs-reference", test_kernels_search);
    test_run(&t, "kernels-search-ties-and-extremes", test_kernels_search_adversarial);
    test_run(&t, "backend-cpu-threads-and-hints", test_backend_cpu_threads);
    test_run(&t, "backend-cpu-shared-sums", test_backend_cpu_shared_sums);
    test_run(&t, "kernels-pyramid-vs-reference", test_kernels_pyramid);
    test_run(&t, "kernels-intra-costs-vs-bdecide", test_kernels_intra_costs);
    test_run(&t, "kernels-hier-vs-reference", test_kernels_hier);
    test_run(&t, "hier-finds-large-shift", test_hier_finds_large_shift);
    return test_finish(&t);
}
