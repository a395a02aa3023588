/* test_gpu_frontend.c — every compiled-in non-cpu front-end backend against
 * the cpu reference (checkasm habit): conversion planes and every
 * macroblock's (vector, SAD, zero SAD) must be identical, on random frames
 * at odd sizes, with sentinel-filled outputs, for R = 7, 16, 64; and on the
 * 2048x2048 solar frames when ../shared/solar (or SOLAR_DIR) is present.
 * A backend that cannot run here (no device, no driver) is SKIPPED. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cpu.h"
#include "dsp/sad.h"
#include "encoder/bdecide.h"
#include "input/input.h"
#include "gpu/frontend.h"
#include "tests/test.h"

typedef struct Run {
    MpePicture pic[2];
    GpuMotion *mv, *mv2;
} Run;

/* The hierarchical search (reach > 0) of frame 1 against 0, then of frame
 * 0 again against 1, whose vectors are then the co-located candidates. */
static int run_hier(GpuFrontend *ctx, const MpeFrame *f0, const MpeFrame *f1, int range, int reach,
                    Run *out, MpeError *err)
{
    int ret;
    if ((ret = gpu_frontend_submit(ctx, 0, f0, err)) < 0 ||
        (ret = gpu_frontend_submit(ctx, 1, f1, err)) < 0 ||
        (ret = gpu_frontend_search_hier(ctx, 1, 0, range, reach, err)) < 0 ||
        (ret = gpu_frontend_submit(ctx, 2, f0, err)) < 0 ||
        (ret = gpu_frontend_search_hier(ctx, 2, 1, range, reach, err)) < 0 ||
        (ret = gpu_frontend_download(ctx, 0, &out->pic[0], NULL, err)) < 0 ||
        (ret = gpu_frontend_download(ctx, 1, &out->pic[1], out->mv, err)) < 0 ||
        (ret = gpu_frontend_download(ctx, 2, &out->pic[0], out->mv2, err)) < 0)
        return ret;
    return 0;
}

/* Push two frames through a backend: frame 1 searched against frame 0. */
static int run_backend(const char *b, const MpeFrame *f0, const MpeFrame *f1, int range, int reach,
                       Run *out, MpeError *err)
{
    GpuFrontend *ctx = NULL;
    GpuConfig cfg = { .width = f0->width, .height = f0->height, .slots = reach ? 3 : 2,
                      .device = -1, .pyramid = reach > 0 };
    int ret;
    if ((ret = gpu_frontend_open(&ctx, b, &cfg, NULL, err)) < 0)
        return ret;
    if (reach) {
        ret = run_hier(ctx, f0, f1, range, reach, out, err);
        gpu_frontend_close(ctx);
        return ret;
    }
    if ((ret = gpu_frontend_submit(ctx, 0, f0, err)) < 0 ||
        (ret = gpu_frontend_submit(ctx, 1, f1, err)) < 0 ||
        (ret = gpu_frontend_search(ctx, 1, 0, range, err)) < 0 ||
        (ret = gpu_frontend_wait(ctx, 0, err)) < 0 || (ret = gpu_frontend_wait(ctx, 1, err)) < 0 ||
        (ret = gpu_frontend_download(ctx, 0, &out->pic[0], NULL, err)) < 0 ||
        (ret = gpu_frontend_download(ctx, 1, &out->pic[1], out->mv, err)) < 0 ||
        /* vectors only (a B frame's second fetch): the same vectors */
        (ret = gpu_frontend_download(ctx, 1, NULL, out->mv2, err)) < 0) {
        gpu_frontend_close(ctx);
        return ret;
    }
    gpu_frontend_close(ctx);
    const size_t nmb = (size_t)out->pic[1].mb_width * out->pic[1].mb_height;
    if (memcmp(out->mv, out->mv2, nmb * sizeof(*out->mv)))
        return mpe_error(err, -EINVAL, "%s: a vectors-only download differs from the full one", b);
    return 0;
}

/* The first padded row where two pictures of one size differ: 1 with its
 * plane and row, 0 when all three planes are the same. */
static int first_row_differing(const MpePicture *a, const MpePicture *b, int *plane, int *row)
{
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < a->plane_h[c]; y++)
            if (memcmp(a->plane[c] + (size_t)y * a->stride[c], b->plane[c] + (size_t)y * b->stride[c],
                       (size_t)a->plane_w[c])) {
                *plane = c;
                *row = y;
                return 1;
            }
    return 0;
}

static int run_alloc(Run *r, int w, int h, uint8_t sentinel)
{
    if (mpe_picture_alloc(&r->pic[0], w, h) < 0 || mpe_picture_alloc(&r->pic[1], w, h) < 0)
        return -1;
    size_t n = (size_t)r->pic[0].mb_width * r->pic[0].mb_height;
    if (!(r->mv = malloc(n * sizeof(*r->mv))) || !(r->mv2 = malloc(n * sizeof(*r->mv2))))
        return -1;
    memset(r->mv2, sentinel, n * sizeof(*r->mv2));
    for (int p = 0; p < 2; p++)
        for (int c = 0; c < 3; c++)
            memset(r->pic[p].plane[c], sentinel, (size_t)r->pic[p].stride[c] * r->pic[p].plane_h[c]);
    memset(r->mv, sentinel, n * sizeof(*r->mv));
    return 0;
}

static void run_free(Run *r)
{
    mpe_picture_free(&r->pic[0]);
    mpe_picture_free(&r->pic[1]);
    free(r->mv);
    free(r->mv2);
}

