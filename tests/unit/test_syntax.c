/* test_syntax.c — the MPEG-1/2 syntax writers read back by a small decoder
 * written from the standards' decoding process (ISO/IEC 13818-2 §7.2.1,
 * §7.6.3.1, §6.2.2): headers field by field, motion vectors for every f_code
 * and delta, blocks including both escape formats. */
#include <stdlib.h>
#include <string.h>

#include "bitstream/bitreader.h"
#include "bitstream/mpeg12.h"
#include "tests/test.h"

/* Decode one symbol of a VLC table given as (code, len) entries by trying
 * every entry: slow, obviously right, independent of the writer. */
static int match_vlc(BsReader *br, const BsVlc *v)
{
    if (!v->len || bs_peek(br, v->len) != v->code)
        return 0;
    br->bitpos += v->len;
    return 1;
}

static int read_motion_delta(BsReader *br, int f_code, int *ok)
{
    const int r_size = f_code - 1, f = 1 << r_size;
    for (int code = -16; code <= 16; code++) {
        if (!match_vlc(br, &bs_vlc_motion_code[code + 16]))
            continue;
        if (f == 1 || code == 0)
            return code;
        int residual = (int)bs_get(br, r_size);
        int delta = (abs(code) - 1) * f + residual + 1;
        return code < 0 ? -delta : delta;
    }
    *ok = 0;
    return 0;
}

static void test_motion_delta_all(TestCtx *t)
{
    for (int f_code = 1; f_code <= 9; f_code++) {
        const int f = 1 << (f_code - 1);
        BsWriter bw;
        bs_writer_init(&bw, 0);
        int bits_ok = 1;
        for (int d = -16 * f; d <= 16 * f - 1; d++) {
            const uint64_t before = bs_bit_count(&bw);
            bs_write_motion_delta(&bw, d, f_code);
            /* the motion search prices vectors with bs_motion_delta_bits */
            if (bits_ok && (uint64_t)bs_motion_delta_bits(d, f_code) != bs_bit_count(&bw) - before) {
                CHECK(t, 0, "f_code %d delta %d: priced %d bits, wrote %llu", f_code, d,
                      bs_motion_delta_bits(d, f_code), (unsigned long long)(bs_bit_count(&bw) - before));
                bits_ok = 0;
            }
        }
        bs_flush(&bw);
        BsReader br;
        bs_reader_init(&br, bw.buf, bw.pos);
        for (int d = -16 * f; d <= 16 * f - 1; d++) {
            int ok = 1, got = read_motion_delta(&br, f_code, &ok);
            if (!ok || got != d) {
                CHECK(t, ok && got == d, "f_code %d: wrote %d, read %d", f_code, d, got);
                break;
            }
        }
        bs_writer_free(&bw);
    }
}

/* Reads run/level pairs of table B.14 up to end_of_block; returns the
 * number of coefficients or -1 on an undecodable code. */
static int read_coefficients(BsReader *br, int16_t scan[64], int start, int first_short, int mpeg2)
{
    int i = start;
    for (;;) {
        int run = -1, level = 0;
        if (first_short && bs_peek(br, 1) == 1) {
            br->bitpos += 1;
            run = 0;
            level = bs_get(br, 1) ? -1 : 1;
        } else if (!first_short && match_vlc(br, &bs_vlc_dct_eob[BS_DCT_TABLE_ZERO])) {
            return i;
        } else if (match_vlc(br, &bs_vlc_dct_escape)) {
            run = (int)bs_get(br, 6);
            if (mpeg2) {
                level = (int)bs_get(br, 12);
                if (level >= 2048)
                    level -= 4096;
            } else {
                level = (int)bs_get(br, 8);
                if (level == 0)
                    level = (int)bs_get(br, 8);
                else if (level == 128)
                    level = (int)bs_get(br, 8) - 256;
                else if (level > 128)
                    level -= 256;
            }
        } else {
            for (int r = 0; r < 32 && run < 0; r++)
                for (int l = 1; l <= 40 && run < 0; l++) {
                    BsVlc v = bs_vlc_dct_coeff(BS_DCT_TABLE_ZERO, r, l);
                    if (match_vlc(br, &v)) {
                        run = r;
                        level = bs_get(br, 1) ? -l : l;
                    }
                }
            if (run < 0)
                return -1;
        }
        first_short = 0;
        i += run;
        if (i > 63)
            return -1;
        scan[i++] = (int16_t)level;
    }
}

static void random_block(int16_t scan[64], TestRng *rng, int max_level, int density)
{
    memset(scan, 0, 64 * sizeof(*scan));
    for (int i = 0; i < 64; i++) {
        if ((int)(test_rand(rng) % 100) >= density)
            continue;
        unsigned r = test_rand(rng);
        int mag = r & 1 ? 1 + (int)((r >> 1) % 3) : 1 + (int)((r >> 1) % (unsigned)max_level);
        scan[i] = (int16_t)(r & 0x100000 ? -mag : mag);
    }
}

