#include "mpeg12.h"

#include <stdlib.h>
#if defined(__SSE2__)
#endif

/* load_*_quantiser_matrix, then the matrix, given in the default zigzag
 * order as the syntax sends it (11172-2 §2.4.3.2, 13818-2 §6.3.11: whatever
 * alternate_scan says). */
static void put_matrix(BsWriter *bw, const uint8_t *zigzag)
{
    bs_put(bw, 1, zigzag != NULL);
    if (!zigzag)
        return;
    for (int i = 0; i < 64; i++)
        bs_put(bw, 8, zigzag[i]);
}

void bs_write_sequence_header(BsWriter *bw, const BsSequence *seq)
{
    /* ISO/IEC 13818-2 §6.2.2.1 sequence_header (= 11172-2 §2.4.2.3) */
    bs_put_start_code(bw, BS_START_SEQUENCE);
    bs_put(bw, 12, (uint32_t)seq->width & 0xFFF);    /* horizontal_size_value */
    bs_put(bw, 12, (uint32_t)seq->height & 0xFFF);   /* vertical_size_value */
    bs_put(bw, 4, (uint32_t)seq->aspect_ratio_code); /* aspect_ratio_information / pel_aspect_ratio */
    bs_put(bw, 4, (uint32_t)seq->frame_rate_code);   /* frame_rate_code */
    bs_put(bw, 18, seq->bit_rate & 0x3FFFF);         /* bit_rate_value */
    bs_put(bw, 1, 1);                                /* marker_bit */
    bs_put(bw, 10, seq->vbv_buffer_size & 0x3FF);    /* vbv_buffer_size_value */
    bs_put(bw, 1, 0);                                /* constrained_parameters_flag */
    put_matrix(bw, seq->intra_matrix);               /* load_intra_quantiser_matrix [+ 64 x 8] */
    put_matrix(bw, seq->inter_matrix);               /* load_non_intra_quantiser_matrix [+ 64 x 8] */
    if (!seq->mpeg2)
        return;
    /* §6.2.2.3 sequence_extension */
    bs_put_start_code(bw, BS_START_EXTENSION);
    bs_put(bw, 4, 1);                                /* extension_start_code_identifier: Sequence */
    bs_put(bw, 8, (uint32_t)seq->profile_and_level); /* profile_and_level_indication */
    bs_put(bw, 1, 1);                                /* progressive_sequence */
    bs_put(bw, 2, 1);                                /* chroma_format: 4:2:0 */
    bs_put(bw, 2, (uint32_t)seq->width >> 12);       /* horizontal_size_extension */
    bs_put(bw, 2, (uint32_t)seq->height >> 12);      /* vertical_size_extension */
    bs_put(bw, 12, (seq->bit_rate >> 18) & 0xFFF);   /* bit_rate_extension */
    bs_put(bw, 1, 1);                                /* marker_bit */
    bs_put(bw, 8, (seq->vbv_buffer_size >> 10) & 0xFF); /* vbv_buffer_size_extension */
    bs_put(bw, 1, (uint32_t)seq->low_delay);         /* low_delay */
    bs_put(bw, 2, (uint32_t)seq->frame_rate_ext_n);  /* frame_rate_extension_n */
    bs_put(bw, 5, (uint32_t)seq->frame_rate_ext_d);  /* frame_rate_extension_d */
}

void bs_write_gop_header(BsWriter *bw, int hours, int minutes, int seconds, int pictures,
                         int closed_gop)
{
    /* §6.2.2.6 group_of_pictures_header; time_code per Table 6-11 */
    bs_put_start_code(bw, BS_START_GOP);
    bs_put(bw, 1, 0);                     /* drop_frame_flag */
    bs_put(bw, 5, (uint32_t)hours & 31);  /* time_code_hours */
    bs_put(bw, 6, (uint32_t)minutes);     /* time_code_minutes */
    bs_put(bw, 1, 1);                     /* marker_bit */
    bs_put(bw, 6, (uint32_t)seconds);     /* time_code_seconds */
    bs_put(bw, 6, (uint32_t)pictures);    /* time_code_pictures */
    bs_put(bw, 1, (uint32_t)closed_gop);  /* closed_gop */
    bs_put(bw, 1, 0);                     /* broken_link */
}