/* Compare one backend with cpu on a frame pair; returns 0 if identical. */
static void compare(TestCtx *t, const char *b, const MpeFrame *f0, const MpeFrame *f1,
                    int range, int reach, const char *what)
{
    Run ref, got;
    MpeError err = { "" };
    int w = f0->width, h = f0->height;
    if (run_alloc(&ref, w, h, 0xA5) < 0 || run_alloc(&got, w, h, 0x5A) < 0) {
        CHECK(t, 0, "out of memory");
        return;
    }
    int rc = run_backend("cpu", f0, f1, range, reach, &ref, &err);
    CHECK(t, rc == 0, "%s: cpu backend failed: %s", what, err.msg);
    rc = run_backend(b, f0, f1, range, reach, &got, &err);
    if (reach && rc == -ENOSYS) {   /* a backend without the hierarchical search refuses it at open */
        run_free(&ref);
        run_free(&got);
        return;
    }
    CHECK(t, rc == 0, "%s: %s backend failed: %s", what, b, err.msg);
    if (rc == 0) {
        int bad = 0;
        for (int p = 0; p < 2 && !bad; p++)
            for (int c = 0; c < 3 && !bad; c++)
                for (int y = 0; y < ref.pic[p].plane_h[c] && !bad; y++)
                    for (int x = 0; x < ref.pic[p].plane_w[c] && !bad; x++) {
                        int a = ref.pic[p].plane[c][y * ref.pic[p].stride[c] + x];
                        int g = got.pic[p].plane[c][y * got.pic[p].stride[c] + x];
                        if (a != g) {
                            CHECK(t, a == g, "%s %s: frame %d plane %d (%d,%d): cpu %d, %s %d", what,
                                  b, p, c, x, y, a, b, g);
                            bad = 1;
                        }
                    }
        size_t n = (size_t)ref.pic[0].mb_width * ref.pic[0].mb_height;
        for (size_t i = 0; i < (reach ? 2 : 1) * n && !bad; i++) {
            const GpuMotion *a = i < n ? &ref.mv[i] : &ref.mv2[i - n];
            const GpuMotion *g = i < n ? &got.mv[i] : &got.mv2[i - n];
            if (a->dx != g->dx || a->dy != g->dy || a->sad != g->sad || a->sad0 != g->sad0) {
                CHECK(t, 0, "%s R=%d reach %d %s: %s mb %zu: cpu (%d,%d) sad %u sad0 %u, got (%d,%d) sad %u sad0 %u",
                      what, range, reach, b, i < n ? "search" : "second search", i % n, a->dx, a->dy,
                      a->sad, a->sad0, g->dx, g->dy, g->sad, g->sad0);
                bad = 1;
            }
        }
    }
    run_free(&ref);
    run_free(&got);
}

/* Random frame pair: f1 is f0 moved by a few pixels plus noise, so the
 * search has real minima; levels < 256 gives flat areas and ties.
 * levels 0: a checkerboard against its inverse, where every odd-L1 vector
 * matches exactly, so only the tie-break rule decides. */
static void random_pair(MpeFrame *f0, MpeFrame *f1, TestRng *rng, int levels)
{
    int w = f0->width, h = f0->height;
    int planes = f0->format == MPE_FRAME_RGB24 ? 1 : 3;
    if (levels == 0) {
        for (int c = 0; c < planes; c++) {
            int ph = c ? (h + 1) / 2 : h, pw = c ? (w + 1) / 2 : w;
            int bpp = f0->format == MPE_FRAME_RGB24 ? 3 : 1;
            for (int y = 0; y < ph; y++)
                for (int x = 0; x < pw * bpp; x++) {
                    int on = ((x / bpp) + y) & 1;
                    f0->data[c][y * f0->stride[c] + x] = on ? 200 : 40;
                    f1->data[c][y * f1->stride[c] + x] = on ? 40 : 200;
                }
        }
        return;
    }
    for (int c = 0; c < planes; c++) {
        int pw = f0->format == MPE_FRAME_RGB24 ? w * 3 : c ? (w + 1) / 2 : w;
        int ph = c ? (h + 1) / 2 : h;
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++)
                f0->data[c][y * f0->stride[c] + x] = (uint8_t)(test_rand(rng) % (unsigned)levels);
        int sx = 3 * (f0->format == MPE_FRAME_RGB24 ? 3 : 1), sy = 2;
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++) {
                int xs = x + sx < pw ? x + sx : x, ys = y + sy < ph ? y + sy : y;
                int v = f0->data[c][ys * f0->stride[c] + xs] + (int)(test_rand(rng) % 3) - 1;
                f1->data[c][y * f1->stride[c] + x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    }
}

static const char *backend_under_test;

/* gpu_backend_probe of the backend called `name` */
static int backend_probe(const char *name, int for_auto, char *why, size_t why_size)
{
    for (const GpuBackend *const *b = gpu_backend_list(); *b; b++)
        if (!strcmp(gpu_backend_name(*b), name))
            return gpu_backend_probe(*b, for_auto, why, why_size);
    return -1;
}

static void test_random_frames(TestCtx *t)
{
    static const int cases[][4] = { /* w, h, range, levels */
        { 48, 32, 7, 256 }, { 48, 32, 64, 3 }, { 336, 272, 16, 256 }, { 336, 272, 64, 256 },
        { 1000, 520, 7, 4 }, { 1000, 520, 16, 256 }, { 17, 23, 16, 2 }, { 130, 66, 64, 256 },
        { 64, 48, 16, 0 }, { 80, 80, 64, 0 },
    };
    TestRng rng = { 0xC0FFEE };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        for (int fmt = 0; fmt < 2; fmt++) {
            MpeFrame f0, f1;
            char what[96];
            int w = cases[k][0], h = cases[k][1];
            MpeFrameFormat format = fmt ? MPE_FRAME_YUV420 : MPE_FRAME_RGB24;
            if (mpe_frame_alloc(&f0, format, w, h) < 0 || mpe_frame_alloc(&f1, format, w, h) < 0) {
                CHECK(t, 0, "out of memory");
                return;
            }
            random_pair(&f0, &f1, &rng, cases[k][3]);
            snprintf(what, sizeof(what), "%dx%d %s levels %d", w, h, fmt ? "yuv" : "rgb", cases[k][3]);
            compare(t, backend_under_test, &f0, &f1, cases[k][2], 0, what);
            /* the hierarchical search: window 4, or the case's range; reach 127 or 255 */
            compare(t, backend_under_test, &f0, &f1, k & 1 ? cases[k][2] : 4, k & 2 ? 255 : 127, what);
            mpe_frame_free(&f0);
            mpe_frame_free(&f1);
        }
    }
}

/* A smooth random texture (a coarse random grid, bilinearly interpolated,
 * plus a little noise) w x h, one byte per sample. */
