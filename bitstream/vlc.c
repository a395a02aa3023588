/* vlc.c — the variable-length code tables of ISO/IEC 11172-2 Annex B and
 * ISO/IEC 13818-2 Annex B.
 *
 * Every code below is written as the bit string printed in the standard
 * ("0000 0001 1101", with the DCT tables' trailing " s" sign placeholder) and
 * turned into a right-aligned (code, len) pair by the BS_VLC() macro while
 * compiling, so the source can be proof-read line by line against the
 * printed tables, and nothing is built at run time (no mutable state). */
#include "vlc.h"

/* ---- compile-time conversion of "0101 1" into {code, len} ---------------
 *
 * A string literal indexed by a constant is folded by both gcc and clang in
 * static initializers (also under -pedantic).  Characters allowed: '0', '1',
 * ' ' (grouping, as printed), and 's' as the very last character (the sign bit
 * the standard shows after DCT codes; it is not part of the returned code:
 * see vlc.h).  Any other character, an over-long string or a string without
 * bits makes the length a division by zero, which is a compile error, so a
 * typo cannot silently produce a wrong table entry. */
#define BS_VLC_MAX_CHARS 24

/* Padding the literal with NULs lets every position up to BS_VLC_MAX_CHARS
 * be read without a bounds test; the concatenation also only compiles for a
 * string literal, never a pointer. */
#define BS_CH(s, i)                                                          \
    ((s "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0")[i])
#define BS_ISBIT(c) ((unsigned)((c) - '0') <= 1u)
#define BS_ONE(c) ((uint32_t)((c) == '1'))
/* Horner step: shift in one bit if the character is a bit (acc used once, so
 * the nesting below stays linear in size). */
#define BS_STEP(acc, s, i) (((acc) << BS_ISBIT(BS_CH(s, i))) | BS_ONE(BS_CH(s, i)))
#define BS_H1(s) BS_STEP(0u, s, 0)
#define BS_H2(s) BS_STEP(BS_H1(s), s, 1)
#define BS_H3(s) BS_STEP(BS_H2(s), s, 2)
#define BS_H4(s) BS_STEP(BS_H3(s), s, 3)
#define BS_H5(s) BS_STEP(BS_H4(s), s, 4)
#define BS_H6(s) BS_STEP(BS_H5(s), s, 5)
#define BS_H7(s) BS_STEP(BS_H6(s), s, 6)
#define BS_H8(s) BS_STEP(BS_H7(s), s, 7)
#define BS_H9(s) BS_STEP(BS_H8(s), s, 8)
#define BS_H10(s) BS_STEP(BS_H9(s), s, 9)
#define BS_H11(s) BS_STEP(BS_H10(s), s, 10)
#define BS_H12(s) BS_STEP(BS_H11(s), s, 11)
#define BS_H13(s) BS_STEP(BS_H12(s), s, 12)
#define BS_H14(s) BS_STEP(BS_H13(s), s, 13)
#define BS_H15(s) BS_STEP(BS_H14(s), s, 14)
#define BS_H16(s) BS_STEP(BS_H15(s), s, 15)
#define BS_H17(s) BS_STEP(BS_H16(s), s, 16)
#define BS_H18(s) BS_STEP(BS_H17(s), s, 17)
#define BS_H19(s) BS_STEP(BS_H18(s), s, 18)
#define BS_H20(s) BS_STEP(BS_H19(s), s, 19)
#define BS_H21(s) BS_STEP(BS_H20(s), s, 20)
#define BS_H22(s) BS_STEP(BS_H21(s), s, 21)
#define BS_H23(s) BS_STEP(BS_H22(s), s, 22)
#define BS_H24(s) BS_STEP(BS_H23(s), s, 23)
#define BS_CODE(s) BS_H24(s)

#define BS_B(s, i) BS_ISBIT(BS_CH(s, i))
#define BS_NBITS(s)                                                          \
    (BS_B(s, 0) + BS_B(s, 1) + BS_B(s, 2) + BS_B(s, 3) + BS_B(s, 4) +         \
     BS_B(s, 5) + BS_B(s, 6) + BS_B(s, 7) + BS_B(s, 8) + BS_B(s, 9) +         \
     BS_B(s, 10) + BS_B(s, 11) + BS_B(s, 12) + BS_B(s, 13) + BS_B(s, 14) +    \
     BS_B(s, 15) + BS_B(s, 16) + BS_B(s, 17) + BS_B(s, 18) + BS_B(s, 19) +    \
     BS_B(s, 20) + BS_B(s, 21) + BS_B(s, 22) + BS_B(s, 23))

