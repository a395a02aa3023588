/* test_chunks — chunks coded apart concatenate into the continuous encode
 * (encoder.h: mpe_encoder_start_chunk), the invariant mpegenc-mpi rests on,
 * checked without MPI: one encoder codes 40 frames of a moving pattern in
 * one go; then fresh encoders code each chunk of --chunk-gops 1 --gop 6
 * (chunks 0..6, the last 4 frames) in a scrambled order, without
 * sequence_end_code but the last; their bytes, in frame order, must be the
 * continuous stream byte for byte, in constant-quantiser, PSNR-target and
 * bit-rate modes.  One encoder taking several chunks in a row (as a rank
 * does) must give the same bytes, and a frame that does not begin a chunk
 * is refused.  With scene cuts (the picture inverted at frames 3, 11, 17,
 * 26, 35 and 36: inside a GOP, on a chunk's last frame and on a chunk's
 * first) every cut must be an I picture and the GOP phase, which restarts
 * at a cut, must still give chunks that code apart into the same bytes. */
#include "encoder/encoder.h"
#include "tests/test.h"

#define W 96
#define H 64
#define N_FRAMES 40
#define GOP 6

static const int cuts[] = { 3, 11, 17, 26, 35, 36 };
#define N_CUTS ((int)(sizeof(cuts) / sizeof(cuts[0])))

/* frame n: a diagonal gradient moving 2 pels right and 1 down per frame, and
 * noise; with_cuts: inverted after an odd number of cuts */
static void make_frame(MpeFrame *f, int n, int with_cuts)
{
    TestRng rng = { 0x9E3779B97F4A7C15ULL ^ (unsigned long long)(n + 1) };
    int inverted = 0;
    for (int i = 0; i < N_CUTS; i++)
        inverted ^= with_cuts && n >= cuts[i];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const uint8_t v = (uint8_t)(((x - 2 * n) * 3 + (y - n) * 5) & 0xFF) / 2 +
                              (uint8_t)(test_rand(&rng) % 16);
            f->data[0][y * f->stride[0] + x] = inverted ? 255 - v : v;
        }
    for (int c = 1; c < 3; c++)
        for (int y = 0; y < H / 2; y++)
            for (int x = 0; x < W / 2; x++)
                f->data[c][y * f->stride[c] + x] = (uint8_t)(96 + c * 20 + ((x + y + n) & 15));
}

typedef struct Buf {
    uint8_t *data;
    size_t size;
} Buf;

static int append(Buf *b, const MpeOutput *o)
{
    uint8_t *d = realloc(b->data, b->size + o->size + 1);
    if (!d)
        return -1;
    if (o->size)   /* the flush's last calls may bring no bytes (and no buffer) */
        memcpy(d + b->size, o->data, o->size);
    b->data = d;
    b->size += o->size;
    return 0;
}

static void set_mode(MpeParam *p, int mode)
{
    mpe_param_default(p);
    p->width = W;
    p->height = H;
    p->gop = GOP;
    p->chunk_gops = mode == 3 ? 2 : 1;
    p->bframes = mode == 3 ? 2 : -1;
    p->threads = 1;
    p->format = MPE_FORMAT_MPEG2;
    strcpy(p->backend, "cpu");
    if (mode == 1 || mode == 4)
        p->target_psnr = 34;
    else if (mode == 2)
        p->bitrate = 400000;
}

/* frames [first, first + n) on enc, from the chunk at first; flush with or
 * without end code; each picture's type into types[display index] */
static int code_frames(MpeEncoder *enc, MpeFrame *f, int first, int n, int last, int with_cuts,
                       Buf *out, char *types, MpeError *err)
{
    MpeOutput o;
    MpeFrameStats fs;
    if (mpe_encoder_start_chunk(enc, first, last, err) < 0)
        return -1;
    /* the flush until nothing comes out (B pictures: several calls) */
    for (int i = 0, more = 1; more; i++) {
        if (i < n)
            make_frame(f, first + i, with_cuts);
        if (mpe_encode_frame(enc, i < n ? f : NULL, &o, err) < 0 || append(out, &o) < 0)
            return -1;
        more = i < n || o.size || o.have_picture;
        while (mpe_encoder_pop_stats(enc, &fs))
            if (types && fs.display_index >= 0 && fs.display_index < N_FRAMES)
                types[fs.display_index] = fs.type;
    }
    return 0;
}

