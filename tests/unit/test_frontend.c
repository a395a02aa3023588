/* test_frontend.c — the cpu front end against independent straightforward
 * implementations, on random inputs and odd sizes (DESIGN.md invariant 3),
 * and against known BT.601 values. */
#include <stdlib.h>
#include <string.h>

#include "gpu/frontend.h"
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
        gpu_motion_search_c(a, &cur, &ref, r, gpu_sad16_c);
        search_ref(b, &cur, &ref, r);
        for (size_t i = 0; i < n; i++)
            CHECK(t, !memcmp(&a[i], &b[i], sizeof(*a)),
                  "%dx%d R=%d mb %zu: got (%d,%d) sad %u sad0 %u, want (%d,%d) sad %u sad0 %u", w, h,
                  r, i, a[i].dx, a[i].dy, a[i].sad, a[i].sad0, b[i].dx, b[i].dy, b[i].sad, b[i].sad0);
        gpu_motion_search_c(a, &cur, &ref, r, gpu_sad16_best());
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
    gpu_motion_search_c(mv, &cur, &ref, 8, gpu_sad16_best());
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

static void test_sad_variants(TestCtx *t)
{
    TestRng rng = { 31337 };
    uint8_t a[40 * 40], b[40 * 40];
    GpuSad16Fn fast = gpu_sad16_best();
    for (int iter = 0; iter < 2000; iter++) {
        for (int i = 0; i < 40 * 40; i++) {
            a[i] = (uint8_t)test_rand(&rng);
            b[i] = iter & 1 ? (uint8_t)test_rand(&rng) : (uint8_t)(255 - a[i]);
        }
        int ox = (int)(test_rand(&rng) % 20), oy = (int)(test_rand(&rng) % 20);
        int px = (int)(test_rand(&rng) % 20), py = (int)(test_rand(&rng) % 20);
        uint32_t s1 = gpu_sad16_c(a + oy * 40 + ox, 40, b + py * 40 + px, 40);
        uint32_t s2 = fast(a + oy * 40 + ox, 40, b + py * 40 + px, 40);
        if (s1 != s2) {
            CHECK(t, s1 == s2, "iteration %d: C %u, fast %u", iter, s1, s2);
            break;
        }
    }
}

static void test_backend_cpu_interface(TestCtx *t)
{
    const int w = 70, h = 50;
    GpuContext *ctx = NULL;
    MpeError err;
    MpeFrame f0, f1;
    MpePicture direct0, direct1, got;
    TestRng rng = { 5 };
    GpuConfig cfg = { .width = w, .height = h, .slots = 2, .log = NULL };

    CHECK(t, gpu_backend_cpu.open(&ctx, &cfg, &err) == 0, "open: %s", err.msg);
    CHECK(t, mpe_frame_alloc(&f0, MPE_FRAME_RGB24, w, h) == 0 && mpe_frame_alloc(&f1, MPE_FRAME_RGB24, w, h) == 0, "alloc");
    for (int i = 0; i < w * h * 3; i++) {
        f0.data[0][i] = (uint8_t)test_rand(&rng);
        f1.data[0][i] = (uint8_t)(f0.data[0][(i + 9) % (w * h * 3)] ^ (test_rand(&rng) & 7));
    }
    mpe_picture_alloc(&direct0, w, h);
    mpe_picture_alloc(&direct1, w, h);
    mpe_picture_alloc(&got, w, h);
    gpu_convert_rgb_c(&direct0, f0.data[0], f0.stride[0]);
    gpu_convert_rgb_c(&direct1, f1.data[0], f1.stride[0]);
    size_t n = (size_t)got.mb_width * got.mb_height;
    GpuMotion mv_direct[64], mv_got[64];
    gpu_motion_search_c(mv_direct, &direct1, &direct0, 12, gpu_sad16_c);

    CHECK(t, gpu_backend_cpu.submit_frame(ctx, 0, &f0, &err) == 0, "submit 0");
    CHECK(t, gpu_backend_cpu.submit_frame(ctx, 1, &f1, &err) == 0, "submit 1");
    CHECK(t, gpu_backend_cpu.motion_search(ctx, 1, 0, 12, &err) == 0, "search");
    CHECK(t, gpu_backend_cpu.wait(ctx, 1, &err) == 0, "wait");
    fill_sentinel(&got, 0xEE);
    memset(mv_got, 0xEE, sizeof(mv_got));
    CHECK(t, gpu_backend_cpu.download(ctx, 1, &got, mv_got, &err) == 0, "download: %s", err.msg);
    int c = 0, x = 0, y = 0;
    CHECK(t, planes_equal(&got, &direct1, &c, &x, &y), "planes differ at plane %d (%d,%d)", c, x, y);
    CHECK(t, !memcmp(mv_got, mv_direct, n * sizeof(GpuMotion)), "vectors differ");
    /* a slot without a search has no vectors to give */
    CHECK(t, gpu_backend_cpu.download(ctx, 0, &got, mv_got, &err) < 0, "download of unsearched slot succeeded");
    CHECK(t, gpu_backend_cpu.motion_search(ctx, 1, 0, 65, &err) < 0, "range 65 accepted");
    CHECK(t, gpu_backend_cpu.submit_frame(ctx, 2, &f0, &err) < 0, "slot 2 accepted");

    gpu_backend_cpu.close(ctx);
    mpe_frame_free(&f0);
    mpe_frame_free(&f1);
    mpe_picture_free(&direct0);
    mpe_picture_free(&direct1);
    mpe_picture_free(&got);
}

static void test_backend_select(TestCtx *t)
{
    const GpuBackend *b = NULL;
    MpeError err;
    CHECK(t, gpu_backend_select(&b, "auto", NULL, &err) == 0 && b, "auto found nothing");
    CHECK(t, gpu_backend_select(&b, "cpu", NULL, &err) == 0 && b == &gpu_backend_cpu, "cpu");
    CHECK(t, gpu_backend_select(&b, "nonesuch", NULL, &err) < 0 && strstr(err.msg, "nonesuch"),
          "unknown backend accepted");
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
    test_run(&t, "sad16-fast-vs-c", test_sad_variants);
    test_run(&t, "backend-cpu-interface", test_backend_cpu_interface);
    test_run(&t, "backend-select", test_backend_select);
    return test_finish(&t);
}