#define BS_SP(s, i) (BS_CH(s, i) == ' ')
#define BS_NSPACES(s)                                                        \
    (BS_SP(s, 0) + BS_SP(s, 1) + BS_SP(s, 2) + BS_SP(s, 3) + BS_SP(s, 4) +    \
     BS_SP(s, 5) + BS_SP(s, 6) + BS_SP(s, 7) + BS_SP(s, 8) + BS_SP(s, 9) +    \
     BS_SP(s, 10) + BS_SP(s, 11) + BS_SP(s, 12) + BS_SP(s, 13) +              \
     BS_SP(s, 14) + BS_SP(s, 15) + BS_SP(s, 16) + BS_SP(s, 17) +              \
     BS_SP(s, 18) + BS_SP(s, 19) + BS_SP(s, 20) + BS_SP(s, 21) +              \
     BS_SP(s, 22) + BS_SP(s, 23))
#define BS_NCHARS(s) (sizeof(s) - 1)
/* Valid when every character is a bit or a space, except possibly a final
 * 's'; an 's' anywhere else, or any other character, breaks the count. */
#define BS_VALID(s)                                                          \
    (BS_NCHARS(s) >= 1 && BS_NCHARS(s) <= BS_VLC_MAX_CHARS &&                \
     BS_NBITS(s) > 0 &&                                                      \
     BS_NBITS(s) + BS_NSPACES(s) + (BS_CH(s, BS_NCHARS(s) - 1) == 's') ==    \
         BS_NCHARS(s))

#define BS_VLC(s) { BS_CODE(s), (uint8_t)(BS_NBITS(s) / BS_VALID(s)) }

/* ---- Table B.1 macroblock_address_increment ---------------------------- */

const BsVlc bs_vlc_mb_addr_inc[34] = {
    [1] = BS_VLC("1"),
    [2] = BS_VLC("011"),
    [3] = BS_VLC("010"),
    [4] = BS_VLC("0011"),
    [5] = BS_VLC("0010"),
    [6] = BS_VLC("0001 1"),
    [7] = BS_VLC("0001 0"),
    [8] = BS_VLC("0000 111"),
    [9] = BS_VLC("0000 110"),
    [10] = BS_VLC("0000 1011"),
    [11] = BS_VLC("0000 1010"),
    [12] = BS_VLC("0000 1001"),
    [13] = BS_VLC("0000 1000"),
    [14] = BS_VLC("0000 0111"),
    [15] = BS_VLC("0000 0110"),
    [16] = BS_VLC("0000 0101 11"),
    [17] = BS_VLC("0000 0101 10"),
    [18] = BS_VLC("0000 0101 01"),
    [19] = BS_VLC("0000 0101 00"),
    [20] = BS_VLC("0000 0100 11"),
    [21] = BS_VLC("0000 0100 10"),
    [22] = BS_VLC("0000 0100 011"),
    [23] = BS_VLC("0000 0100 010"),
    [24] = BS_VLC("0000 0100 001"),
    [25] = BS_VLC("0000 0100 000"),
    [26] = BS_VLC("0000 0011 111"),
    [27] = BS_VLC("0000 0011 110"),
    [28] = BS_VLC("0000 0011 101"),
    [29] = BS_VLC("0000 0011 100"),
    [30] = BS_VLC("0000 0011 011"),
    [31] = BS_VLC("0000 0011 010"),
    [32] = BS_VLC("0000 0011 001"),
    [33] = BS_VLC("0000 0011 000"),
};

const BsVlc bs_vlc_mb_escape = BS_VLC("0000 0001 000");

/* ---- Tables B.2, B.3, B.4 macroblock_type -------------------------------
 * Indexed [picture_coding_type][flags].  13818-2 adds spatial_temporal_
 * weight_code_flag / permitted_spatial_temporal_weight_classes columns for
 * spatial scalability; without scalability they are 0 and the codes are the
 * same as 11172-2 Tables B.2a-c, which is all we need. */