static uint8_t *texture(int w, int h, TestRng *rng)
{
    const int g = 12, gw = w / g + 2, gh = h / g + 2;
    uint8_t *grid = malloc((size_t)gw * gh), *t = malloc((size_t)w * h);
    if (!grid || !t) {
        free(grid);
        free(t);
        return NULL;
    }
    for (int i = 0; i < gw * gh; i++)
        grid[i] = (uint8_t)(test_rand(rng) % 256);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int gx = x / g, gy = y / g, fx = x % g, fy = y % g;
            const uint8_t *p = grid + gy * gw + gx;
            int v = ((g - fx) * (g - fy) * p[0] + fx * (g - fy) * p[1] + (g - fx) * fy * p[gw] +
                     fx * fy * p[gw + 1]) / (g * g);
            v += (int)(test_rand(rng) % 5) - 2;
            t[y * w + x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    free(grid);
    return t;
}

/* Pans of 0, 8, 25 and 60 px/frame (and some vertical motion) over a smooth
 * texture, so the coarse stages find real motion far outside the final
 * window: frame 0 is the window at (x, y), frame 1 at (x + vx, y + vy). */
static void test_pans(TestCtx *t)
{
    static const int pans[][2] = { { 0, 0 }, { 8, -3 }, { 25, 11 }, { -60, 20 } };
    static const int sizes[][4] = { /* w, h, range, reach */
        { 336, 208, 4, 127 }, { 250, 150, 16, 255 }, { 720, 400, 4, 255 },
    };
    TestRng rng = { 0x5EED };
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        const int w = sizes[s][0], h = sizes[s][1], tw = w + 160, th = h + 80;
        uint8_t *tex[3];
        for (int c = 0; c < 3; c++)
            tex[c] = texture(c ? tw / 2 : tw, c ? th / 2 : th, &rng);
        for (size_t p = 0; p < sizeof(pans) / sizeof(pans[0]); p++) {
            MpeFrame f[2];
            char what[96];
            if (!tex[0] || !tex[1] || !tex[2] || mpe_frame_alloc(&f[0], MPE_FRAME_YUV420, w, h) < 0 ||
                mpe_frame_alloc(&f[1], MPE_FRAME_YUV420, w, h) < 0) {
                CHECK(t, 0, "out of memory");
                return;
            }
            for (int k = 0; k < 2; k++) {
                const int ox = 80 + k * pans[p][0], oy = 30 + k * pans[p][1];
                for (int c = 0; c < 3; c++) {
                    const int sh = c ? 1 : 0, pw = (w + sh) >> sh, ph = (h + sh) >> sh;
                    for (int y = 0; y < ph; y++)
                        memcpy(f[k].data[c] + (size_t)y * f[k].stride[c],
                               tex[c] + (size_t)((oy >> sh) + y) * (tw >> sh) + (ox >> sh), (size_t)pw);
                }
            }
            snprintf(what, sizeof(what), "%dx%d pan (%d,%d)", w, h, pans[p][0], pans[p][1]);
            compare(t, backend_under_test, &f[0], &f[1], sizes[s][2], sizes[s][3], what);
            mpe_frame_free(&f[0]);
            mpe_frame_free(&f[1]);
        }
        for (int c = 0; c < 3; c++)
            free(tex[c]);
    }
}

/* The encoder's protocol over a ring of slots, many frames, in lockstep
 * with cpu: submit frame n, search it against frame n-1, then download
 * frame n-1.  Slots are reused while the previous frame still serves as a
 * search reference, which is where an asynchronous backend's ordering
 * (upload into a slot whose planes another search reads) would show. */
/* gpu_frontend_stage + stage_copy + commit against gpu_frontend_submit on
 * the same backend: the same planes and vectors, though the frame handed
 * to stage is overwritten right after its copy (the encoder's pipeline
 * reuses it before the commit), for YUV and RGB frames, and the full and
 * hierarchical searches.  A backend that would read an RGB frame at commit
 * (cpu: no staging) must refuse to stage it (-EAGAIN). */
static void test_staged(TestCtx *t)
{
    const int w = 208, h = 144, nframes = 5;
    TestRng rng = { 0x57A6ED };
    for (int mode = 0; mode < 4; mode++) {
        const MpeFrameFormat fmt = mode & 1 ? MPE_FRAME_RGB24 : MPE_FRAME_YUV420;
        const int hier = mode >> 1, slots = 3;
        GpuConfig cfg = { .width = w, .height = h, .slots = slots, .device = -1, .pyramid = hier };
        GpuFrontend *ctx[2] = { NULL, NULL };
        MpeError err = { "" };
        MpeFrame f[2], scratch;
        Run out[2];
        int ok = 1, refused = 0;
        if (mpe_frame_alloc(&f[0], fmt, w, h) < 0 || mpe_frame_alloc(&f[1], fmt, w, h) < 0 ||
            mpe_frame_alloc(&scratch, fmt, w, h) < 0 || run_alloc(&out[0], w, h, 0x11) < 0 ||
            run_alloc(&out[1], w, h, 0x22) < 0) {
            CHECK(t, 0, "out of memory");
            return;
        }
        random_pair(&f[0], &f[1], &rng, 256);
        for (int k = 0; k < 2 && ok; k++) {
            int rc = gpu_frontend_open(&ctx[k], backend_under_test, &cfg, NULL, &err);
            if (rc == -ENOSYS && hier)
                ok = 0;   /* no hierarchical search on this backend */
            else
                CHECK(t, rc == 0 || (ok = 0), "%s open: %s", backend_under_test, err.msg);
        }
        const size_t bytes = fmt == MPE_FRAME_RGB24 ? (size_t)w * h * 3
                                                    : (size_t)w * h + 2 * (size_t)((w + 1) / 2) * ((h + 1) / 2);
        for (int n = 0; ok && n < nframes; n++) {
            const int slot = n % slots, ref = (n + slots - 1) % slots;
            GpuStaged st;
            int rc = gpu_frontend_submit(ctx[0], slot, &f[n & 1], &err);
            if (rc == 0) {
                memcpy(scratch.alloc, f[n & 1].alloc, bytes);
                rc = gpu_frontend_stage(ctx[1], slot, &scratch, &st, &err);
                if (rc == -EAGAIN) {
                    refused = 1;
                    break;
                }
                if (rc == 0) {
                    gpu_frontend_stage_copy(&st);
                    memset(scratch.alloc, 0x77, bytes);   /* the caller reuses its frame */
                    rc = gpu_frontend_commit(ctx[1], slot, &st, &err);
                }
            }
            for (int k = 0; k < 2 && rc == 0 && n > 0; k++)
                rc = hier ? gpu_frontend_search_hier(ctx[k], slot, ref, 4, 32, &err)
                          : gpu_frontend_search(ctx[k], slot, ref, 16, &err);
            for (int k = 0; k < 2 && rc == 0; k++)
                rc = gpu_frontend_download(ctx[k], slot, &out[k].pic[0], n > 0 ? out[k].mv : NULL, &err);
            CHECK(t, rc == 0 || (ok = 0), "%s frame %d: %s", backend_under_test, n, err.msg);
            int c, y;
            if (ok && first_row_differing(&out[0].pic[0], &out[1].pic[0], &c, &y)) {
                CHECK(t, 0, "%s %s hier %d frame %d: plane %d row %d: staged differs from submit",
                      backend_under_test, fmt == MPE_FRAME_RGB24 ? "RGB" : "YUV", hier, n, c, y);
                ok = 0;
            }
            const size_t nmb = (size_t)out[0].pic[0].mb_width * out[0].pic[0].mb_height;
            CHECK(t, !ok || n == 0 || !memcmp(out[0].mv, out[1].mv, nmb * sizeof(*out[0].mv)) || (ok = 0),
                  "%s %s hier %d frame %d: staged vectors differ from submit's", backend_under_test,
                  fmt == MPE_FRAME_RGB24 ? "RGB" : "YUV", hier, n);
        }
        /* only an RGB frame on a backend without staging may be refused */
        CHECK(t, !refused || (fmt == MPE_FRAME_RGB24 && !strcmp(backend_under_test, "cpu")),
              "%s refused to stage a %s frame", backend_under_test, fmt == MPE_FRAME_RGB24 ? "RGB" : "YUV");
        CHECK(t, refused || !(fmt == MPE_FRAME_RGB24 && !strcmp(backend_under_test, "cpu")) || !ok,
              "cpu staged an RGB frame that its commit would read after the caller reused it");
        for (int k = 0; k < 2; k++)
            gpu_frontend_close(ctx[k]);
        run_free(&out[0]);
        run_free(&out[1]);
        mpe_frame_free(&f[0]);
        mpe_frame_free(&f[1]);
        mpe_frame_free(&scratch);
    }
}

