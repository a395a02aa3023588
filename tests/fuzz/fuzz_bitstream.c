/* fuzz_bitstream.c — the bitstream writer (bitstream/bitwriter.h,
 * mpeg12.h, vlc.h) driven by a random sequence of syntax elements taken
 * from the input: sequence, GOP, picture and slice headers, macroblock
 * address increments, macroblock types, coded block patterns, motion
 * deltas, intra and inter blocks (reference and fast writers), raw bit
 * fields, start codes, appended slice buffers.  The stream is then read back
 * with the bit reader (bitstream/bitreader.h) by a decoder written from the
 * standard's syntax (ISO/IEC 13818-2 §6.2, §7.2.1, §7.6.3.1; 11172-2
 * §2.4.3), which must find exactly the values written; it aborts otherwise.
 * Each block is also written by both block writers, which must give the
 * same bits.  Every value drawn is one the writers' contracts allow
 * (bitstream/mpeg12.h, and the encoder's ranges: levels within ±255 for
 * MPEG-1 and ±2047 for MPEG-2, a coded inter block has a coefficient). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitstream/bitreader.h"
#include "bitstream/bitwriter.h"
#include "bitstream/mpeg12.h"
#include "bitstream/vlc.h"

#define MAX_OPS 256

enum {
    OP_SEQUENCE, OP_GOP, OP_PICTURE, OP_SLICE, OP_ADDR_INC, OP_MB_TYPE, OP_CBP, OP_MOTION,
    OP_INTRA, OP_INTER, OP_BITS, OP_START_CODE, OP_APPEND, OP_SEQUENCE_END, OP_COUNT
};

typedef struct Op {
    int kind;
    int mpeg2, fast;
    int a, b, c, d;             /* the element's integer fields, by kind */
    BsSequence seq;
    BsPictureHeader pic;
    int16_t scan[64];
    uint8_t bytes[64];          /* OP_APPEND's slice buffer */
} Op;

typedef struct FuzzIn {
    const uint8_t *p;
    size_t n;
} FuzzIn;

static void mismatch(int op, const char *what, long got, long want)
{
    fprintf(stderr, "fuzz_bitstream: op %d: %s: read %ld, wrote %ld\n", op, what, got, want);
    abort();
}

static uint32_t take(FuzzIn *in, int nbytes)
{
    uint32_t v = 0;
    for (int i = 0; i < nbytes && in->n; i++, in->n--)
        v = v << 8 | *in->p++;
    return v;
}

/* A value in lo..hi from the input (lo when the input has run out). */
static int take_range(FuzzIn *in, int lo, int hi)
{
    uint32_t span = (uint32_t)(hi - lo) + 1;
    int nbytes = span <= 256 ? 1 : span <= 65536 ? 2 : 4;
    return lo + (int)(take(in, nbytes) % span);
}

/* A block's coefficients: mostly small levels, some large, sparse or dense. */
static void take_block(FuzzIn *in, int16_t scan[64], int start, int max_level)
{
    int density = take_range(in, 0, 100);
    memset(scan, 0, 64 * sizeof(*scan));
    for (int i = start; i < 64 && in->n; i++) {
        if (take_range(in, 0, 99) >= density)
            continue;
        int big = take_range(in, 0, 7) == 0;
        int mag = big ? take_range(in, 1, max_level) : take_range(in, 1, 3);
        scan[i] = (int16_t)(take_range(in, 0, 1) ? -mag : mag);
    }
}