#define Q BS_MB_QUANT
#define F BS_MB_MOTION_FWD
#define B BS_MB_MOTION_BWD
#define P BS_MB_PATTERN
#define I BS_MB_INTRA
static const BsVlc mb_type_tab[4][32] = {
    /* Table B.2, I pictures */
    [BS_PICTURE_I][I] = BS_VLC("1"),
    [BS_PICTURE_I][Q | I] = BS_VLC("01"),
    /* Table B.3, P pictures */
    [BS_PICTURE_P][F | P] = BS_VLC("1"),
    [BS_PICTURE_P][P] = BS_VLC("01"),
    [BS_PICTURE_P][F] = BS_VLC("001"),
    [BS_PICTURE_P][I] = BS_VLC("0001 1"),
    [BS_PICTURE_P][Q | F | P] = BS_VLC("0001 0"),
    [BS_PICTURE_P][Q | P] = BS_VLC("0000 1"),
    [BS_PICTURE_P][Q | I] = BS_VLC("0000 01"),
    /* Table B.4, B pictures */
    [BS_PICTURE_B][F | B] = BS_VLC("10"),
    [BS_PICTURE_B][F | B | P] = BS_VLC("11"),
    [BS_PICTURE_B][B] = BS_VLC("010"),
    [BS_PICTURE_B][B | P] = BS_VLC("011"),
    [BS_PICTURE_B][F] = BS_VLC("0010"),
    [BS_PICTURE_B][F | P] = BS_VLC("0011"),
    [BS_PICTURE_B][I] = BS_VLC("0001 1"),
    [BS_PICTURE_B][Q | F | B | P] = BS_VLC("0001 0"),
    [BS_PICTURE_B][Q | F | P] = BS_VLC("0000 11"),
    [BS_PICTURE_B][Q | B | P] = BS_VLC("0000 10"),
    [BS_PICTURE_B][Q | I] = BS_VLC("0000 01"),
};
#undef Q
#undef F
#undef B
#undef P
#undef I

BsVlc bs_vlc_mb_type(int picture_type, int flags)
{
    if (picture_type < BS_PICTURE_I || picture_type > BS_PICTURE_B ||
        flags < 0 || flags > 31) {
        BsVlc none = { 0, 0 };
        return none;
    }
    return mb_type_tab[picture_type][flags];
}

/* ---- Table B.9 (13818-2) / B.3 (11172-2) coded_block_pattern ------------
 * In the standard's order (by code). */