/* gpu_frontend_intra_costs where the backend counts them (cfg.intra_costs)
 * against mpe_bdecide_intra_costs on the planes it gives back: identical
 * for every macroblock, on random, nearly flat and checkerboard frames at
 * odd sizes, YUV and RGB.  Where the backend does not count them (cpu), or
 * was not asked to, it says -ENOSYS (and has_intra_costs 0); the GPU
 * backends count them when asked. */
static void test_intra_costs(TestCtx *t)
{
    static const int sizes[][3] = { { 17, 23, 256 }, { 208, 144, 256 }, { 1000, 520, 3 }, { 80, 48, 0 } };
    TestRng rng = { 0x1A7C0 };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (int rgb = 0; rgb < 2; rgb++)
            for (int asked = 0; asked < 2; asked++) {
                const int w = sizes[i][0], h = sizes[i][1];
                /* cpu_flags: the cpu backend's fast kernels (the others ignore them) */
                GpuConfig cfg = { .width = w, .height = h, .slots = 2, .device = -1, .intra_costs = asked,
                                  .cpu_flags = mpe_cpu_flags() };
                GpuFrontend *fe = NULL;
                MpeError err = { "" };
                MpeFrame f[2];
                MpePicture pic;
                if (mpe_frame_alloc(&f[0], rgb ? MPE_FRAME_RGB24 : MPE_FRAME_YUV420, w, h) < 0 ||
                    mpe_frame_alloc(&f[1], rgb ? MPE_FRAME_RGB24 : MPE_FRAME_YUV420, w, h) < 0 ||
                    mpe_picture_alloc(&pic, w, h) < 0) {
                    CHECK(t, 0, "out of memory");
                    return;
                }
                random_pair(&f[0], &f[1], &rng, sizes[i][2]);
                const size_t n = (size_t)pic.mb_width * pic.mb_height;
                uint32_t *want = malloc(n * sizeof(*want)), *got = malloc(n * sizeof(*got));
                int rc = want && got ? gpu_frontend_open(&fe, backend_under_test, &cfg, NULL, &err) : -ENOMEM;
                CHECK(t, rc == 0, "%s open: %s", backend_under_test, err.msg);
                for (int k = 0; k < 2 && rc == 0; k++) {
                    memset(got, 0xA5, n * sizeof(*got));
                    if ((rc = gpu_frontend_submit(fe, k, &f[k], &err)) < 0 ||
                        (rc = gpu_frontend_download(fe, k, &pic, NULL, &err)) < 0) {
                        CHECK(t, 0, "%s: %s", backend_under_test, err.msg);
                        break;
                    }
                    const int has = gpu_frontend_has_intra_costs(fe, k);
                    rc = gpu_frontend_intra_costs(fe, k, got, &err);
                    if (rc == -ENOSYS) {
                        CHECK(t, !has, "%s: has_intra_costs 1 but intra_costs -ENOSYS", backend_under_test);
                        /* the GPU backends count them beside the conversion */
                        CHECK(t, !asked || !strcmp(backend_under_test, "cpu"),
                              "%s: asked for intra costs, counted none", backend_under_test);
                        rc = 0;
                        continue;
                    }
                    CHECK(t, rc == 0 && has && asked, "%s %dx%d: intra costs (asked %d, has %d): %d %s",
                          backend_under_test, w, h, asked, has, rc, err.msg);
                    mpe_bdecide_intra_costs(want, &pic, mpe_sad16_c);
                    for (size_t m = 0; m < n && rc == 0; m++)
                        CHECK(t, got[m] == want[m] || (rc = -1),
                              "%s %dx%d %s frame %d mb %zu: intra cost %u, the host's %u", backend_under_test,
                              w, h, rgb ? "RGB" : "YUV", k, m, got[m], want[m]);
                }
                gpu_frontend_close(fe);
                free(want);
                free(got);
                mpe_picture_free(&pic);
                mpe_frame_free(&f[0]);
                mpe_frame_free(&f[1]);
            }
}