static void take_op(FuzzIn *in, Op *o)
{
    memset(o, 0, sizeof(*o));
    o->kind = take_range(in, 0, OP_COUNT - 1);
    o->mpeg2 = take_range(in, 0, 1);
    o->fast = take_range(in, 0, 1);
    switch (o->kind) {
    case OP_SEQUENCE: {
        BsSequence *s = &o->seq;
        s->mpeg2 = o->mpeg2;
        s->width = take_range(in, 1, s->mpeg2 ? 16383 : 4095);
        s->height = take_range(in, 1, s->mpeg2 ? 16383 : 4095);
        s->aspect_ratio_code = take_range(in, 1, 15);
        s->frame_rate_code = take_range(in, 1, 8);
        s->bit_rate = (uint32_t)take(in, 4) & (s->mpeg2 ? 0x3FFFFFFFu : 0x3FFFFu);
        s->vbv_buffer_size = (uint32_t)take(in, 3) & (s->mpeg2 ? 0x3FFFFu : 0x3FFu);
        s->profile_and_level = take_range(in, 0, 255);
        s->low_delay = take_range(in, 0, 1);
        s->frame_rate_ext_n = s->mpeg2 ? take_range(in, 0, 3) : 0;
        s->frame_rate_ext_d = s->mpeg2 ? take_range(in, 0, 31) : 0;
        break;
    }
    case OP_GOP:
        o->a = take_range(in, 0, 23);
        o->b = take_range(in, 0, 59);
        o->c = take_range(in, 0, 59);
        o->d = take_range(in, 0, 59) | take_range(in, 0, 1) << 8;   /* pictures | closed << 8 */
        break;
    case OP_PICTURE:
        o->pic.mpeg2 = o->mpeg2;
        o->pic.temporal_reference = take_range(in, 0, 1023);
        o->pic.coding_type = take_range(in, BS_PICTURE_I, BS_PICTURE_B);
        o->pic.f_code_fwd = take_range(in, 1, o->mpeg2 ? 9 : 7);
        o->pic.f_code_bwd = take_range(in, 1, o->mpeg2 ? 9 : 7);
        break;
    case OP_SLICE:
        o->a = o->mpeg2 ? take_range(in, 0, 1) : 0;             /* tall picture */
        o->b = take_range(in, 0, o->a ? 1023 : 174);            /* macroblock row */
        o->c = take_range(in, 1, 31);                           /* quantiser_scale_code */
        break;
    case OP_ADDR_INC:
        o->a = take_range(in, 1, take_range(in, 0, 3) ? 33 : 400);
        break;
    case OP_MB_TYPE:
        o->a = take_range(in, BS_PICTURE_I, BS_PICTURE_B);
        o->b = take_range(in, 0, 31);
        break;
    case OP_CBP:
        o->a = take_range(in, 0, 63);
        break;
    case OP_MOTION:
        o->a = take_range(in, 1, 9);                            /* f_code */
        o->b = take_range(in, -(16 << (o->a - 1)), (16 << (o->a - 1)) - 1);
        break;
    case OP_INTRA: {
        const int dc_max = o->mpeg2 ? 2047 : 255;
        o->a = take_range(in, -dc_max, dc_max);                 /* dc_diff */
        o->b = take_range(in, 0, 1);                            /* chroma */
        take_block(in, o->scan, 1, o->mpeg2 ? 2047 : 255);
        break;
    }
    case OP_INTER:
    {
        /* a coded block has a coefficient: put one where the input says */
        int any = 0;
        take_block(in, o->scan, 0, o->mpeg2 ? 2047 : 255);
        for (int i = 0; i < 64; i++)
            any |= o->scan[i];
        if (!any)
            o->scan[take_range(in, 0, 63)] = (int16_t)(take_range(in, 0, 1) ? -1 : 1);
        break;
    }
    case OP_BITS:
        o->a = take_range(in, 1, 32);
        o->b = (int)take(in, 4);
        break;
    case OP_START_CODE:
        o->a = take_range(in, 0, 255);
        break;
    case OP_APPEND:
        o->a = take_range(in, 0, 64);
        for (int i = 0; i < o->a; i++)
            o->bytes[i] = (uint8_t)take(in, 1);
        break;
    default:
        break;
    }
}

static void write_block(BsWriter *bw, const Op *o, int fast)
{
    if (o->kind == OP_INTRA) {
        if (fast)
            bs_write_intra_block_fast(bw, o->scan, o->a, o->b, o->mpeg2, BS_DCT_TABLE_ZERO);
        else
            bs_write_intra_block(bw, o->scan, o->a, o->b, o->mpeg2, BS_DCT_TABLE_ZERO);
    } else {
        if (fast)
            bs_write_inter_block_fast(bw, o->scan, o->mpeg2);
        else
            bs_write_inter_block(bw, o->scan, o->mpeg2);
    }
}