const BsVlc bs_vlc_cbp[64] = {
    [60] = BS_VLC("111"),
    [4] = BS_VLC("1101"),
    [8] = BS_VLC("1100"),
    [16] = BS_VLC("1011"),
    [32] = BS_VLC("1010"),
    [12] = BS_VLC("1001 1"),
    [48] = BS_VLC("1001 0"),
    [20] = BS_VLC("1000 1"),
    [40] = BS_VLC("1000 0"),
    [28] = BS_VLC("0111 1"),
    [44] = BS_VLC("0111 0"),
    [52] = BS_VLC("0110 1"),
    [56] = BS_VLC("0110 0"),
    [1] = BS_VLC("0101 1"),
    [61] = BS_VLC("0101 0"),
    [2] = BS_VLC("0100 1"),
    [62] = BS_VLC("0100 0"),
    [24] = BS_VLC("0011 11"),
    [36] = BS_VLC("0011 10"),
    [3] = BS_VLC("0011 01"),
    [63] = BS_VLC("0011 00"),
    [5] = BS_VLC("0010 111"),
    [9] = BS_VLC("0010 110"),
    [17] = BS_VLC("0010 101"),
    [33] = BS_VLC("0010 100"),
    [6] = BS_VLC("0010 011"),
    [10] = BS_VLC("0010 010"),
    [18] = BS_VLC("0010 001"),
    [34] = BS_VLC("0010 000"),
    [7] = BS_VLC("0001 1111"),
    [11] = BS_VLC("0001 1110"),
    [19] = BS_VLC("0001 1101"),
    [35] = BS_VLC("0001 1100"),
    [13] = BS_VLC("0001 1011"),
    [49] = BS_VLC("0001 1010"),
    [21] = BS_VLC("0001 1001"),
    [41] = BS_VLC("0001 1000"),
    [14] = BS_VLC("0001 0111"),
    [50] = BS_VLC("0001 0110"),
    [22] = BS_VLC("0001 0101"),
    [42] = BS_VLC("0001 0100"),
    [15] = BS_VLC("0001 0011"),
    [51] = BS_VLC("0001 0010"),
    [23] = BS_VLC("0001 0001"),
    [43] = BS_VLC("0001 0000"),
    [25] = BS_VLC("0000 1111"),
    [37] = BS_VLC("0000 1110"),
    [26] = BS_VLC("0000 1101"),
    [38] = BS_VLC("0000 1100"),
    [29] = BS_VLC("0000 1011"),
    [45] = BS_VLC("0000 1010"),
    [53] = BS_VLC("0000 1001"),
    [57] = BS_VLC("0000 1000"),
    [30] = BS_VLC("0000 0111"),
    [46] = BS_VLC("0000 0110"),
    [54] = BS_VLC("0000 0101"),
    [58] = BS_VLC("0000 0100"),
    [31] = BS_VLC("0000 0011 1"),
    [47] = BS_VLC("0000 0011 0"),
    [55] = BS_VLC("0000 0010 1"),
    [59] = BS_VLC("0000 0010 0"),
    [27] = BS_VLC("0000 0001 1"),
    [39] = BS_VLC("0000 0001 0"),
    /* 13818-2 only, and its NOTE: "shall not be used with 4:2:0 chrominance
     * structure" (only 4:2:2/4:4:4, where coded_block_pattern_1/2 follow) */
    [0] = BS_VLC("0000 0000 1"),
};

/* ---- Table B.10 (13818-2) / B.4 (11172-2) motion_code -------------------
 * Index motion_code + 16; the last bit of every non-zero code is the sign
 * (0 positive, 1 negative), as the standard prints them. */
const BsVlc bs_vlc_motion_code[33] = {
    [-16 + 16] = BS_VLC("0000 0011 001"),
    [-15 + 16] = BS_VLC("0000 0011 011"),
    [-14 + 16] = BS_VLC("0000 0011 101"),
    [-13 + 16] = BS_VLC("0000 0011 111"),
    [-12 + 16] = BS_VLC("0000 0100 001"),
    [-11 + 16] = BS_VLC("0000 0100 011"),
    [-10 + 16] = BS_VLC("0000 0100 11"),
    [-9 + 16] = BS_VLC("0000 0101 01"),
    [-8 + 16] = BS_VLC("0000 0101 11"),
    [-7 + 16] = BS_VLC("0000 0111"),
    [-6 + 16] = BS_VLC("0000 1001"),
    [-5 + 16] = BS_VLC("0000 1011"),
    [-4 + 16] = BS_VLC("0000 111"),
    [-3 + 16] = BS_VLC("0001 1"),
    [-2 + 16] = BS_VLC("0011"),
    [-1 + 16] = BS_VLC("011"),
    [0 + 16] = BS_VLC("1"),
    [1 + 16] = BS_VLC("010"),
    [2 + 16] = BS_VLC("0010"),
    [3 + 16] = BS_VLC("0001 0"),
    [4 + 16] = BS_VLC("0000 110"),
    [5 + 16] = BS_VLC("0000 1010"),
    [6 + 16] = BS_VLC("0000 1000"),
    [7 + 16] = BS_VLC("0000 0110"),
    [8 + 16] = BS_VLC("0000 0101 10"),
    [9 + 16] = BS_VLC("0000 0101 00"),
    [10 + 16] = BS_VLC("0000 0100 10"),
    [11 + 16] = BS_VLC("0000 0100 010"),
    [12 + 16] = BS_VLC("0000 0100 000"),
    [13 + 16] = BS_VLC("0000 0011 110"),
    [14 + 16] = BS_VLC("0000 0011 100"),
    [15 + 16] = BS_VLC("0000 0011 010"),
    [16 + 16] = BS_VLC("0000 0011 000"),
};