static void test_ring(TestCtx *t)
{
    static const int ranges[] = { 16, 5, 32, 64, 12, 1, 16, 48 };
    const int nframes = 8, w = 208, h = 144;
    TestRng rng = { 0xBADC0DE };
    for (int mode = 0; mode < 4; mode++) {
        /* slots 2 and 3, the full search and the hierarchical one (whose
         * co-located candidates are the reference slot's vectors) */
        const int slots = 2 + (mode & 1), hier = mode >> 1;
        const char *b[2] = { "cpu", backend_under_test };
        GpuFrontend *ctx[2] = { NULL, NULL };
        GpuConfig cfg = { .width = w, .height = h, .slots = slots, .device = -1, .pyramid = hier };
        MpeError err = { "" };
        MpeFrame f[2];
        Run out[2];
        int ok = 1;
        if (mpe_frame_alloc(&f[0], MPE_FRAME_RGB24, w, h) < 0 ||
            mpe_frame_alloc(&f[1], MPE_FRAME_RGB24, w, h) < 0 || run_alloc(&out[0], w, h, 0x11) < 0 ||
            run_alloc(&out[1], w, h, 0x22) < 0) {
            CHECK(t, 0, "out of memory");
            return;
        }
        for (int k = 0; k < 2; k++) {
            int rc = gpu_frontend_open(&ctx[k], b[k], &cfg, NULL, &err);
            if (rc < 0 && !(hier && rc == -ENOSYS)) {
                CHECK(t, 0, "%s open: %s", b[k], err.msg);
            }
            if (rc < 0)
                ok = 0;
        }
        random_pair(&f[0], &f[1], &rng, 256);
        for (int n = 0; ok && n <= nframes; n++) {
            /* frames alternate between a picture and its moved copy, so
             * every search has real minima; frame n goes to slot n % slots */
            const MpeFrame *fr = &f[n & 1];
            for (int k = 0; k < 2 && ok && n < nframes; k++) {
                if (gpu_frontend_submit(ctx[k], n % slots, fr, &err) < 0 ||
                    (n > 0 && !hier && gpu_frontend_search(ctx[k], n % slots, (n - 1) % slots,
                                                           ranges[n % 8], &err) < 0) ||
                    (n > 0 && hier && gpu_frontend_search_hier(ctx[k], n % slots, (n - 1) % slots,
                                                               ranges[n % 8] / 4, 127, &err) < 0)) {
                    CHECK(t, 0, "%s frame %d: %s", b[k], n, err.msg);
                    ok = 0;
                }
            }
            if (n > 0 && ok) {
                const int m = n - 1;   /* download the previous frame */
                for (int k = 0; k < 2 && ok; k++)
                    if (gpu_frontend_download(ctx[k], m % slots, &out[k].pic[0],
                                              m > 0 ? out[k].mv : NULL, &err) < 0) {
                        CHECK(t, 0, "%s download %d: %s", b[k], m, err.msg);
                        ok = 0;
                    }
                int c, y;
                if (ok && first_row_differing(&out[0].pic[0], &out[1].pic[0], &c, &y)) {
                    CHECK(t, 0, "slots %d frame %d plane %d row %d differs", slots, m, c, y);
                    ok = 0;
                }
                size_t nmb = (size_t)out[0].pic[0].mb_width * out[0].pic[0].mb_height;
                for (size_t i = 0; m > 0 && i < nmb && ok; i++) {
                    const GpuMotion *a = &out[0].mv[i], *g = &out[1].mv[i];
                    if (a->dx != g->dx || a->dy != g->dy || a->sad != g->sad || a->sad0 != g->sad0) {
                        CHECK(t, 0, "slots %d hier %d frame %d R=%d mb %zu: cpu (%d,%d) %u/%u, %s (%d,%d) %u/%u",
                              slots, hier, m, ranges[m % 8], i, a->dx, a->dy, a->sad, a->sad0,
                              b[1], g->dx, g->dy, g->sad, g->sad0);
                        ok = 0;
                    }
                }
            }
        }
        for (int k = 0; k < 2; k++)
            gpu_frontend_close(ctx[k]);
        mpe_frame_free(&f[0]);
        mpe_frame_free(&f[1]);
        run_free(&out[0]);
        run_free(&out[1]);
    }
}

static void test_solar_frames(TestCtx *t)
{
    const char *dir = getenv("SOLAR_DIR");
    char spec[1024];
    MpeInput *in = NULL;
    MpeError err;
    snprintf(spec, sizeof(spec), "%s/solar_%%d.png", dir ? dir : "../shared/solar");
    if (mpe_input_open(&in, spec, 0, &err) < 0) {
        test_skip(t, "no solar clip (../shared/solar or SOLAR_DIR)");
        return;
    }
    const MpeInputInfo *info = mpe_input_info(in);
    MpeFrame f0, f1;
    if (mpe_frame_alloc(&f0, info->format, info->width, info->height) < 0 ||
        mpe_frame_alloc(&f1, info->format, info->width, info->height) < 0) {
        CHECK(t, 0, "out of memory");
        mpe_input_close(in);
        return;
    }
    CHECK(t, mpe_input_read(in, &f0, &err) == 1 && mpe_input_read(in, &f1, &err) == 1, "read: %s", err.msg);
    /* R=64 on 2048^2 is minutes on a CPU OpenCL device; GPUs get it too */
    char why[256];
    compare(t, backend_under_test, &f0, &f1, 16, 0, "solar 0-1");
    if (getenv("MPE_TEST_SOLAR_R64") && backend_probe(backend_under_test, 1, why, sizeof(why)) == 0)
        compare(t, backend_under_test, &f0, &f1, 64, 0, "solar 0-1");
    /* the hierarchical search at its defaults (window 4, reach 127); on a
     * GPU also at its widest (16, 255) */
    compare(t, backend_under_test, &f0, &f1, 4, 127, "solar 0-1");
    if (backend_probe(backend_under_test, 1, why, sizeof(why)) == 0)
        compare(t, backend_under_test, &f0, &f1, 16, 255, "solar 0-1");
    mpe_frame_free(&f0);
    mpe_frame_free(&f1);
    mpe_input_close(in);
}

static void test_bad_device(TestCtx *t)
{
    GpuFrontend *ctx = NULL;
    MpeError err = { "" };
    GpuConfig cfg = { .width = 64, .height = 64, .slots = 2, .device = 63 };
    int rc = gpu_frontend_open(&ctx, backend_under_test, &cfg, NULL, &err);
    CHECK(t, rc < 0 && strstr(err.msg, "63"), "device 63 accepted or unclear error: '%s'", err.msg);
    gpu_frontend_close(ctx);
}

/* Two random RGB frames, the second a shifted copy of the first (random_pair
 * from seed), and two Runs to download into, their sentinels unlike: 1, or
 * 0 (checked as a failure, nothing left allocated). */
static void pair_free(MpeFrame f[2], Run out[2]);

static int pair_alloc(TestCtx *t, MpeFrame f[2], Run out[2], int w, int h, unsigned long long seed)
{
    TestRng rng = { seed };
    memset(f, 0, 2 * sizeof(*f));
    memset(out, 0, 2 * sizeof(*out));
    if (mpe_frame_alloc(&f[0], MPE_FRAME_RGB24, w, h) < 0 ||
        mpe_frame_alloc(&f[1], MPE_FRAME_RGB24, w, h) < 0 || run_alloc(&out[0], w, h, 0x11) < 0 ||
        run_alloc(&out[1], w, h, 0x22) < 0) {
        CHECK(t, 0, "out of memory");
        pair_free(f, out);
        return 0;
    }
    random_pair(&f[0], &f[1], &rng, 256);
    return 1;
}

static void pair_free(MpeFrame f[2], Run out[2])
{
    mpe_frame_free(&f[0]);
    mpe_frame_free(&f[1]);
    run_free(&out[0]);
    run_free(&out[1]);
}

/* gpu_frontend_open_async: the first frames go to the cpu front end while
 * the backend opens, later ones to the backend once gpu_frontend_ready says
 * it is there; planes and vectors as a cpu front end's.  Full search: frame
 * 0 on the cpu front end, frames 1-5 on the backend (frame 1 searched
 * against frame 0, which moves over).  Hierarchical search (whose
 * candidates include the reference's own vectors): frames 0 (intra) and 1
 * on the cpu front end before ready, 2 still there (its reference 1 has
 * vectors), 3 (intra, not searched) too, 4 and 5 on the backend.  A bad
 * device fails at ready() (or at a submit after the failure), not open. */
