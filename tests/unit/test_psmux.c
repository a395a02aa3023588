/* test_psmux.c — the program / system stream writer (cli/psmux.h).
 *
 * The written bytes are parsed here with the field layouts of ISO/IEC
 * 13818-1 Table 2-33 (pack header) and 2-21 (PES packet) and 11172-1
 * §2.4.3.2/2.4.3.3, written out again rather than taken from psmux.c:
 * time stamps per picture (PTS only without reordering, PTS and DTS with
 * it), SCR never after the decoding time of the data in its pack, packs
 * within MPE_PS_PACK_BYTES, the payload reassembling to the input, the end
 * code.  The end-to-end script tests/e2e/ps.sh runs ffmpeg and libmpeg2 on
 * real encodes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/psmux.h"
#include "tests/test.h"

typedef struct Parsed {
    int packs, packets, max_pack;
    int64_t pts[16], dts[16];   /* per packet with stamps, in order; dts -1 when absent */
    int64_t scr_at[16];         /* SCR of the pack holding it */
    int stamps;
    int scr_backwards, end_code;
    uint8_t *payload;
    size_t payload_len;
} Parsed;

static int64_t read_ts(const uint8_t *b)
{
    return (int64_t)((b[0] >> 1) & 7) << 30 | (int64_t)b[1] << 22 | (int64_t)(b[2] >> 1) << 15 |
           (int64_t)b[3] << 7 | b[4] >> 1;
}

static void parse(const uint8_t *d, size_t n, int mpeg2, Parsed *p)
{
    size_t pos = 0, pack_start = 0;
    int64_t scr = -1, last = -1;
    memset(p, 0, sizeof(*p));
    p->payload = malloc(n);
    while (p->payload && pos + 4 <= n && d[pos] == 0 && d[pos + 1] == 0 && d[pos + 2] == 1) {
        const uint8_t code = d[pos + 3];
        if (code == 0xB9) {
            p->end_code = pos + 4 == n;
            if (pos - pack_start > (size_t)p->max_pack)
                p->max_pack = (int)(pos - pack_start);
            return;
        }
        if (code == 0xBA) {
            const uint8_t *b = d + pos + 4;
            if (p->packs && pos - pack_start > (size_t)p->max_pack)
                p->max_pack = (int)(pos - pack_start);
            pack_start = pos;
            p->packs++;
            if (mpeg2)
                scr = (int64_t)((b[0] >> 3) & 7) << 30 | (int64_t)(b[0] & 3) << 28 |
                      (int64_t)b[1] << 20 | (int64_t)(b[2] >> 3) << 15 | (int64_t)(b[2] & 3) << 13 |
                      (int64_t)b[3] << 5 | b[4] >> 3;
            else
                scr = read_ts(b);
            p->scr_backwards |= scr < last;
            last = scr;
            pos += mpeg2 ? 14 : 12;
            continue;
        }
        const size_t len = (size_t)d[pos + 4] << 8 | d[pos + 5];
        const uint8_t *b = d + pos + 6;
        if (code == 0xE0) {
            size_t hdr;
            int64_t pts = -1, dts = -1;
            if (mpeg2) {
                const int flags = b[1] >> 6;
                hdr = 3 + b[2];
                if (flags & 2)
                    pts = read_ts(b + 3);
                if (flags == 3)
                    dts = read_ts(b + 8);
            } else {
                hdr = b[0] == 0x0F ? 1 : (b[0] >> 4) == 3 ? 10 : 5;
                if (b[0] != 0x0F)
                    pts = read_ts(b);
                if ((b[0] >> 4) == 3)
                    dts = read_ts(b + 5);
            }
            if (pts >= 0 && p->stamps < 16) {
                p->pts[p->stamps] = pts;
                p->dts[p->stamps] = dts;
                p->scr_at[p->stamps] = scr;
                p->stamps++;
            }
            memcpy(p->payload + p->payload_len, b + hdr, len - hdr);
            p->payload_len += len - hdr;
            p->packets++;
        }
        pos += 6 + len;
    }
}

/* Four pictures of `size` bytes each (a start code then a counter), in
 * coding order I0 P3 B1 B2 when reorder, else display order 0..3. */
static uint8_t *mux(int mpeg2, int reorder, size_t size, size_t *out_len, uint8_t **es,
                    size_t *es_len, TestCtx *t)
{
    static const int display_reordered[4] = { 0, 3, 1, 2 };
    MpePsMux *m;
    MpeError err;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    uint8_t *pic = malloc(size);
    *es = malloc(4 * size + 4);
    *es_len = 0;
    CHECK(t, f && pic && *es, "out of memory");
    if (!f || !pic || !*es)
        return NULL;
    CHECK(t, mpe_ps_open(&m, mpeg2, 30000, 1001, reorder, 0, &err) == 0, "%s", err.msg);
    for (int c = 0; c < 4; c++) {
        memset(pic, 0x5A, size);
        pic[0] = pic[1] = 0;
        pic[2] = 1;
        pic[3] = 0x00;   /* picture_start_code */
        pic[4] = (uint8_t)c;
        CHECK(t, mpe_ps_write(m, f, pic, size, 1, reorder ? display_reordered[c] : c, c, &err) == 0,
              "%s", err.msg);
        memcpy(*es + *es_len, pic, size);
        *es_len += size;
    }
    static const uint8_t end[4] = { 0, 0, 1, 0xB7 };
    CHECK(t, mpe_ps_write(m, f, end, 4, 0, 0, 0, &err) == 0, "%s", err.msg);
    memcpy(*es + *es_len, end, 4);
    *es_len += 4;
    CHECK(t, mpe_ps_finish(m, f, &err) == 0, "%s", err.msg);
    mpe_ps_close(m);
    fclose(f);
    free(pic);
    *out_len = len;
    return (uint8_t *)buf;
}