/* ---- Tables B.12 / B.13 dct_dc_size_luminance / _chrominance ----------- */
const BsVlc bs_vlc_dc_size_luma[12] = {
    [0] = BS_VLC("100"),
    [1] = BS_VLC("00"),
    [2] = BS_VLC("01"),
    [3] = BS_VLC("101"),
    [4] = BS_VLC("110"),
    [5] = BS_VLC("1110"),
    [6] = BS_VLC("1111 0"),
    [7] = BS_VLC("1111 10"),
    [8] = BS_VLC("1111 110"),
    [9] = BS_VLC("1111 1110"),
    [10] = BS_VLC("1111 1111 0"),
    [11] = BS_VLC("1111 1111 1"),
};

const BsVlc bs_vlc_dc_size_chroma[12] = {
    [0] = BS_VLC("00"),
    [1] = BS_VLC("01"),
    [2] = BS_VLC("10"),
    [3] = BS_VLC("110"),
    [4] = BS_VLC("1110"),
    [5] = BS_VLC("1111 0"),
    [6] = BS_VLC("1111 10"),
    [7] = BS_VLC("1111 110"),
    [8] = BS_VLC("1111 1110"),
    [9] = BS_VLC("1111 1111 0"),
    [10] = BS_VLC("1111 1111 10"),
    [11] = BS_VLC("1111 1111 11"),
};

/* ---- Tables B.14 / B.15 DCT coefficients -------------------------------
 * Both tables code the same 111 (run, level) pairs: run 0 levels 1..40,
 * run 1 levels 1..18, runs 2..31 with smaller levels.  A dense [run][level]
 * array makes bs_vlc_dct_coeff() a bounds check and one load, which matters
 * because it runs once per coded coefficient. */
#define E(run, level, s) [run][level] = BS_VLC(s)

/* Table B.14, DCT coefficients table zero, in the standard's order.  The
 * standard's first two lines ("1 s" for run 0 level 1 as the first
 * coefficient of a non-intra block, and "10" end_of_block) are
 * bs_vlc_dct_first_run0_level1 and bs_vlc_dct_eob[0] below; "0000 01" is the
 * escape. */