static void test_async_open(TestCtx *t)
{
    const int w = 208, h = 144, slots = 3, nframes = 6;
    GpuFrontend *ctx[2] = { NULL, NULL };
    MpeError err = { "" };
    MpeFrame f[2];
    Run out[2];

    if (!pair_alloc(t, f, out, w, h, 0xA5A5))
        return;
    for (int hier = 0; hier < 2; hier++) {
        GpuConfig cfg = { .width = w, .height = h, .slots = slots, .device = -1, .pyramid = hier };
        const int ready_after = hier ? 1 : 0;
        int ok = 1, early = 1;   /* early: frame 0 went to the cpu front end */
        int moved_at = -1;       /* the first frame on the backend */
        ctx[0] = ctx[1] = NULL;
        CHECK(t, gpu_frontend_open(&ctx[0], "cpu", &cfg, NULL, &err) == 0, "cpu open: %s", err.msg);
        CHECK(t, gpu_frontend_open_async(&ctx[1], backend_under_test, &cfg, NULL, &err) == 0,
              "async open (hier %d): %s", hier, err.msg);
        for (int n = 0; ok && n < nframes && ctx[0] && ctx[1]; n++) {
            const int intra = n == 0 || (hier && n == 3), slot = n % slots;
            for (int k = 0; k < 2 && ok; k++)
                if (gpu_frontend_submit(ctx[k], slot, &f[n & 1], &err) < 0 ||
                    (!intra && !hier &&
                     gpu_frontend_search(ctx[k], slot, (n - 1) % slots, 16, &err) < 0) ||
                    (!intra && hier &&
                     gpu_frontend_search_hier(ctx[k], slot, (n - 1) % slots, 4, 127, &err) < 0) ||
                    gpu_frontend_download(ctx[k], slot, &out[k].pic[0], intra ? NULL : out[k].mv,
                                          &err) < 0) {
                    CHECK(t, 0, "hier %d frame %d on %s: %s", hier, n, k ? "async" : "cpu", err.msg);
                    ok = 0;
                }
            if (!ok)
                break;
            /* planes on the host: the frame is on the cpu front end (the
             * backend has none of its own) */
            const int on_cpu = gpu_frontend_host_planes(ctx[1], slot) != NULL;
            if (n == 0)
                early = on_cpu;
            /* the move comes at a submit after the open finished (which may
             * be before ready() under a light load), never back, at the
             * latest right after ready() (full search) or after the next
             * intra frame (hier: frame 3), and with hier only right after
             * an intra frame (0 or 3) */
            if (early && !on_cpu && moved_at < 0) {
                moved_at = n;
                CHECK(t, !hier || n == 1 || n == 4, "hier %d: moved at frame %d", hier, n);
            }
            if (early)
                CHECK(t, moved_at < 0 || !on_cpu, "hier %d frame %d back on the cpu front end", hier, n);
            if (early && n == (hier ? 4 : ready_after + 1))
                CHECK(t, moved_at >= 0, "hier %d: not moved by frame %d", hier, n);
            if (n == ready_after)
                CHECK(t, gpu_frontend_ready(ctx[1], &err) == 0, "ready: %s", err.msg);
            int c, y;
            if (ok && first_row_differing(&out[0].pic[0], &out[1].pic[0], &c, &y)) {
                CHECK(t, 0, "hier %d frame %d plane %d row %d differs", hier, n, c, y);
                ok = 0;
            }
            const size_t nmb = (size_t)out[0].pic[0].mb_width * out[0].pic[0].mb_height;
            for (size_t i = 0; !intra && i < nmb && ok; i++)
                if (memcmp(&out[0].mv[i], &out[1].mv[i], sizeof(out[0].mv[i]))) {
                    CHECK(t, 0, "hier %d frame %d mb %zu: cpu (%d,%d) %u, async (%d,%d) %u", hier, n, i,
                          out[0].mv[i].dx, out[0].mv[i].dy, out[0].mv[i].sad, out[1].mv[i].dx,
                          out[1].mv[i].dy, out[1].mv[i].sad);
                    ok = 0;
                }
        }
        if (!early)
            printf("     hier %d: the backend opened before frame 0: the move was not exercised\n", hier);
        CHECK(t, ctx[1] && !strcmp(gpu_frontend_name(ctx[1]), backend_under_test), "async name '%s'",
              ctx[1] ? gpu_frontend_name(ctx[1]) : "");
        gpu_frontend_close(ctx[0]);
        gpu_frontend_close(ctx[1]);
    }
    ctx[1] = NULL;
    GpuConfig cfg = { .width = w, .height = h, .slots = slots, .device = -1 };

    /* a device that does not exist: the open succeeds (the cpu front end
     * takes the frames), the first submit after the failure and ready()
     * report it (the failure may come before frame 0's submit or after) */
    cfg.device = 63;
    CHECK(t, gpu_frontend_open_async(&ctx[1], backend_under_test, &cfg, NULL, &err) == 0,
          "async open of device 63 failed at once: %s", err.msg);
    if (ctx[1]) {
        err.msg[0] = '\0';
        if (gpu_frontend_submit(ctx[1], 0, &f[0], &err) < 0)
            CHECK(t, strstr(err.msg, "63"), "device 63: submit '%s'", err.msg);
        err.msg[0] = '\0';
        CHECK(t, gpu_frontend_ready(ctx[1], &err) < 0 && strstr(err.msg, "63"),
              "device 63: ready() '%s'", err.msg);
        gpu_frontend_close(ctx[1]);
    }
    pair_free(f, out);
}

/* gpu_frontend_finish: the input ended before the backend opened, so the
 * open stops after its step in progress (normally right after the probe:
 * the caller's word comes microseconds after the task starts).  Whether it
 * stopped or not, the frames' planes and vectors are the cpu front end's,
 * ready() is no error, the name is the backend's, and close frees all.
 * Of up to 5 such opens, one at least must have stopped ("not opened"). */
/* The encoder's pipeline on an asynchronous open: until the move, stage
 * says -EAGAIN and the frame is submitted whole (to the cpu front end,
 * then where the move is decided: test_async_open's rules); after it,
 * YUV frames are staged (copied, the caller's frame overwritten,
 * committed) on the backend.  Every frame's planes and vectors must be the
 * cpu front end's. */