/* The reference and the fast block writers must give the same bits. */
static void check_block_writers(const Op *o, int index)
{
    BsWriter ref, fast;
    uint64_t nref, nfast;

    if (bs_writer_init(&ref, 0) < 0 || bs_writer_init(&fast, 0) < 0)
        abort();
    write_block(&ref, o, 0);
    write_block(&fast, o, 1);
    nref = bs_bit_count(&ref);
    nfast = bs_bit_count(&fast);
    bs_flush(&ref);
    bs_flush(&fast);
    if (nref != nfast)
        mismatch(index, "fast block writer's bit count (as read) vs the reference's", (long)nfast,
                 (long)nref);
    if (ref.error || fast.error || memcmp(ref.buf, fast.buf, ref.pos))
        mismatch(index, "fast block writer's bits differ from the reference's", 1, 0);
    bs_writer_free(&ref);
    bs_writer_free(&fast);
}

static void write_op(BsWriter *bw, const Op *o, int index)
{
    switch (o->kind) {
    case OP_SEQUENCE:
        bs_write_sequence_header(bw, &o->seq);
        break;
    case OP_GOP:
        bs_write_gop_header(bw, o->a, o->b, o->c, o->d & 255, o->d >> 8);
        break;
    case OP_PICTURE:
        bs_write_picture_header(bw, &o->pic);
        break;
    case OP_SLICE:
        bs_write_slice_header(bw, o->mpeg2, o->a, o->b, o->c);
        break;
    case OP_ADDR_INC:
        bs_write_mb_addr_inc(bw, o->a);
        break;
    case OP_MB_TYPE: {
        BsVlc v = bs_vlc_mb_type(o->a, o->b);
        bs_put(bw, v.len, v.code);
        break;
    }
    case OP_CBP:
        bs_put(bw, bs_vlc_cbp[o->a].len, bs_vlc_cbp[o->a].code);
        break;
    case OP_MOTION:
        bs_write_motion_delta(bw, o->b, o->a);
        break;
    case OP_INTRA:
    case OP_INTER:
        check_block_writers(o, index);
        write_block(bw, o, o->fast);
        break;
    case OP_BITS:
        bs_put(bw, o->a, (uint32_t)o->b);
        break;
    case OP_START_CODE:
        bs_put_start_code(bw, (uint8_t)o->a);
        break;
    case OP_APPEND: {
        /* a slice coded into its own buffer, concatenated (the encoder's way) */
        BsWriter slice;
        if (bs_writer_init(&slice, 0) < 0)
            abort();
        for (int i = 0; i < o->a; i++)
            bs_put(&slice, 8, o->bytes[i]);
        bs_flush(&slice);
        bs_append(bw, &slice);
        bs_writer_free(&slice);
        break;
    }
    case OP_SEQUENCE_END:
        bs_write_sequence_end(bw);
        break;
    }
}

/* ---- the reading side: independent of the writer's code paths ---- */

static uint32_t get(BsReader *br, int n)
{
    return n ? bs_get(br, n) : 0;
}

static void expect(BsReader *br, int op, const char *what, int n, uint32_t want)
{
    uint32_t got = get(br, n);
    if (got != want)
        mismatch(op, what, (long)got, (long)want);
}

/* byte alignment with zero stuffing, then 0x000001 and the code */
static void expect_start_code(BsReader *br, int op, int code)
{
    while (br->bitpos & 7)
        expect(br, op, "stuffing bit before a start code", 1, 0);
    expect(br, op, "start code prefix", 24, 1);
    expect(br, op, "start code value", 8, (uint32_t)code);
}

/* Match one code of a table by trying every entry: slow, plainly right.
 * Returns the entry's index or -1. */
static int match_table(BsReader *br, const BsVlc *tab, int n)
{
    int found = -1;
    for (int i = 0; i < n; i++) {
        if (tab[i].len && bs_peek(br, tab[i].len) == tab[i].code) {
            if (found >= 0)   /* a prefix-free table has one match at most */
                return -2;
            found = i;
        }
    }
    if (found >= 0)
        br->bitpos += tab[found].len;
    return found;
}