const BsVlc bs_vlc_dct_zero[BS_DCT_MAX_RUN + 1][BS_DCT_MAX_LEVEL + 1] = {
    E(0, 1, "11 s"), /* not the first coefficient (NOTE 3 of B.14) */
    E(1, 1, "011 s"),
    E(0, 2, "0100 s"),
    E(2, 1, "0101 s"),
    E(0, 3, "0010 1 s"),
    E(3, 1, "0011 1 s"),
    E(4, 1, "0011 0 s"),
    E(1, 2, "0001 10 s"),
    E(5, 1, "0001 11 s"),
    E(6, 1, "0001 01 s"),
    E(7, 1, "0001 00 s"),
    E(0, 4, "0000 110 s"),
    E(2, 2, "0000 100 s"),
    E(8, 1, "0000 111 s"),
    E(9, 1, "0000 101 s"),
    E(0, 5, "0010 0110 s"),
    E(0, 6, "0010 0001 s"),
    E(1, 3, "0010 0101 s"),
    E(3, 2, "0010 0100 s"),
    E(10, 1, "0010 0111 s"),
    E(11, 1, "0010 0011 s"),
    E(12, 1, "0010 0010 s"),
    E(13, 1, "0010 0000 s"),
    E(0, 7, "0000 0010 10 s"),
    E(1, 4, "0000 0011 00 s"),
    E(2, 3, "0000 0010 11 s"),
    E(4, 2, "0000 0011 11 s"),
    E(5, 2, "0000 0010 01 s"),
    E(14, 1, "0000 0011 10 s"),
    E(15, 1, "0000 0011 01 s"),
    E(16, 1, "0000 0010 00 s"),
    E(0, 8, "0000 0001 1101 s"),
    E(0, 9, "0000 0001 1000 s"),
    E(0, 10, "0000 0001 0011 s"),
    E(0, 11, "0000 0001 0000 s"),
    E(1, 5, "0000 0001 1011 s"),
    E(2, 4, "0000 0001 0100 s"),
    E(3, 3, "0000 0001 1100 s"),
    E(4, 3, "0000 0001 0010 s"),
    E(6, 2, "0000 0001 1110 s"),
    E(7, 2, "0000 0001 0101 s"),
    E(8, 2, "0000 0001 0001 s"),
    E(17, 1, "0000 0001 1111 s"),
    E(18, 1, "0000 0001 1010 s"),
    E(19, 1, "0000 0001 1001 s"),
    E(20, 1, "0000 0001 0111 s"),
    E(21, 1, "0000 0001 0110 s"),
    E(0, 12, "0000 0000 1101 0 s"),
    E(0, 13, "0000 0000 1100 1 s"),
    E(0, 14, "0000 0000 1100 0 s"),
    E(0, 15, "0000 0000 1011 1 s"),
    E(1, 6, "0000 0000 1011 0 s"),
    E(1, 7, "0000 0000 1010 1 s"),
    E(2, 5, "0000 0000 1010 0 s"),
    E(3, 4, "0000 0000 1001 1 s"),
    E(5, 3, "0000 0000 1001 0 s"),
    E(9, 2, "0000 0000 1000 1 s"),
    E(10, 2, "0000 0000 1000 0 s"),
    E(22, 1, "0000 0000 1111 1 s"),
    E(23, 1, "0000 0000 1111 0 s"),
    E(24, 1, "0000 0000 1110 1 s"),
    E(25, 1, "0000 0000 1110 0 s"),
    E(26, 1, "0000 0000 1101 1 s"),
    E(0, 16, "0000 0000 0111 11 s"),
    E(0, 17, "0000 0000 0111 10 s"),
    E(0, 18, "0000 0000 0111 01 s"),
    E(0, 19, "0000 0000 0111 00 s"),
    E(0, 20, "0000 0000 0110 11 s"),
    E(0, 21, "0000 0000 0110 10 s"),
    E(0, 22, "0000 0000 0110 01 s"),
    E(0, 23, "0000 0000 0110 00 s"),
    E(0, 24, "0000 0000 0101 11 s"),
    E(0, 25, "0000 0000 0101 10 s"),
    E(0, 26, "0000 0000 0101 01 s"),
    E(0, 27, "0000 0000 0101 00 s"),
    E(0, 28, "0000 0000 0100 11 s"),
    E(0, 29, "0000 0000 0100 10 s"),
    E(0, 30, "0000 0000 0100 01 s"),
    E(0, 31, "0000 0000 0100 00 s"),
    E(0, 32, "0000 0000 0011 000 s"),
    E(0, 33, "0000 0000 0010 111 s"),
    E(0, 34, "0000 0000 0010 110 s"),
    E(0, 35, "0000 0000 0010 101 s"),
    E(0, 36, "0000 0000 0010 100 s"),
    E(0, 37, "0000 0000 0010 011 s"),
    E(0, 38, "0000 0000 0010 010 s"),
    E(0, 39, "0000 0000 0010 001 s"),
    E(0, 40, "0000 0000 0010 000 s"),
    E(1, 8, "0000 0000 0011 111 s"),
    E(1, 9, "0000 0000 0011 110 s"),
    E(1, 10, "0000 0000 0011 101 s"),
    E(1, 11, "0000 0000 0011 100 s"),
    E(1, 12, "0000 0000 0011 011 s"),
    E(1, 13, "0000 0000 0011 010 s"),
    E(1, 14, "0000 0000 0011 001 s"),
    E(1, 15, "0000 0000 0001 0011 s"),
    E(1, 16, "0000 0000 0001 0010 s"),
    E(1, 17, "0000 0000 0001 0001 s"),
    E(1, 18, "0000 0000 0001 0000 s"),
    E(6, 3, "0000 0000 0001 0100 s"),
    E(11, 2, "0000 0000 0001 1010 s"),
    E(12, 2, "0000 0000 0001 1001 s"),
    E(13, 2, "0000 0000 0001 1000 s"),
    E(14, 2, "0000 0000 0001 0111 s"),
    E(15, 2, "0000 0000 0001 0110 s"),
    E(16, 2, "0000 0000 0001 0101 s"),
    E(27, 1, "0000 0000 0001 1111 s"),
    E(28, 1, "0000 0000 0001 1110 s"),
    E(29, 1, "0000 0000 0001 1101 s"),
    E(30, 1, "0000 0000 0001 1100 s"),
    E(31, 1, "0000 0000 0001 1011 s"),
};