static void test_async_staged(TestCtx *t)
{
    const int w = 208, h = 144, slots = 3, nframes = 7;
    const size_t bytes = (size_t)w * h + 2 * (size_t)(w / 2) * (h / 2);
    TestRng rng = { 0xA57A6E };
    for (int hier = 0; hier < 2; hier++) {
        GpuConfig cfg = { .width = w, .height = h, .slots = slots, .device = -1, .pyramid = hier };
        GpuFrontend *ctx[2] = { NULL, NULL };
        MpeError err = { "" };
        MpeFrame f[2], scratch;
        Run out[2];
        int ok = 1, whole = 0, staged_after = 0, rc;
        if (mpe_frame_alloc(&f[0], MPE_FRAME_YUV420, w, h) < 0 ||
            mpe_frame_alloc(&f[1], MPE_FRAME_YUV420, w, h) < 0 ||
            mpe_frame_alloc(&scratch, MPE_FRAME_YUV420, w, h) < 0 || run_alloc(&out[0], w, h, 0x11) < 0 ||
            run_alloc(&out[1], w, h, 0x22) < 0) {
            CHECK(t, 0, "out of memory");
            return;
        }
        random_pair(&f[0], &f[1], &rng, 256);
        CHECK(t, gpu_frontend_open(&ctx[0], "cpu", &cfg, NULL, &err) == 0 || (ok = 0), "cpu open: %s", err.msg);
        CHECK(t, gpu_frontend_open_async(&ctx[1], backend_under_test, &cfg, NULL, &err) == 0 || (ok = 0),
              "async open (hier %d): %s", hier, err.msg);
        for (int n = 0; ok && n < nframes; n++) {
            const int intra = n == 0 || (hier && n == 3), slot = n % slots, ref = (n + slots - 1) % slots;
            GpuStaged st;
            rc = gpu_frontend_submit(ctx[0], slot, &f[n & 1], &err);
            if (rc == 0) {
                memcpy(scratch.alloc, f[n & 1].alloc, bytes);
                rc = gpu_frontend_stage(ctx[1], slot, &scratch, &st, &err);
                if (rc == -EAGAIN) {
                    whole++;
                    rc = gpu_frontend_submit(ctx[1], slot, &f[n & 1], &err);
                } else if (rc == 0) {
                    gpu_frontend_stage_copy(&st);
                    memset(scratch.alloc, 0x77, bytes);
                    rc = gpu_frontend_commit(ctx[1], slot, &st, &err);
                    staged_after = whole > 0;
                }
            }
            for (int k = 0; k < 2 && rc == 0 && !intra; k++)
                rc = hier ? gpu_frontend_search_hier(ctx[k], slot, ref, 4, 127, &err)
                          : gpu_frontend_search(ctx[k], slot, ref, 16, &err);
            for (int k = 0; k < 2 && rc == 0; k++)
                rc = gpu_frontend_download(ctx[k], slot, &out[k].pic[0], intra ? NULL : out[k].mv, &err);
            CHECK(t, rc == 0 || (ok = 0), "hier %d frame %d: %s", hier, n, err.msg);
            int c, y;
            if (ok && first_row_differing(&out[0].pic[0], &out[1].pic[0], &c, &y)) {
                CHECK(t, 0, "hier %d frame %d plane %d row %d differs from the cpu front end's", hier, n, c,
                      y);
                ok = 0;
            }
            const size_t nmb = (size_t)out[0].pic[0].mb_width * out[0].pic[0].mb_height;
            CHECK(t, !ok || intra || !memcmp(out[0].mv, out[1].mv, nmb * sizeof(*out[0].mv)) || (ok = 0),
                  "hier %d frame %d: vectors differ from the cpu front end's", hier, n);
            if (n == 1)
                CHECK(t, gpu_frontend_ready(ctx[1], &err) == 0 || (ok = 0), "ready: %s", err.msg);
        }
        /* frames went through whole up to the move, and later ones were
         * staged: on the backend */
        CHECK(t, !ok || (whole >= 1 && staged_after), "hier %d: %d frames whole, staged after them %d",
              hier, whole, staged_after);
        gpu_frontend_close(ctx[0]);
        gpu_frontend_close(ctx[1]);
        run_free(&out[0]);
        run_free(&out[1]);
        mpe_frame_free(&f[0]);
        mpe_frame_free(&f[1]);
        mpe_frame_free(&scratch);
    }
}

static void test_finish_early(TestCtx *t)
{
    const int w = 208, h = 144;
    TestLog lines = { "", 0 };
    MpeLog log = { test_log_capture, &lines, MPE_LOG_INFO };
    GpuConfig cfg = { .width = w, .height = h, .slots = 3, .device = -1, .log = &log };
    GpuFrontend *ctx[2] = { NULL, NULL };
    MpeError err = { "" };
    MpeFrame f[2];
    Run out[2];

    if (!pair_alloc(t, f, out, w, h, 0x5EED))
        return;
    CHECK(t, gpu_frontend_open(&ctx[0], "cpu", &cfg, NULL, &err) == 0, "cpu open: %s", err.msg);
    CHECK(t, gpu_frontend_open_async(&ctx[1], backend_under_test, &cfg, &log, &err) == 0,
          "async open: %s", err.msg);
    if (ctx[1])
        gpu_frontend_finish(ctx[1]);
    for (int n = 0; n < 2 && ctx[0] && ctx[1]; n++)
        for (int k = 0; k < 2; k++)
            CHECK(t, gpu_frontend_submit(ctx[k], n, &f[n], &err) == 0 &&
                     (!n || gpu_frontend_search(ctx[k], n, n - 1, 16, &err) == 0) &&
                     gpu_frontend_download(ctx[k], n, &out[k].pic[0], n ? out[k].mv : NULL, &err) == 0,
                  "frame %d on %s: %s", n, k ? "async" : "cpu", err.msg);
    const size_t nmb = (size_t)out[0].pic[0].mb_width * out[0].pic[0].mb_height;
    CHECK(t, !memcmp(out[0].mv, out[1].mv, nmb * sizeof(out[0].mv[0])), "vectors differ");
    int c, y;
    CHECK(t, !first_row_differing(&out[0].pic[0], &out[1].pic[0], &c, &y), "planes differ");
    CHECK(t, ctx[1] && gpu_frontend_ready(ctx[1], &err) == 0, "ready: %s", err.msg);
    CHECK(t, ctx[1] && !strcmp(gpu_frontend_name(ctx[1]), backend_under_test), "name '%s'",
          ctx[1] ? gpu_frontend_name(ctx[1]) : "");
    gpu_frontend_close(ctx[0]);
    gpu_frontend_close(ctx[1]);
    pair_free(f, out);
    for (int i = 0; i < 4 && !strstr(lines.text, "not opened"); i++) {
        lines.len = 0;
        lines.text[0] = '\0';
        CHECK(t, gpu_frontend_open_async(&ctx[1], backend_under_test, &cfg, &log, &err) == 0,
              "async open: %s", err.msg);
        if (!ctx[1])
            break;
        gpu_frontend_finish(ctx[1]);
        CHECK(t, gpu_frontend_ready(ctx[1], &err) == 0, "ready: %s", err.msg);
        gpu_frontend_close(ctx[1]);
    }
    CHECK(t, strstr(lines.text, "not opened"), "5 opens went on after gpu_frontend_finish: %s",
          lines.text);
}