static void check_mode(TestCtx *t, int mode)
{
    MpeParam p;
    MpeEncoder *enc = NULL;
    MpeFrame f;
    MpeError err = { "" };
    Buf whole = { 0 }, parts[8] = { { 0 } }, rank = { 0 };
    static const int order[] = { 3, 0, 6, 5, 1, 4, 2 };   /* any order a queue might give */
    const int with_cuts = mode >= 3;
    char types[N_FRAMES] = { 0 };

    set_mode(&p, mode);
    const int len = p.chunk_gops * GOP, n_chunks = (N_FRAMES + len - 1) / len;
    CHECK(t, mpe_frame_alloc(&f, MPE_FRAME_YUV420, W, H) == 0, "frame alloc");
    CHECK(t, mpe_encoder_open(&enc, &p, NULL, &err) == 0, "open: %s", err.msg);
    if (t->case_failed)
        return;
    CHECK(t, mpe_encoder_chunk_frames(enc) == len, "chunk frames %d", mpe_encoder_chunk_frames(enc));
    CHECK(t, code_frames(enc, &f, 0, N_FRAMES, 1, with_cuts, &whole, types, &err) == 0, "whole: %s",
          err.msg);
    mpe_encoder_close(enc);
    for (int i = 0; with_cuts && i < N_CUTS; i++)
        CHECK(t, types[cuts[i]] == 'I', "scene cut at frame %d coded as %c", cuts[i], types[cuts[i]]);
    for (int n = 1; n < N_FRAMES; n++) {
        int since_i = 0;
        while (since_i < n && types[n - since_i] != 'I')
            since_i++;
        CHECK(t, since_i < GOP, "frame %d: %d pictures after the last I, more than --gop %d", n,
              since_i, GOP);
    }

    for (int k = 0; k < 7; k++) {
        const int c = order[k], first = c * len, n = MPE_MIN(len, N_FRAMES - first);
        if (c >= n_chunks)
            continue;
        enc = NULL;
        CHECK(t, mpe_encoder_open(&enc, &p, NULL, &err) == 0, "open: %s", err.msg);
        if (enc)
            CHECK(t, code_frames(enc, &f, first, n, c == n_chunks - 1, with_cuts, &parts[c], NULL,
                                 &err) == 0,
                  "chunk %d: %s", c, err.msg);
        mpe_encoder_close(enc);
    }
    Buf cat = { 0 };
    for (int c = 0; c < n_chunks; c++) {
        MpeOutput o = { .data = parts[c].data, .size = parts[c].size };
        CHECK(t, append(&cat, &o) == 0, "oom");
    }
    CHECK(t, cat.size == whole.size && !memcmp(cat.data, whole.data, whole.size),
          "chunks coded apart: %zu bytes, the continuous encode %zu", cat.size, whole.size);

    /* one encoder, several chunks one after the other (a rank's life) */
    enc = NULL;
    CHECK(t, mpe_encoder_open(&enc, &p, NULL, &err) == 0, "open: %s", err.msg);
    if (enc) {
        CHECK(t, mpe_encoder_start_chunk(enc, len + 1, 0, &err) < 0, "frame %d accepted as a chunk start", len + 1);
        /* a later chunk first, then an earlier one (5 then 2 of 7) */
        const int c0 = n_chunks - 2, c1 = MPE_MAX(c0 - 3, 0);
        for (int i = 0; i < 2; i++)
            CHECK(t, code_frames(enc, &f, (i ? c1 : c0) * len, len, 0, with_cuts, &rank, NULL, &err) == 0,
                  "chunk %d: %s", i ? c1 : c0, err.msg);
        CHECK(t, rank.size == parts[c0].size + parts[c1].size &&
                     !memcmp(rank.data, parts[c0].data, parts[c0].size) &&
                     !memcmp(rank.data + parts[c0].size, parts[c1].data, parts[c1].size),
              "chunks %d then %d on one encoder differ from each on its own", c0, c1);
    }
    mpe_encoder_close(enc);
    free(cat.data);
    free(whole.data);
    free(rank.data);
    for (int c = 0; c < 8; c++)
        free(parts[c].data);
    mpe_frame_free(&f);
}

static void test_q(TestCtx *t) { check_mode(t, 0); }
static void test_psnr(TestCtx *t) { check_mode(t, 1); }
static void test_bitrate(TestCtx *t) { check_mode(t, 2); }
static void test_cuts_q(TestCtx *t) { check_mode(t, 3); }
static void test_cuts_psnr(TestCtx *t) { check_mode(t, 4); }

int main(void)
{
    TestCtx t;
    test_init(&t, "chunks");
    test_run(&t, "q", test_q);
    test_run(&t, "target-psnr", test_psnr);
    test_run(&t, "bitrate", test_bitrate);
    test_run(&t, "scenecut-q-bframes2", test_cuts_q);
    test_run(&t, "scenecut-target-psnr", test_cuts_psnr);
    return test_finish(&t);
}