static void check_stream(TestCtx *t, int mpeg2, int reorder, size_t size)
{
    size_t len, es_len;
    uint8_t *es = NULL;
    uint8_t *d = mux(mpeg2, reorder, size, &len, &es, &es_len, t);
    Parsed p;
    if (!d) {
        free(es);
        return;
    }
    parse(d, len, mpeg2, &p);
    CHECK(t, p.end_code, "no program end code at the end (%zu bytes)", len);
    CHECK(t, p.payload_len == es_len && !memcmp(p.payload, es, es_len),
          "payload does not reassemble to the input (%zu vs %zu bytes)", p.payload_len, es_len);
    CHECK(t, p.max_pack <= MPE_PS_PACK_BYTES, "a pack of %d bytes", p.max_pack);
    CHECK(t, !p.scr_backwards, "SCR went back");
    CHECK(t, p.stamps == 4, "%d packets with time stamps, expected one per picture", p.stamps);
    for (int c = 0; c < p.stamps; c++) {
        static const int display_reordered[4] = { 0, 3, 1, 2 };
        const int k = reorder ? display_reordered[c] : c;
        /* 30000/1001 fps: 3003 ticks a picture, from the 0.5 s preload */
        const int64_t want_pts = MPE_PS_PRELOAD + 3003 * k;
        const int64_t want_dts = MPE_PS_PRELOAD + 3003 * (c - reorder);
        const int64_t got_dts = p.dts[c] >= 0 ? p.dts[c] : p.pts[c];
        CHECK(t, p.pts[c] == want_pts, "picture %d: PTS %lld, expected %lld", c,
              (long long)p.pts[c], (long long)want_pts);
        CHECK(t, got_dts == want_dts, "picture %d: DTS %lld, expected %lld", c, (long long)got_dts,
              (long long)want_dts);
        /* a DTS equal to the PTS is left out (13818-1 2.4.3.7) */
        CHECK(t, (p.dts[c] >= 0) == (want_dts != want_pts), "picture %d: DTS %s", c,
              p.dts[c] >= 0 ? "written though equal to the PTS" : "missing");
        CHECK(t, p.scr_at[c] <= got_dts, "picture %d: SCR %lld after its DTS %lld", c,
              (long long)p.scr_at[c], (long long)got_dts);
    }
    free(p.payload);
    free(d);
    free(es);
}

static void t_mpeg2_in_order(TestCtx *t) { check_stream(t, 1, 0, 5000); }
static void t_mpeg2_reordered(TestCtx *t) { check_stream(t, 1, 1, 700); }
static void t_mpeg1_in_order(TestCtx *t) { check_stream(t, 0, 0, 5000); }
static void t_mpeg1_reordered(TestCtx *t) { check_stream(t, 0, 1, 3000); }

static void t_timestamps_exact(TestCtx *t)
{
    MpePsMux *m;
    MpeError err;
    /* 24000/1001: 3753.75 ticks; picture 1000 must be at exactly 3753750
     * ticks, whatever rounding each earlier picture had */
    CHECK(t, mpe_ps_open(&m, 1, 24000, 1001, 0, 0, &err) == 0, "%s", err.msg);
    CHECK(t, mpe_ps_timestamp(m, 1000) == MPE_PS_PRELOAD + 3753750, "%lld",
          (long long)mpe_ps_timestamp(m, 1000));
    CHECK(t, mpe_ps_timestamp(m, 1) == MPE_PS_PRELOAD + 3754, "%lld",
          (long long)mpe_ps_timestamp(m, 1));
    CHECK(t, mpe_ps_timestamp(m, -1) == MPE_PS_PRELOAD - 3754, "%lld", (long long)mpe_ps_timestamp(m, -1));
    mpe_ps_close(m);
    CHECK(t, mpe_ps_open(&m, 1, 0, 1, 0, 0, &err) < 0, "a zero frame rate was taken");
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_psmux");
    test_run(&t, "mpeg2_in_order", t_mpeg2_in_order);
    test_run(&t, "mpeg2_reordered_pts_dts", t_mpeg2_reordered);
    test_run(&t, "mpeg1_in_order", t_mpeg1_in_order);
    test_run(&t, "mpeg1_reordered_pts_dts", t_mpeg1_reordered);
    test_run(&t, "timestamps_exact", t_timestamps_exact);
    return test_finish(&t);
}