static char g_cache_dir[64];

/* The number of ocl-*.bin files in the test's cache directory, and the
 * path of one (the newest name seen). */
static int cache_files(char *path, size_t size)
{
    char dir[128];
    int n = 0;
    snprintf(dir, sizeof(dir), "%s/mpegenc", g_cache_dir);
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (!strncmp(de->d_name, "ocl-", 4) && strstr(de->d_name, ".bin") &&
            !strstr(de->d_name, ".tmp")) {
            snprintf(path, size, "%s/%s", dir, de->d_name);
            n++;
        }
    if (d)
        closedir(d);
    return n;
}

/* OpenCL's compiled program cache: a build leaves one file, a second open
 * loads it (same results), a damaged file is rebuilt over. */
static void test_program_cache(TestCtx *t)
{
    MpeFrame f0, f1;
    TestRng rng = { 0x5EED };
    char path[512] = "";
    struct stat st;
    if (strcmp(backend_under_test, "opencl")) {
        test_skip(t, "only OpenCL builds programs at run time");
        return;
    }
    if (mpe_frame_alloc(&f0, MPE_FRAME_RGB24, 96, 64) < 0 || mpe_frame_alloc(&f1, MPE_FRAME_RGB24, 96, 64) < 0) {
        CHECK(t, 0, "out of memory");
        return;
    }
    random_pair(&f0, &f1, &rng, 256);
    compare(t, backend_under_test, &f0, &f1, 16, 0, "first build");
    CHECK(t, cache_files(path, sizeof(path)) == 1, "%d program files after a build", cache_files(path, sizeof(path)));
    compare(t, backend_under_test, &f0, &f1, 16, 0, "from the cache");
    CHECK(t, cache_files(path, sizeof(path)) == 1, "%d program files after a load", cache_files(path, sizeof(path)));
    FILE *f = fopen(path, "wb");
    CHECK(t, f && fputs("not a program", f) >= 0 && fclose(f) == 0, "cannot damage %s", path);
    compare(t, backend_under_test, &f0, &f1, 16, 0, "damaged cache file");
    CHECK(t, stat(path, &st) == 0 && st.st_size > 100, "the damaged file was not rebuilt over (%ld bytes)",
          (long)st.st_size);
    mpe_frame_free(&f0);
    mpe_frame_free(&f1);
}

/* --backend auto and the run's length (gpu_auto_wants_gpu): a run too short
 * to gain from a GPU opens the cpu backend at once, probing no GPU (which
 * loads its driver: 0.1-0.2 s for CUDA on the H100 machine); an unknown
 * length (0) or a long run keeps the GPU. */
static void test_auto_length(TestCtx *t)
{
    TestLog lines = { "", 0 };
    MpeLog log = { test_log_capture, &lines, MPE_LOG_INFO };
    GpuConfig cfg = { .width = 208, .height = 144, .slots = 3, .device = -1, .length = 1, .log = &log };
    GpuFrontend *fe = NULL;
    MpeError err = { "" };

    CHECK(t, gpu_auto_wants_gpu(2048, 2048, 0), "unknown length: no GPU");
    CHECK(t, !gpu_auto_wants_gpu(2048, 2048, 1), "1 frame at 2048^2: a GPU");
    CHECK(t, !gpu_auto_wants_gpu(2048, 2048, 63), "63 frames at 2048^2: a GPU");
    CHECK(t, gpu_auto_wants_gpu(2048, 2048, 64), "64 frames at 2048^2: no GPU");
    CHECK(t, gpu_auto_wants_gpu(4095, 4095, 1000000), "a long 4095^2 run: no GPU");
    CHECK(t, !gpu_auto_wants_gpu(352, 288, 1000), "1000 CIF frames: a GPU");
    CHECK(t, gpu_frontend_open_async(&fe, "auto", &cfg, &log, &err) == 0, "open: %s", err.msg);
    CHECK(t, fe && !strcmp(gpu_frontend_name(fe), "cpu"), "1 frame on '%s'", fe ? gpu_frontend_name(fe) : "");
    CHECK(t, strstr(lines.text, "no GPU opened") && !strstr(lines.text, "unavailable"),
          "the log of a 1-frame auto open: %s", lines.text);
    gpu_frontend_close(fe);
}

int main(void)
{
    TestCtx t;
    int tested = 0;
    /* compiled OpenCL programs go to a cache of the test's own, not ~/.cache */
    snprintf(g_cache_dir, sizeof(g_cache_dir), "/tmp/mpe_test_gpu_fe.XXXXXX");
    if (!mkdtemp(g_cache_dir)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("XDG_CACHE_HOME", g_cache_dir, 1);
    unsetenv("MPE_OCL_CACHE");
    test_init(&t, "gpu_frontend");
    for (const GpuBackend *const *b = gpu_backend_list(); *b; b++) {
        char why[256] = "", name[64];
        if (!strcmp(gpu_backend_name(*b), "cpu"))
            continue;
        tested++;
        backend_under_test = gpu_backend_name(*b);
        int usable = gpu_backend_probe(*b, 0, why, sizeof(why)) == 0;
        if (usable)
            printf("     %s: %s\n", backend_under_test, why);
        static const struct { const char *name; void (*fn)(TestCtx *); } cases[] = {
            { "random-frames-vs-cpu", test_random_frames },
            { "ring-of-slots-vs-cpu", test_ring },
            { "staged-vs-submit", test_staged },
            { "intra-costs-vs-host", test_intra_costs },
            { "hier-pans-vs-cpu", test_pans },
            { "solar-vs-cpu", test_solar_frames },
            { "bad-device-index", test_bad_device },
            { "async-open-vs-cpu", test_async_open },
            { "async-open-staged", test_async_staged },
            { "finish-before-open", test_finish_early },
            { "program-cache", test_program_cache },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            snprintf(name, sizeof(name), "%s/%s", backend_under_test, cases[i].name);
            if (usable) {
                test_run(&t, name, cases[i].fn);
            } else {
                t.case_name = name;
                test_skip(&t, why);
                t.skipped++;
            }
        }
    }
    test_run(&t, "auto-short-run-on-cpu", test_auto_length);
    backend_under_test = "cpu";
    test_run(&t, "cpu/staged-vs-submit", test_staged);
    test_run(&t, "cpu/intra-costs-vs-host", test_intra_costs);
    if (!tested) {
        t.case_name = "all";
        test_skip(&t, "no GPU backend compiled in (OpenCL headers/loader missing at build time)");
        t.skipped++;
    }
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_cache_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_cache_dir);
    return test_finish(&t);
}