/* §7.2.2.1 run/level decoding with table B.14 and both escape formats. */
static void read_coefficients(BsReader *br, int op, int16_t scan[64], int start, int first_short,
                              int mpeg2)
{
    int i = start;
    memset(scan, 0, 64 * sizeof(*scan));
    for (;;) {
        int run = -1, level = 0;
        if (first_short && bs_peek(br, 1) == 1) {
            br->bitpos++;
            run = 0;
            level = get(br, 1) ? -1 : 1;
        } else if (!first_short && bs_peek(br, bs_vlc_dct_eob[0].len) == bs_vlc_dct_eob[0].code) {
            br->bitpos += bs_vlc_dct_eob[0].len;
            return;
        } else if (bs_peek(br, bs_vlc_dct_escape.len) == bs_vlc_dct_escape.code) {
            br->bitpos += bs_vlc_dct_escape.len;
            run = (int)get(br, 6);
            if (mpeg2) {
                level = (int)get(br, 12);
                if (level == 0 || level == 2048)
                    mismatch(op, "forbidden MPEG-2 escape level", level, 0);
                if (level > 2048)
                    level -= 4096;
            } else {
                level = (int)get(br, 8);
                if (level == 0)
                    level = (int)get(br, 8);
                else if (level == 128)
                    level = (int)get(br, 8) - 256;
                else if (level > 128)
                    level -= 256;
                if (level == 0)
                    mismatch(op, "MPEG-1 escape level 0", 0, 1);
            }
        } else {
            for (int r = 0; r <= BS_DCT_MAX_RUN && run < 0; r++)
                for (int l = 1; l <= BS_DCT_MAX_LEVEL && run < 0; l++) {
                    BsVlc v = bs_vlc_dct_coeff(BS_DCT_TABLE_ZERO, r, l);
                    if (v.len && bs_peek(br, v.len) == v.code) {
                        br->bitpos += v.len;
                        run = r;
                        level = get(br, 1) ? -l : l;
                    }
                }
            if (run < 0)
                mismatch(op, "undecodable coefficient code at position", i, -1);
        }
        first_short = 0;
        i += run;
        if (i > 63)
            mismatch(op, "coefficients run past position 63", i, 63);
        scan[i++] = (int16_t)level;
    }
}