/* Table B.15, DCT coefficients table one (13818-2 only, intra blocks with
 * intra_vlc_format 1), in the same (run, level) order as B.14.  End of block
 * is "0110" (bs_vlc_dct_eob[1]); the escape is the same "0000 01".  39 pairs
 * get codes different from table zero's (tuned to intra statistics); every
 * other pair, all with codes of 12 bits or more, keeps table zero's code. */
const BsVlc bs_vlc_dct_one[BS_DCT_MAX_RUN + 1][BS_DCT_MAX_LEVEL + 1] = {
    E(0, 1, "10 s"),
    E(1, 1, "010 s"),
    E(0, 2, "110 s"),
    E(2, 1, "0010 1 s"),
    E(0, 3, "0111 s"),
    E(3, 1, "0011 1 s"),
    E(4, 1, "0001 10 s"),
    E(1, 2, "0011 0 s"),
    E(5, 1, "0001 11 s"),
    E(6, 1, "0000 110 s"),
    E(7, 1, "0000 100 s"),
    E(0, 4, "1110 0 s"),
    E(2, 2, "0000 111 s"),
    E(8, 1, "0000 101 s"),
    E(9, 1, "1111 000 s"),
    E(0, 5, "1110 1 s"),
    E(0, 6, "0001 01 s"),
    E(1, 3, "1111 001 s"),
    E(3, 2, "0010 0110 s"),
    E(10, 1, "1111 010 s"),
    E(11, 1, "0010 0001 s"),
    E(12, 1, "0010 0101 s"),
    E(13, 1, "0010 0100 s"),
    E(0, 7, "0001 00 s"),
    E(1, 4, "0010 0111 s"),
    E(2, 3, "1111 1100 s"),
    E(4, 2, "1111 1101 s"),
    E(5, 2, "0000 0010 0 s"),
    E(14, 1, "0000 0010 1 s"),
    E(15, 1, "0000 0011 1 s"),
    E(16, 1, "0000 0011 01 s"),
    E(0, 8, "1111 011 s"),
    E(0, 9, "1111 100 s"),
    E(0, 10, "0010 0011 s"),
    E(0, 11, "0010 0010 s"),
    E(1, 5, "0010 0000 s"),
    E(2, 4, "0000 0011 00 s"),
    E(3, 3, "0000 0001 1100 s"),
    E(4, 3, "0000 0001 0010 s"),
    E(6, 2, "0000 0001 1110 s"),
    E(7, 2, "0000 0001 0101 s"),
    E(8, 2, "0000 0001 0001 s"),
    E(17, 1, "0000 0001 1111 s"),
    E(18, 1, "0000 0001 1010 s"),
    E(19, 1, "0000 0001 1001 s"),
    E(20, 1, "0000 0001 0111 s"),
    E(21, 1, "0000 0001 0110 s"),
    E(0, 12, "1111 1010 s"),
    E(0, 13, "1111 1011 s"),
    E(0, 14, "1111 1110 s"),
    E(0, 15, "1111 1111 s"),
    E(1, 6, "0000 0000 1011 0 s"),
    E(1, 7, "0000 0000 1010 1 s"),
    E(2, 5, "0000 0000 1010 0 s"),
    E(3, 4, "0000 0000 1001 1 s"),
    E(5, 3, "0000 0000 1001 0 s"),
    E(9, 2, "0000 0000 1000 1 s"),
    E(10, 2, "0000 0000 1000 0 s"),
    E(22, 1, "0000 0000 1111 1 s"),
    E(23, 1, "0000 0000 1111 0 s"),
    E(24, 1, "0000 0000 1110 1 s"),
    E(25, 1, "0000 0000 1110 0 s"),
    E(26, 1, "0000 0000 1101 1 s"),
    E(0, 16, "0000 0000 0111 11 s"),
    E(0, 17, "0000 0000 0111 10 s"),
    E(0, 18, "0000 0000 0111 01 s"),
    E(0, 19, "0000 0000 0111 00 s"),
    E(0, 20, "0000 0000 0110 11 s"),
    E(0, 21, "0000 0000 0110 10 s"),
    E(0, 22, "0000 0000 0110 01 s"),
    E(0, 23, "0000 0000 0110 00 s"),
    E(0, 24, "0000 0000 0101 11 s"),
    E(0, 25, "0000 0000 0101 10 s"),
    E(0, 26, "0000 0000 0101 01 s"),
    E(0, 27, "0000 0000 0101 00 s"),
    E(0, 28, "0000 0000 0100 11 s"),
    E(0, 29, "0000 0000 0100 10 s"),
    E(0, 30, "0000 0000 0100 01 s"),
    E(0, 31, "0000 0000 0100 00 s"),
    E(0, 32, "0000 0000 0011 000 s"),
    E(0, 33, "0000 0000 0010 111 s"),
    E(0, 34, "0000 0000 0010 110 s"),
    E(0, 35, "0000 0000 0010 101 s"),
    E(0, 36, "0000 0000 0010 100 s"),
    E(0, 37, "0000 0000 0010 011 s"),
    E(0, 38, "0000 0000 0010 010 s"),
    E(0, 39, "0000 0000 0010 001 s"),
    E(0, 40, "0000 0000 0010 000 s"),
    E(1, 8, "0000 0000 0011 111 s"),
    E(1, 9, "0000 0000 0011 110 s"),
    E(1, 10, "0000 0000 0011 101 s"),
    E(1, 11, "0000 0000 0011 100 s"),
    E(1, 12, "0000 0000 0011 011 s"),
    E(1, 13, "0000 0000 0011 010 s"),
    E(1, 14, "0000 0000 0011 001 s"),
    E(1, 15, "0000 0000 0001 0011 s"),
    E(1, 16, "0000 0000 0001 0010 s"),
    E(1, 17, "0000 0000 0001 0001 s"),
    E(1, 18, "0000 0000 0001 0000 s"),
    E(6, 3, "0000 0000 0001 0100 s"),
    E(11, 2, "0000 0000 0001 1010 s"),
    E(12, 2, "0000 0000 0001 1001 s"),
    E(13, 2, "0000 0000 0001 1000 s"),
    E(14, 2, "0000 0000 0001 0111 s"),
    E(15, 2, "0000 0000 0001 0110 s"),
    E(16, 2, "0000 0000 0001 0101 s"),
    E(27, 1, "0000 0000 0001 1111 s"),
    E(28, 1, "0000 0000 0001 1110 s"),
    E(29, 1, "0000 0000 0001 1101 s"),
    E(30, 1, "0000 0000 0001 1100 s"),
    E(31, 1, "0000 0000 0001 1011 s"),
};
#undef E

