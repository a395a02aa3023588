/* mpeg12.h — MPEG-1 (ISO/IEC 11172-2) and MPEG-2 (ISO/IEC 13818-2) syntax
 * writers: straight-line sequences of bs_put() calls, one per syntax element.
 * The encoder decides; these only write what they are told. */
#ifndef MPE_MPEG12_H
#define MPE_MPEG12_H

#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bitwriter.h"
#include "vlc.h"

enum {
    BS_START_PICTURE = 0x00,
    BS_START_USER_DATA = 0xB2,
    BS_START_SEQUENCE = 0xB3,
    BS_START_EXTENSION = 0xB5,
    BS_START_SEQUENCE_END = 0xB7,
    BS_START_GOP = 0xB8,
};

typedef struct BsSequence {
    int mpeg2;
    int width, height;           /* 1..4095 */
    int aspect_ratio_code;       /* 1: square samples / pels */
    int frame_rate_code;         /* 1..8 */
    int frame_rate_ext_n;        /* MPEG-2: rate = code's rate * (n+1)/(d+1) */
    int frame_rate_ext_d;
    uint32_t bit_rate;           /* units of 400 bit/s; MPEG-1 0x3FFFF = variable */
    uint32_t vbv_buffer_size;    /* units of 16384 bits */
    int profile_and_level;       /* MPEG-2 profile_and_level_indication */
    int low_delay;               /* MPEG-2: 1 when there are no B pictures */
    const uint8_t *intra_matrix; /* loaded in the header, in zigzag order; NULL: the default */
    const uint8_t *inter_matrix; /* non-intra, the same */
} BsSequence;

typedef struct BsPictureHeader {
    int mpeg2;
    int temporal_reference;      /* display order within the GOP, mod 1024 */
    int coding_type;             /* BS_PICTURE_I / _P / _B */
    int f_code_fwd;              /* 1..7 (MPEG-1), 1..9 (MPEG-2); unused for I */
    int f_code_bwd;              /* B pictures only */
    int vbv_delay;               /* 90 kHz units, 1..0xFFFE (constant rate); 0 = 0xFFFF, variable */
    int q_scale_type;            /* MPEG-2: 1 = non-linear quantiser_scale (Table 7-6) */
    int intra_dc_precision;      /* MPEG-2: 0..3 = 8..11 bits */
    int intra_vlc_format;        /* MPEG-2: 1 = intra blocks use Table B.15 */
    int alternate_scan;          /* MPEG-2: 1 = Figure 7-3 scan */
} BsPictureHeader;

/* sequence_header (+ sequence_extension for MPEG-2), with the matrices seq
 * names (the defaults where NULL). */
void bs_write_sequence_header(BsWriter *bw, const BsSequence *seq);
/* group_of_pictures_header with a non-drop-frame time code. */
void bs_write_gop_header(BsWriter *bw, int hours, int minutes, int seconds, int pictures,
                         int closed_gop);
/* picture_header (+ picture_coding_extension for MPEG-2: frame picture,
 * progressive, frame_pred_frame_dct; q_scale_type, intra_dc_precision,
 * intra_vlc_format and alternate_scan as given). */
void bs_write_picture_header(BsWriter *bw, const BsPictureHeader *pic);
/* slice_header for the slice starting on macroblock row mb_row;
 * tall_picture: MPEG-2 vertical_size > 2800 (slice_vertical_position_extension). */
void bs_write_slice_header(BsWriter *bw, int mpeg2, int tall_picture, int mb_row, int qscale_code);
void bs_write_sequence_end(BsWriter *bw);

/* macroblock_address_increment >= 1, with macroblock_escape as needed. */
void bs_write_mb_addr_inc(BsWriter *bw, int increment);
/* motion_code + motion_residual of one vector component; `delta` is the
 * difference to the predictor already wrapped into [-16f, 16f-1]. */
void bs_write_motion_delta(BsWriter *bw, int delta, int f_code);
/* Bits bs_write_motion_delta spends on `delta` (inline: the slice coder
 * prices six components a macroblock and direction). */
static inline int bs_motion_delta_bits(int delta, int f_code)
{
    const int r_size = f_code - 1;
    if (delta == 0)
        return bs_vlc_motion_code[16].len;
    const int a = delta < 0 ? -delta : delta;
    const int code = ((a - 1) >> r_size) + 1;   /* f = 2^r_size, a non-negative dividend */
    return bs_vlc_motion_code[16 + (delta < 0 ? -code : code)].len + r_size;
}

/* One block's coefficients, `scan` in transmission order (zigzag or
 * alternate).  Intra blocks use table (BS_DCT_TABLE_ZERO, or _ONE for MPEG-2
 * intra_vlc_format 1); non-intra blocks always table zero.  Intra: dc_diff is the DC
 * level minus its predictor (dct_dc_differential), scan[0] is ignored and the
 * AC coefficients follow.  Non-intra: all 64 from scan[0], the first with the
 * short '1s' code where it applies; the block must have a non-zero level.
 * Escapes: MPEG-1 8/16-bit levels (|level| <= 255), MPEG-2 12-bit. */
void bs_write_intra_block(BsWriter *bw, const int16_t scan[64], int dc_diff, int chroma, int mpeg2,
                          int table);
void bs_write_inter_block(BsWriter *bw, const int16_t scan[64], int mpeg2);
/* The same bits, faster: the non-zero coefficients are found from a 64-bit
 * mask (SSE2 compares where available) instead of a test per position, the
 * table is read directly and code and sign go out in one write. */
void bs_write_intra_block_fast(BsWriter *bw, const int16_t scan[64], int dc_diff, int chroma,
                               int mpeg2, int table);
void bs_write_inter_block_fast(BsWriter *bw, const int16_t scan[64], int mpeg2);

/* Bit i set when scan[i] != 0 (SSE2 compares where available): the fast
 * writers' and bit counters' walk over the non-zero levels only. */
static inline uint64_t bs_nonzero_mask(const int16_t scan[64])
{
    uint64_t m = 0;
#if defined(__SSE2__)
    const __m128i z = _mm_setzero_si128();
    for (int i = 0; i < 64; i += 16) {
        __m128i a = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(scan + i)), z);
        __m128i b = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(scan + i + 8)), z);
        uint32_t zero = (uint32_t)_mm_movemask_epi8(_mm_packs_epi16(a, b));
        m |= (uint64_t)(~zero & 0xFFFFu) << i;
    }
#else
    for (int i = 0; i < 64; i++)
        m |= (uint64_t)(scan[i] != 0) << i;
#endif
    return m;
}

#endif
