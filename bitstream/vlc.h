/* vlc.h — variable-length code tables of ISO/IEC 11172-2 Annex B (MPEG-1)
 * and ISO/IEC 13818-2 Annex B (MPEG-2), as (code, length) pairs ready for
 * bs_put().  Codes are right-aligned in `code`; `len` 0 marks "no such code".
 * Sign bits and escape payloads are not part of these entries: the block
 * writer appends them. */
#ifndef MPE_VLC_H
#define MPE_VLC_H

#include <stdint.h>

typedef struct BsVlc {
    uint32_t code;
    uint8_t len;
} BsVlc;

/* Table B.1 macroblock_address_increment, index 1..33 ([0] has len 0). */
extern const BsVlc bs_vlc_mb_addr_inc[34];
/* macroblock_escape '0000 0001 000': adds 33 to the increment. */
extern const BsVlc bs_vlc_mb_escape;

/* macroblock_type flags (Table B.2, B.3, B.4 of 13818-2 = B.2a-c of 11172-2). */
enum {
    BS_MB_QUANT = 1,
    BS_MB_MOTION_FWD = 2,
    BS_MB_MOTION_BWD = 4,
    BS_MB_PATTERN = 8,
    BS_MB_INTRA = 16,
};
/* picture_coding_type as coded: 1 = I, 2 = P, 3 = B. */
enum { BS_PICTURE_I = 1, BS_PICTURE_P = 2, BS_PICTURE_B = 3 };

/* macroblock_type code for a picture type and an or of BS_MB_* flags;
 * len 0 if the combination is not allowed in that picture type. */
BsVlc bs_vlc_mb_type(int picture_type, int flags);

/* Table B.9 (13818-2) / B.3 (11172-2) coded_block_pattern, index 0..63.
 * Index 0 ('0000 0000 1') exists only in MPEG-2, and Table B.9 says it shall
 * not be used with 4:2:0: a 4:2:0 encoder never writes it (a macroblock
 * with nothing coded uses a macroblock_type without the pattern flag). */
extern const BsVlc bs_vlc_cbp[64];

/* Table B.10 (13818-2) / B.4 (11172-2) motion_code, index motion_code + 16
 * for motion_code -16..16 (sign included in the code). */
extern const BsVlc bs_vlc_motion_code[33];

/* Tables B.12 / B.13 dct_dc_size_luminance / _chrominance, index 0..11
 * (sizes 9..11 are MPEG-2 only; MPEG-1 with 8-bit DC uses 0..8). */
extern const BsVlc bs_vlc_dc_size_luma[12];
extern const BsVlc bs_vlc_dc_size_chroma[12];

/* DCT coefficient tables (B.14 "table zero", used by MPEG-1 and by MPEG-2
 * with intra_vlc_format 0; B.15 "table one", MPEG-2 intra_vlc_format 1). */
enum { BS_DCT_TABLE_ZERO = 0, BS_DCT_TABLE_ONE = 1 };

/* Code for (run, |level|) without its trailing sign bit; len 0 if the pair
 * has no code and must be escaped.  For table zero, run 0 level 1 returns
 * '11' (the code used for any coefficient but the first of a non-intra
 * block); the first coefficient of a non-intra block uses
 * bs_vlc_dct_first_run0_level1 ('1') instead. */
BsVlc bs_vlc_dct_coeff(int table, int run, int level_abs);
/* Table zero itself, [run][level_abs] (len 0: escape), for writers that
 * check the bounds themselves. */
#define BS_DCT_MAX_RUN 31
#define BS_DCT_MAX_LEVEL 40
extern const BsVlc bs_vlc_dct_zero[BS_DCT_MAX_RUN + 1][BS_DCT_MAX_LEVEL + 1];
extern const BsVlc bs_vlc_dct_one[BS_DCT_MAX_RUN + 1][BS_DCT_MAX_LEVEL + 1];
extern const BsVlc bs_vlc_dct_first_run0_level1;  /* '1' (table zero only) */
extern const BsVlc bs_vlc_dct_eob[2];             /* '10' / '0110' */
extern const BsVlc bs_vlc_dct_escape;             /* '0000 01' (both tables) */

#endif