BsVlc bs_vlc_dct_coeff(int table, int run, int level_abs)
{
    /* Unsigned compares fold the negative cases into the upper bound. */
    if ((unsigned)run > BS_DCT_MAX_RUN || (unsigned)level_abs > BS_DCT_MAX_LEVEL) {
        BsVlc none = { 0, 0 };
        return none;
    }
    if (table == BS_DCT_TABLE_ONE)
        return bs_vlc_dct_one[run][level_abs];
    if (table == BS_DCT_TABLE_ZERO)
        return bs_vlc_dct_zero[run][level_abs];
    BsVlc none = { 0, 0 };
    return none;
}

/* B.14 NOTE 2: "1 s" codes run 0 level 1 only as the first coefficient of a
 * non-intra block, where end_of_block cannot occur. */
const BsVlc bs_vlc_dct_first_run0_level1 = BS_VLC("1 s");
const BsVlc bs_vlc_dct_eob[2] = {
    [BS_DCT_TABLE_ZERO] = BS_VLC("10"),
    [BS_DCT_TABLE_ONE] = BS_VLC("0110"),
};
/* Followed by 6-bit run and 12-bit level (13818-2 Table B.16), or by the
 * 8/16-bit level of 11172-2 §2.4.3.7: the block writer's business. */
const BsVlc bs_vlc_dct_escape = BS_VLC("0000 01");