void bs_write_picture_header(BsWriter *bw, const BsPictureHeader *pic)
{
    int type = pic->coding_type;

    /* §6.2.3 picture_header */
    bs_put_start_code(bw, BS_START_PICTURE);
    bs_put(bw, 10, (uint32_t)pic->temporal_reference & 0x3FF); /* temporal_reference */
    bs_put(bw, 3, (uint32_t)type);                             /* picture_coding_type */
    bs_put(bw, 16, pic->vbv_delay ? (uint32_t)pic->vbv_delay & 0xFFFF : 0xFFFF); /* vbv_delay */
    if (type == BS_PICTURE_P || type == BS_PICTURE_B) {
        bs_put(bw, 1, 0);   /* full_pel_forward_vector */
        /* forward_f_code: MPEG-2 moves f_codes to the extension and requires 7 here */
        bs_put(bw, 3, pic->mpeg2 ? 7 : (uint32_t)pic->f_code_fwd);
    }
    if (type == BS_PICTURE_B) {
        bs_put(bw, 1, 0);   /* full_pel_backward_vector */
        bs_put(bw, 3, pic->mpeg2 ? 7 : (uint32_t)pic->f_code_bwd);
    }
    bs_put(bw, 1, 0);       /* extra_bit_picture */
    if (!pic->mpeg2)
        return;
    /* §6.2.3.1 picture_coding_extension; f_code 15 marks an unused direction */
    uint32_t ff = type != BS_PICTURE_I ? (uint32_t)pic->f_code_fwd : 15;
    uint32_t fb = type == BS_PICTURE_B ? (uint32_t)pic->f_code_bwd : 15;
    bs_put_start_code(bw, BS_START_EXTENSION);
    bs_put(bw, 4, 8);       /* extension_start_code_identifier: Picture Coding */
    bs_put(bw, 4, ff);      /* f_code[0][0] forward horizontal */
    bs_put(bw, 4, ff);      /* f_code[0][1] forward vertical */
    bs_put(bw, 4, fb);      /* f_code[1][0] backward horizontal */
    bs_put(bw, 4, fb);      /* f_code[1][1] backward vertical */
    bs_put(bw, 2, (uint32_t)pic->intra_dc_precision);   /* 8 + n bits */
    bs_put(bw, 2, 3);       /* picture_structure: frame */
    bs_put(bw, 1, 0);       /* top_field_first */
    bs_put(bw, 1, 1);       /* frame_pred_frame_dct */
    bs_put(bw, 1, 0);       /* concealment_motion_vectors */
    bs_put(bw, 1, pic->q_scale_type ? 1 : 0);   /* q_scale_type: linear or Table 7-6 */
    bs_put(bw, 1, pic->intra_vlc_format ? 1 : 0);   /* intra blocks: table B.14 or B.15 */
    bs_put(bw, 1, pic->alternate_scan ? 1 : 0);     /* zigzag or Figure 7-3 */
    bs_put(bw, 1, 0);       /* repeat_first_field */
    bs_put(bw, 1, 1);       /* chroma_420_type (= progressive_frame) */
    bs_put(bw, 1, 1);       /* progressive_frame */
    bs_put(bw, 1, 0);       /* composite_display_flag */
}

void bs_write_slice_header(BsWriter *bw, int mpeg2, int tall_picture, int mb_row, int qscale_code)
{
    /* §6.2.4 slice(); start codes 0x01..0xAF carry the row */
    if (mpeg2 && tall_picture) {
        bs_put_start_code(bw, (uint8_t)((mb_row & 127) + 1));
        bs_put(bw, 3, (uint32_t)mb_row >> 7);  /* slice_vertical_position_extension */
    } else {
        bs_put_start_code(bw, (uint8_t)(mb_row + 1));
    }
    bs_put(bw, 5, (uint32_t)qscale_code);     /* quantiser_scale_code */
    bs_put(bw, 1, 0);                         /* extra_bit_slice */
}

void bs_write_sequence_end(BsWriter *bw)
{
    bs_put_start_code(bw, BS_START_SEQUENCE_END);
}

void bs_write_mb_addr_inc(BsWriter *bw, int increment)
{
    while (increment > 33) {
        bs_put(bw, bs_vlc_mb_escape.len, bs_vlc_mb_escape.code);
        increment -= 33;
    }
    bs_put(bw, bs_vlc_mb_addr_inc[increment].len, bs_vlc_mb_addr_inc[increment].code);
}

void bs_write_motion_delta(BsWriter *bw, int delta, int f_code)
{
    /* §7.6.3.1 inverted: |delta| - 1 = (|motion_code| - 1) * f + motion_residual */
    const int r_size = f_code - 1, f = 1 << r_size;
    int code, residual = 0;

    if (delta == 0) {
        code = 0;
    } else {
        int a = abs(delta) - 1;
        code = a / f + 1;
        residual = a % f;
        if (delta < 0)
            code = -code;
    }
    bs_put(bw, bs_vlc_motion_code[code + 16].len, bs_vlc_motion_code[code + 16].code);
    if (r_size > 0 && code != 0)
        bs_put(bw, r_size, (uint32_t)residual);
}