static void read_op(BsReader *br, const Op *o, int op)
{
    switch (o->kind) {
    case OP_SEQUENCE: {
        const BsSequence *s = &o->seq;
        uint32_t w, h, br_lo, vbv_lo;
        expect_start_code(br, op, BS_START_SEQUENCE);
        w = get(br, 12);
        h = get(br, 12);
        expect(br, op, "aspect_ratio_information", 4, (uint32_t)s->aspect_ratio_code);
        expect(br, op, "frame_rate_code", 4, (uint32_t)s->frame_rate_code);
        br_lo = get(br, 18);
        expect(br, op, "marker_bit", 1, 1);
        vbv_lo = get(br, 10);
        expect(br, op, "constrained_parameters_flag", 1, 0);
        expect(br, op, "load_intra_quantiser_matrix", 1, 0);
        expect(br, op, "load_non_intra_quantiser_matrix", 1, 0);
        if (s->mpeg2) {
            expect_start_code(br, op, BS_START_EXTENSION);
            expect(br, op, "extension_start_code_identifier", 4, 1);
            expect(br, op, "profile_and_level_indication", 8, (uint32_t)s->profile_and_level);
            expect(br, op, "progressive_sequence", 1, 1);
            expect(br, op, "chroma_format", 2, 1);
            w |= get(br, 2) << 12;
            h |= get(br, 2) << 12;
            br_lo |= get(br, 12) << 18;
            expect(br, op, "marker_bit", 1, 1);
            vbv_lo |= get(br, 8) << 10;
            expect(br, op, "low_delay", 1, (uint32_t)s->low_delay);
            expect(br, op, "frame_rate_extension_n", 2, (uint32_t)s->frame_rate_ext_n);
            expect(br, op, "frame_rate_extension_d", 5, (uint32_t)s->frame_rate_ext_d);
        }
        if (w != (uint32_t)s->width)
            mismatch(op, "horizontal size", (long)w, s->width);
        if (h != (uint32_t)s->height)
            mismatch(op, "vertical size", (long)h, s->height);
        if (br_lo != s->bit_rate)
            mismatch(op, "bit_rate", (long)br_lo, (long)s->bit_rate);
        if (vbv_lo != s->vbv_buffer_size)
            mismatch(op, "vbv_buffer_size", (long)vbv_lo, (long)s->vbv_buffer_size);
        break;
    }
    case OP_GOP:
        expect_start_code(br, op, BS_START_GOP);
        expect(br, op, "drop_frame_flag", 1, 0);
        expect(br, op, "time_code_hours", 5, (uint32_t)o->a);
        expect(br, op, "time_code_minutes", 6, (uint32_t)o->b);
        expect(br, op, "marker_bit", 1, 1);
        expect(br, op, "time_code_seconds", 6, (uint32_t)o->c);
        expect(br, op, "time_code_pictures", 6, (uint32_t)(o->d & 255));
        expect(br, op, "closed_gop", 1, (uint32_t)(o->d >> 8));
        expect(br, op, "broken_link", 1, 0);
        break;
    case OP_PICTURE: {
        const BsPictureHeader *p = &o->pic;
        const int t = p->coding_type;
        expect_start_code(br, op, BS_START_PICTURE);
        expect(br, op, "temporal_reference", 10, (uint32_t)p->temporal_reference);
        expect(br, op, "picture_coding_type", 3, (uint32_t)t);
        expect(br, op, "vbv_delay", 16, 0xFFFF);
        if (t == BS_PICTURE_P || t == BS_PICTURE_B) {
            expect(br, op, "full_pel_forward_vector", 1, 0);
            expect(br, op, "forward_f_code", 3, p->mpeg2 ? 7 : (uint32_t)p->f_code_fwd);
        }
        if (t == BS_PICTURE_B) {
            expect(br, op, "full_pel_backward_vector", 1, 0);
            expect(br, op, "backward_f_code", 3, p->mpeg2 ? 7 : (uint32_t)p->f_code_bwd);
        }
        expect(br, op, "extra_bit_picture", 1, 0);
        if (!p->mpeg2)
            break;
        const uint32_t ff = t != BS_PICTURE_I ? (uint32_t)p->f_code_fwd : 15;
        const uint32_t fb = t == BS_PICTURE_B ? (uint32_t)p->f_code_bwd : 15;
        expect_start_code(br, op, BS_START_EXTENSION);
        expect(br, op, "extension_start_code_identifier", 4, 8);
        expect(br, op, "f_code[0][0]", 4, ff);
        expect(br, op, "f_code[0][1]", 4, ff);
        expect(br, op, "f_code[1][0]", 4, fb);
        expect(br, op, "f_code[1][1]", 4, fb);
        expect(br, op, "intra_dc_precision", 2, 0);
        expect(br, op, "picture_structure", 2, 3);
        expect(br, op, "top_field_first", 1, 0);
        expect(br, op, "frame_pred_frame_dct", 1, 1);
        expect(br, op, "concealment_motion_vectors", 1, 0);
        expect(br, op, "q_scale_type", 1, 0);
        expect(br, op, "intra_vlc_format", 1, 0);
        expect(br, op, "alternate_scan", 1, 0);
        expect(br, op, "repeat_first_field", 1, 0);
        expect(br, op, "chroma_420_type", 1, 1);
        expect(br, op, "progressive_frame", 1, 1);
        expect(br, op, "composite_display_flag", 1, 0);
        break;
    }
    case OP_SLICE: {
        int code, row;
        while (br->bitpos & 7)
            expect(br, op, "stuffing bit before a slice", 1, 0);
        expect(br, op, "start code prefix", 24, 1);
        code = (int)get(br, 8);
        if (code < 0x01 || code > 0xAF)
            mismatch(op, "slice_start_code outside 0x01..0xAF", code, o->b + 1);
        row = code - 1;
        if (o->mpeg2 && o->a)
            row += (int)get(br, 3) << 7;
        if (row != o->b)
            mismatch(op, "slice macroblock row", row, o->b);
        expect(br, op, "quantiser_scale_code", 5, (uint32_t)o->c);
        expect(br, op, "extra_bit_slice", 1, 0);
        break;
    }
    case OP_ADDR_INC: {
        int inc = 0, k;
        while (bs_peek(br, bs_vlc_mb_escape.len) == bs_vlc_mb_escape.code) {
            br->bitpos += bs_vlc_mb_escape.len;
            inc += 33;
        }
        if ((k = match_table(br, bs_vlc_mb_addr_inc, 34)) < 1)
            mismatch(op, "undecodable macroblock_address_increment", k, o->a);
        if (inc + k != o->a)
            mismatch(op, "macroblock_address_increment", inc + k, o->a);
        break;
    }
    case OP_MB_TYPE: {
        BsVlc tab[32];
        for (int f = 0; f < 32; f++)
            tab[f] = bs_vlc_mb_type(o->a, f);
        if (!tab[o->b].len)
            break;   /* no such macroblock type: nothing was written */
        int k = match_table(br, tab, 32);
        if (k != o->b)
            mismatch(op, "macroblock_type flags", k, o->b);
        break;
    }
    case OP_CBP: {
        if (!bs_vlc_cbp[o->a].len)
            break;   /* nothing was written */
        int k = match_table(br, bs_vlc_cbp, 64);
        if (k != o->a)
            mismatch(op, "coded_block_pattern", k, o->a);
        break;
    }
    case OP_MOTION: {
        const int r_size = o->a - 1, f = 1 << r_size;
        int code = match_table(br, bs_vlc_motion_code, 33) - 16, delta;
        if (code < -16)
            mismatch(op, "undecodable motion_code", code, o->b);
        if (f == 1 || code == 0) {
            delta = code;
        } else {
            int residual = (int)get(br, r_size);
            delta = (abs(code) - 1) * f + residual + 1;
            if (code < 0)
                delta = -delta;
        }
        if (delta != o->b)
            mismatch(op, "motion vector delta", delta, o->b);
        break;
    }
    case OP_INTRA: {
        const BsVlc *tab = o->b ? bs_vlc_dc_size_chroma : bs_vlc_dc_size_luma;
        int16_t scan[64];
        int size = match_table(br, tab, 12), dc = 0;
        if (size < 0)
            mismatch(op, "undecodable dct_dc_size", size, o->a);
        if (size) {
            dc = (int)get(br, size);
            if (!(dc >> (size - 1)))   /* §7.2.1: a leading 0 means negative */
                dc = dc + 1 - (1 << size);
        }
        if (dc != o->a)
            mismatch(op, "dct_dc_differential", dc, o->a);
        read_coefficients(br, op, scan, 1, 0, o->mpeg2);
        for (int i = 1; i < 64; i++)
            if (scan[i] != o->scan[i])
                mismatch(op, "intra coefficient", scan[i], o->scan[i]);
        break;
    }
    case OP_INTER: {
        int16_t scan[64];
        read_coefficients(br, op, scan, 0, 1, o->mpeg2);
        for (int i = 0; i < 64; i++)
            if (scan[i] != o->scan[i])
                mismatch(op, "inter coefficient", scan[i], o->scan[i]);
        break;
    }
    case OP_BITS:
        expect(br, op, "raw bit field", o->a, (uint32_t)o->b & (uint32_t)((1ull << o->a) - 1));
        break;
    case OP_START_CODE:
        expect_start_code(br, op, o->a);
        break;
    case OP_APPEND:
        while (br->bitpos & 7)
            expect(br, op, "stuffing bit before an appended buffer", 1, 0);
        for (int i = 0; i < o->a; i++)
            expect(br, op, "appended byte", 8, o->bytes[i]);
        break;
    case OP_SEQUENCE_END:
        expect_start_code(br, op, BS_START_SEQUENCE_END);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzIn in = { data, size };
    Op *ops = malloc(MAX_OPS * sizeof(*ops));
    BsWriter bw;
    BsReader br;
    int n = 0;

    if (!ops || bs_writer_init(&bw, (size_t)take_range(&in, 0, 64)) < 0)
        abort();
    while (in.n && n < MAX_OPS) {
        take_op(&in, &ops[n]);
        write_op(&bw, &ops[n], n);
        n++;
    }
    const uint64_t bits = bs_bit_count(&bw);
    bs_flush(&bw);
    if (bw.error)
        mismatch(-1, "writer error", bw.error, 0);
    if (bw.pos != (bits + 7) / 8)
        mismatch(-1, "bytes stored vs bits counted", (long)bw.pos, (long)((bits + 7) / 8));

    bs_reader_init(&br, bw.buf, bw.pos);
    for (int i = 0; i < n; i++)
        read_op(&br, &ops[i], i);
    if (br.bitpos != bits)
        mismatch(-1, "bits read vs bits written", (long)br.bitpos, (long)bits);
    if (br.overrun)
        mismatch(-1, "reader ran past the end", 1, 0);
    while (br.bitpos & 7)
        expect(&br, -1, "final stuffing bit", 1, 0);

    bs_writer_free(&bw);
    free(ops);
    return 0;
}