static void test_blocks_round_trip(TestCtx *t)
{
    TestRng rng = { 2024 };
    for (int mpeg2 = 0; mpeg2 <= 1; mpeg2++) {
        const int max_level = mpeg2 ? 2047 : 255;
        for (int iter = 0; iter < 3000; iter++) {
            int16_t scan[64], got[64];
            int intra = iter & 1, chroma = (iter >> 1) & 1;
            int density = 2 + (int)(test_rand(&rng) % 60);
            random_block(scan, &rng, max_level, density);
            int dc_diff = (int)(test_rand(&rng) % 511) - 255;
            if (!intra && !scan[0] && !scan[63])
                scan[63] = 1;   /* a coded non-intra block has a non-zero level */
            BsWriter bw;
            bs_writer_init(&bw, 0);
            if (intra)
                bs_write_intra_block(&bw, scan, dc_diff, chroma, mpeg2, BS_DCT_TABLE_ZERO);
            else
                bs_write_inter_block(&bw, scan, mpeg2);
            bs_put(&bw, 16, 0xA5A5);   /* trailing marker: block must end exactly */
            bs_flush(&bw);

            BsReader br;
            bs_reader_init(&br, bw.buf, bw.pos);
            memset(got, 0, sizeof(got));
            int ok = 1, got_dc = 0;
            if (intra) {
                const BsVlc *tab = chroma ? bs_vlc_dc_size_chroma : bs_vlc_dc_size_luma;
                int size = -1;
                for (int s = 0; s <= 11 && size < 0; s++)
                    if (match_vlc(&br, &tab[s]))
                        size = s;
                if (size < 0) {
                    ok = 0;
                } else if (size > 0) {
                    int v = (int)bs_get(&br, size);
                    got_dc = v >= (1 << (size - 1)) ? v : v + 1 - (1 << size);  /* §7.2.1 */
                }
            }
            if (ok && read_coefficients(&br, got, intra ? 1 : 0, !intra, mpeg2) < 0)
                ok = 0;
            if (intra)
                got[0] = scan[0];
            ok = ok && bs_get(&br, 16) == 0xA5A5 && !memcmp(got, scan, sizeof(got)) &&
                 (!intra || got_dc == dc_diff);
            bs_writer_free(&bw);
            if (!ok) {
                CHECK(t, ok, "%s %s block %d does not read back (dc %d/%d)",
                      mpeg2 ? "MPEG-2" : "MPEG-1", intra ? "intra" : "inter", iter, dc_diff, got_dc);
                return;
            }
        }
    }
}

static void test_sequence_header_fields(TestCtx *t)
{
    BsSequence seq = { .mpeg2 = 1, .width = 4095, .height = 2864, .aspect_ratio_code = 1,
                       .frame_rate_code = 4, .frame_rate_ext_n = 1, .frame_rate_ext_d = 17,
                       .bit_rate = 200000, .vbv_buffer_size = 597, .profile_and_level = 0x44,
                       .low_delay = 1 };
    BsWriter bw;
    BsReader br;
    bs_writer_init(&bw, 0);
    bs_write_sequence_header(&bw, &seq);
    bs_flush(&bw);
    bs_reader_init(&br, bw.buf, bw.pos);
    CHECK(t, bs_get(&br, 32) == 0x1B3, "sequence_header_code");
    CHECK(t, bs_get(&br, 12) == 4095, "horizontal_size_value");
    CHECK(t, bs_get(&br, 12) == 2864, "vertical_size_value");
    CHECK(t, bs_get(&br, 4) == 1, "aspect_ratio_information");
    CHECK(t, bs_get(&br, 4) == 4, "frame_rate_code");
    uint32_t br_lo = bs_get(&br, 18);
    CHECK(t, bs_get(&br, 1) == 1, "marker");
    CHECK(t, bs_get(&br, 10) == 597, "vbv_buffer_size_value");
    CHECK(t, bs_get(&br, 3) == 0, "constrained, load matrices");
    br.bitpos = (br.bitpos + 7) & ~(size_t)7;
    CHECK(t, bs_get(&br, 32) == 0x1B5, "extension_start_code");
    CHECK(t, bs_get(&br, 4) == 1, "sequence extension id");
    CHECK(t, bs_get(&br, 8) == 0x44, "profile_and_level");
    CHECK(t, bs_get(&br, 1) == 1, "progressive_sequence");
    CHECK(t, bs_get(&br, 2) == 1, "chroma_format 4:2:0");
    CHECK(t, bs_get(&br, 4) == 0, "size extensions");
    uint32_t br_hi = bs_get(&br, 12);
    CHECK(t, (br_hi << 18 | br_lo) == 200000, "bit_rate %u", br_hi << 18 | br_lo);
    CHECK(t, bs_get(&br, 1) == 1, "marker");
    CHECK(t, bs_get(&br, 8) == 0, "vbv ext");
    CHECK(t, bs_get(&br, 1) == 1, "low_delay");
    CHECK(t, bs_get(&br, 2) == 1, "frame_rate_extension_n");
    CHECK(t, bs_get(&br, 5) == 17, "frame_rate_extension_d");
    CHECK(t, !br.overrun && br.bitpos == bw.pos * 8, "length: read %zu bits of %zu", br.bitpos,
          bw.pos * 8);
    bs_writer_free(&bw);
}