static void put_escape(BsWriter *bw, int run, int level, int mpeg2)
{
    bs_put(bw, bs_vlc_dct_escape.len, bs_vlc_dct_escape.code);
    bs_put(bw, 6, (uint32_t)run);
    if (mpeg2) {
        bs_put(bw, 12, (uint32_t)level & 0xFFF);      /* 13818-2 Table B.16 */
    } else if (level >= -127 && level <= 127) {
        bs_put(bw, 8, (uint32_t)level & 0xFF);        /* 11172-2 Table B.5f */
    } else {
        bs_put(bw, 8, level < 0 ? 0x80 : 0x00);
        bs_put(bw, 8, (uint32_t)(level < 0 ? level + 256 : level));
    }
}

/* Coefficients scan[start..63] as run/level codes, then end_of_block. */
static void put_coefficients(BsWriter *bw, const int16_t scan[64], int start, int first_short,
                             int mpeg2, int table)
{
    int run = 0;
    int last = 63;

    while (last >= start && !scan[last])
        last--;
    for (int i = start; i <= last; i++) {
        int level = scan[i];
        if (!level) {
            run++;
            continue;
        }
        int a = abs(level);
        uint32_t sign = level < 0;
        if (first_short && run == 0 && a == 1) {
            bs_put(bw, bs_vlc_dct_first_run0_level1.len, bs_vlc_dct_first_run0_level1.code);
            bs_put(bw, 1, sign);
        } else {
            BsVlc v = bs_vlc_dct_coeff(table, run, a);
            if (v.len) {
                bs_put(bw, v.len, v.code);
                bs_put(bw, 1, sign);
            } else {
                put_escape(bw, run, level, mpeg2);
            }
        }
        first_short = 0;
        run = 0;
    }
    bs_put(bw, bs_vlc_dct_eob[table].len, bs_vlc_dct_eob[table].code);
}

/* put_coefficients, visiting only the non-zero positions. */
static void put_coefficients_fast(BsWriter *bw, const int16_t scan[64], int start,
                                  int first_short, int mpeg2, int table)
{
    const BsVlc(*codes)[BS_DCT_MAX_LEVEL + 1] = table == BS_DCT_TABLE_ONE ? bs_vlc_dct_one : bs_vlc_dct_zero;
    uint64_t m = bs_nonzero_mask(scan) & (~(uint64_t)0 << start);
    int prev = start - 1;

    if (first_short && (m & 1) && (scan[0] == 1 || scan[0] == -1)) {
        /* '1s': run 0 level 1 as the first coefficient of a non-intra block */
        bs_put(bw, bs_vlc_dct_first_run0_level1.len + 1,
               bs_vlc_dct_first_run0_level1.code << 1 | (uint32_t)(scan[0] < 0));
        m &= m - 1;
        prev = 0;
    }
    while (m) {
        const int i = __builtin_ctzll(m);
        const int level = scan[i], run = i - prev - 1;
        const int a = level < 0 ? -level : level;
        m &= m - 1;
        prev = i;
        if (run <= BS_DCT_MAX_RUN && a <= BS_DCT_MAX_LEVEL && codes[run][a].len) {
            const BsVlc v = codes[run][a];
            bs_put(bw, v.len + 1, v.code << 1 | (uint32_t)(level < 0));
        } else {
            put_escape(bw, run, level, mpeg2);
        }
    }
    bs_put(bw, bs_vlc_dct_eob[table].len, bs_vlc_dct_eob[table].code);
}

/* §7.2.1: dct_dc_size then dct_dc_differential (one's-complement style for negatives) */
static void put_dc(BsWriter *bw, int dc_diff, int chroma)
{
    int a = abs(dc_diff), size = 0;
    const BsVlc *tab = chroma ? bs_vlc_dc_size_chroma : bs_vlc_dc_size_luma;

    while (a >> size)
        size++;
    bs_put(bw, tab[size].len, tab[size].code);
    if (size)
        bs_put(bw, size, (uint32_t)(dc_diff > 0 ? dc_diff : dc_diff + (1 << size) - 1));
}

void bs_write_intra_block(BsWriter *bw, const int16_t scan[64], int dc_diff, int chroma, int mpeg2,
                          int table)
{
    put_dc(bw, dc_diff, chroma);
    put_coefficients(bw, scan, 1, 0, mpeg2, table);
}

void bs_write_inter_block(BsWriter *bw, const int16_t scan[64], int mpeg2)
{
    put_coefficients(bw, scan, 0, 1, mpeg2, BS_DCT_TABLE_ZERO);
}

void bs_write_intra_block_fast(BsWriter *bw, const int16_t scan[64], int dc_diff, int chroma,
                               int mpeg2, int table)
{
    put_dc(bw, dc_diff, chroma);
    put_coefficients_fast(bw, scan, 1, 0, mpeg2, table);
}

void bs_write_inter_block_fast(BsWriter *bw, const int16_t scan[64], int mpeg2)
{
    put_coefficients_fast(bw, scan, 0, 1, mpeg2, BS_DCT_TABLE_ZERO);
}