static void test_slice_header_tall(TestCtx *t)
{
    BsWriter bw;
    BsReader br;
    bs_writer_init(&bw, 0);
    bs_write_slice_header(&bw, 1, 1, 200, 7);   /* row 200: code 200 & 127 + 1, extension 1 */
    bs_write_slice_header(&bw, 0, 0, 174, 31);  /* MPEG-1's last possible start code 0xAF */
    bs_flush(&bw);
    bs_reader_init(&br, bw.buf, bw.pos);
    CHECK(t, bs_get(&br, 32) == 0x100 + 73, "slice_start_code for row 200");
    CHECK(t, bs_get(&br, 3) == 1, "slice_vertical_position_extension");
    CHECK(t, bs_get(&br, 5) == 7, "quantiser_scale_code");
    CHECK(t, bs_get(&br, 1) == 0, "extra_bit_slice");
    br.bitpos = (br.bitpos + 7) & ~(size_t)7;
    CHECK(t, bs_get(&br, 32) == 0x1AF, "MPEG-1 slice start code of row 174");
    CHECK(t, bs_get(&br, 5) == 31, "quantiser_scale");
    bs_writer_free(&bw);
}

/* A B picture's header (13818-2 §6.2.3, 11172-2 §2.4.2.5): both
 * directions' full_pel flags and f_codes in MPEG-1; in MPEG-2 the header's
 * f_codes are 7 and the picture coding extension carries each direction's
 * (15 would mark one unused). */
static void test_b_picture_header(TestCtx *t)
{
    for (int mpeg2 = 0; mpeg2 <= 1; mpeg2++) {
        BsPictureHeader ph = { .mpeg2 = mpeg2, .temporal_reference = 1021,
                               .coding_type = BS_PICTURE_B, .f_code_fwd = 3, .f_code_bwd = 5,
                               .vbv_delay = 0x1234 };
        BsWriter bw;
        BsReader br;
        bs_writer_init(&bw, 0);
        bs_write_picture_header(&bw, &ph);
        bs_flush(&bw);
        bs_reader_init(&br, bw.buf, bw.pos);
        CHECK(t, bs_get(&br, 32) == 0x100, "picture_start_code");
        CHECK(t, bs_get(&br, 10) == 1021, "temporal_reference");
        CHECK(t, bs_get(&br, 3) == 3, "picture_coding_type B");
        CHECK(t, bs_get(&br, 16) == 0x1234, "vbv_delay");
        CHECK(t, bs_get(&br, 1) == 0, "full_pel_forward_vector");
        CHECK(t, bs_get(&br, 3) == (mpeg2 ? 7u : 3u), "forward_f_code (mpeg2 %d)", mpeg2);
        CHECK(t, bs_get(&br, 1) == 0, "full_pel_backward_vector");
        CHECK(t, bs_get(&br, 3) == (mpeg2 ? 7u : 5u), "backward_f_code (mpeg2 %d)", mpeg2);
        CHECK(t, bs_get(&br, 1) == 0, "extra_bit_picture");
        if (mpeg2) {
            br.bitpos = (br.bitpos + 7) & ~(size_t)7;
            CHECK(t, bs_get(&br, 32) == 0x1B5, "extension_start_code");
            CHECK(t, bs_get(&br, 4) == 8, "picture coding extension id");
            CHECK(t, bs_get(&br, 8) == 0x33, "forward f_codes");
            CHECK(t, bs_get(&br, 8) == 0x55, "backward f_codes");
        }
        bs_writer_free(&bw);
    }
}

static void test_address_increment_escapes(TestCtx *t)
{
    for (int inc = 1; inc <= 200; inc++) {
        BsWriter bw;
        BsReader br;
        bs_writer_init(&bw, 0);
        bs_write_mb_addr_inc(&bw, inc);
        bs_flush(&bw);
        bs_reader_init(&br, bw.buf, bw.pos);
        int got = 0, done = 0;
        while (!done && bs_bits_left(&br)) {
            if (match_vlc(&br, &bs_vlc_mb_escape)) {
                got += 33;
                continue;
            }
            for (int i = 1; i <= 33 && !done; i++)
                if (match_vlc(&br, &bs_vlc_mb_addr_inc[i])) {
                    got += i;
                    done = 1;
                }
            if (!done)
                break;
        }
        bs_writer_free(&bw);
        if (got != inc) {
            CHECK(t, got == inc, "increment %d read back as %d", inc, got);
            return;
        }
    }
}

int main(void)
{
    TestCtx t;
    test_init(&t, "syntax");
    test_run(&t, "motion-delta-every-fcode", test_motion_delta_all);
    test_run(&t, "blocks-round-trip-with-escapes", test_blocks_round_trip);
    test_run(&t, "sequence-header-fields", test_sequence_header_fields);
    test_run(&t, "slice-header-tall-and-mpeg1-last", test_slice_header_tall);
    test_run(&t, "address-increment-escapes", test_address_increment_escapes);
    test_run(&t, "b-picture-header", test_b_picture_header);
    return test_finish(&t);
}
