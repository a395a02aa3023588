/* test_vlc.c — checks the Annex B variable-length code tables in vlc.c.
 *
 * Structural checks (entry counts, prefix-freeness, exact Kraft sums, length
 * bounds) catch most single-bit typos; spot checks typed here independently
 * of vlc.c catch swapped entries; a random write/decode round trip through
 * the bit writer and reader checks the tables are usable as a whole. */
#include "bitstream/bitreader.h"
#include "bitstream/bitwriter.h"
#include "bitstream/vlc.h"
#include "tests/test.h"

#include <stdint.h>

/* ---- helpers ------------------------------------------------------------ */

/* The test's own reading of a bit string such as "0000 0001 1101" (spaces
 * ignored), kept deliberately simple and independent of vlc.c's macro. */
static BsVlc parse_bits(const char *s)
{
    BsVlc v = { 0, 0 };
    for (; *s; s++) {
        if (*s == '0' || *s == '1') {
            v.code = (v.code << 1) | (uint32_t)(*s - '0');
            v.len++;
        } else if (*s != ' ') {
            fprintf(stderr, "test_vlc: bad bit string character '%c'\n", *s);
            abort();
        }
    }
    return v;
}

/* Render a code as bits into buf (for failure messages). */
static const char *bits_str(BsVlc v, char *buf)
{
    int i;
    if (v.len > 32) {
        strcpy(buf, "(len>32)");
        return buf;
    }
    for (i = 0; i < v.len; i++)
        buf[i] = (char)('0' + ((v.code >> (v.len - 1 - i)) & 1));
    buf[i] = 0;
    if (!v.len)
        strcpy(buf, "(none)");
    return buf;
}

static int same(BsVlc a, BsVlc b) { return a.code == b.code && a.len == b.len; }

#define EXPECT_CODE(t, got, bits, ...)                                        \
    do {                                                                      \
        BsVlc want_ = parse_bits(bits), got_ = (got);                         \
        char gb_[40], wb_[40];                                                \
        if (!same(got_, want_)) {                                             \
            test_fail_at((t), __FILE__, __LINE__, __VA_ARGS__);               \
            printf("     got %s want %s\n", bits_str(got_, gb_),              \
                   bits_str(want_, wb_));                                     \
        }                                                                     \
    } while (0)

/* An alphabet: every code one syntax element can take in one context. */
enum { K_PLAIN, K_SIGNED, K_ESCAPE, K_EOB };
typedef struct Sym {
    int sym;
    int kind;   /* K_SIGNED: DCT (run, level), a sign bit follows */
    BsVlc v;
} Sym;
typedef struct Alpha {
    const char *name;
    int n;
    Sym s[128];
} Alpha;

static void add(Alpha *a, int sym, int kind, BsVlc v)
{
    if (a->n >= (int)(sizeof(a->s) / sizeof(a->s[0])))
        abort();
    a->s[a->n].sym = sym;
    a->s[a->n].kind = kind;
    a->s[a->n].v = v;
    a->n++;
}

#define SYM_ESCAPE (-1000)
#define SYM_EOB (-1001)
#define RL(run, level) ((run) * 64 + (level))

enum {
    A_ADDR, A_MB_I, A_MB_P, A_MB_B, A_CBP2, A_CBP1, A_MV, A_DC_LUMA, A_DC_CHROMA,
    A_DCT0, A_DCT0_FIRST, A_DCT1, A_COUNT
};

static void build_alphabets(Alpha *al)
{
    memset(al, 0, sizeof(Alpha) * A_COUNT);

    al[A_ADDR].name = "B.1 macroblock_address_increment + escape";
    for (int i = 1; i <= 33; i++)
        if (bs_vlc_mb_addr_inc[i].len)
            add(&al[A_ADDR], i, K_PLAIN, bs_vlc_mb_addr_inc[i]);
    add(&al[A_ADDR], SYM_ESCAPE, K_PLAIN, bs_vlc_mb_escape);

    al[A_MB_I].name = "B.2 macroblock_type I";
    al[A_MB_P].name = "B.3 macroblock_type P";
    al[A_MB_B].name = "B.4 macroblock_type B";
    for (int pt = BS_PICTURE_I; pt <= BS_PICTURE_B; pt++)
        for (int f = 0; f < 32; f++) {
            BsVlc v = bs_vlc_mb_type(pt, f);
            if (v.len)
                add(&al[A_MB_I + pt - BS_PICTURE_I], f, K_PLAIN, v);
        }

    /* cbp 0 exists only in 13818-2 and only for 4:2:2/4:4:4 (B.9 NOTE) */
    al[A_CBP2].name = "B.9 coded_block_pattern (with 0)";
    al[A_CBP1].name = "B.9 coded_block_pattern (without 0: MPEG-1, 4:2:0)";
    for (int i = 0; i < 64; i++)
        if (bs_vlc_cbp[i].len) {
            add(&al[A_CBP2], i, K_PLAIN, bs_vlc_cbp[i]);
            if (i)
                add(&al[A_CBP1], i, K_PLAIN, bs_vlc_cbp[i]);
        }

    al[A_MV].name = "B.10 motion_code";
    for (int i = 0; i < 33; i++)
        if (bs_vlc_motion_code[i].len)
            add(&al[A_MV], i - 16, K_PLAIN, bs_vlc_motion_code[i]);

    al[A_DC_LUMA].name = "B.12 dct_dc_size_luminance";
    al[A_DC_CHROMA].name = "B.13 dct_dc_size_chrominance";
    for (int i = 0; i < 12; i++) {
        if (bs_vlc_dc_size_luma[i].len)
            add(&al[A_DC_LUMA], i, K_PLAIN, bs_vlc_dc_size_luma[i]);
        if (bs_vlc_dc_size_chroma[i].len)
            add(&al[A_DC_CHROMA], i, K_PLAIN, bs_vlc_dc_size_chroma[i]);
    }

    al[A_DCT0].name = "B.14 DCT table zero (not first)";
    al[A_DCT0_FIRST].name = "B.14 DCT table zero (first coefficient, non-intra)";
    al[A_DCT1].name = "B.15 DCT table one";
    /* Deliberately scan far beyond the standard's ranges: anything found
     * there is an error the count check reports. */
    for (int run = 0; run < 64; run++)
        for (int level = 0; level < 64; level++) {
            BsVlc v0 = bs_vlc_dct_coeff(BS_DCT_TABLE_ZERO, run, level);
            BsVlc v1 = bs_vlc_dct_coeff(BS_DCT_TABLE_ONE, run, level);
            if (v0.len) {
                add(&al[A_DCT0], RL(run, level), K_SIGNED, v0);
                add(&al[A_DCT0_FIRST], RL(run, level), K_SIGNED,
                    run == 0 && level == 1 ? bs_vlc_dct_first_run0_level1 : v0);
            }
            if (v1.len)
                add(&al[A_DCT1], RL(run, level), K_SIGNED, v1);
        }
    add(&al[A_DCT0], SYM_EOB, K_EOB, bs_vlc_dct_eob[BS_DCT_TABLE_ZERO]);
    add(&al[A_DCT0], SYM_ESCAPE, K_ESCAPE, bs_vlc_dct_escape);
    /* No end_of_block in the first-coefficient context: a coded non-intra
     * block has at least one coefficient (that is why '1 s' is allowed). */
    add(&al[A_DCT0_FIRST], SYM_ESCAPE, K_ESCAPE, bs_vlc_dct_escape);
    add(&al[A_DCT1], SYM_EOB, K_EOB, bs_vlc_dct_eob[BS_DCT_TABLE_ONE]);
    add(&al[A_DCT1], SYM_ESCAPE, K_ESCAPE, bs_vlc_dct_escape);
}

/* ---- structural checks -------------------------------------------------- */

static void test_entry_counts(TestCtx *t)
{
    Alpha al[A_COUNT];
    /* Sizes of the standard's tables (DCT: 111 (run, level) pairs plus end of
     * block and escape; table zero's first-coefficient variant has no EOB). */
    static const int want[A_COUNT] = {
        [A_ADDR] = 34, [A_MB_I] = 2, [A_MB_P] = 7, [A_MB_B] = 11,
        [A_CBP2] = 64, [A_CBP1] = 63, [A_MV] = 33, [A_DC_LUMA] = 12,
        [A_DC_CHROMA] = 12, [A_DCT0] = 113, [A_DCT0_FIRST] = 112, [A_DCT1] = 113,
    };
    build_alphabets(al);
    for (int a = 0; a < A_COUNT; a++)
        CHECK(t, al[a].n == want[a], "%s: %d entries, standard has %d",
              al[a].name, al[a].n, want[a]);
    CHECK(t, bs_vlc_mb_addr_inc[0].len == 0, "increment 0 must have no code");
}

static void test_prefix_free(TestCtx *t)
{
    Alpha al[A_COUNT];
    char b1[40], b2[40];
    build_alphabets(al);
    /* For DCT pairs the code is checked without its sign bit: since both
     * signs are used, "code+s" is prefix-free against EOB/escape exactly
     * when "code" is. */
    for (int a = 0; a < A_COUNT; a++) {
        const Alpha *x = &al[a];
        for (int i = 0; i < x->n; i++)
            for (int j = 0; j < x->n; j++) {
                BsVlc p = x->s[i].v, q = x->s[j].v;
                /* equal codes are reported once, for i < j */
                if (i == j || p.len > q.len || (p.len == q.len && i > j))
                    continue;
                if ((q.code >> (q.len - p.len)) == p.code)
                    test_fail_at(t, __FILE__, __LINE__,
                                 "%s: %s (sym %d) is a prefix of %s (sym %d)",
                                 x->name, bits_str(p, b1), x->s[i].sym,
                                 bits_str(q, b2), x->s[j].sym);
            }
    }
}

static void test_kraft(TestCtx *t)
{
    Alpha al[A_COUNT];
    /* Exact sums in units of 2^-32.  Only the dc_size tables are complete;
     * every other table leaves out the codes that would let a run of zeros
     * reach a start-code prefix (plus, where noted, codes the standard just
     * does not use).  Values derived by hand from the tables' shapes:
     *  B.1 + escape: unused 0000 0000, 0000 0010, and 0000 0001 xxx but 000
     *        (one of those is MPEG-1's stuffing '0000 0001 111')
     *        -> 1 - (8 + 8 + 7)/2048 = 2025/2048
     *  B.2: '1','01' -> 3/4.   B.3, B.4: only '0000 00' unused -> 63/64
     *  B.9: only '0000 0000 0' unused -> 511/512 (510/512 without cbp 0)
     *  B.10: like B.1 with the sign folded in: unused 0000 0000,
     *        0000 0001, 0000 0010 -> 253/256
     *  B.14 (both contexts): only '0000 0000 0000' unused -> 4095/4096
     *  B.15: additionally the 6 twelve-bit and 4 thirteen-bit codes that
     *        table zero uses for pairs B.15 codes shorter stay unused
     *        -> 1 - (1 + 6 + 2)/4096 = 4087/4096 */
    static const struct { uint64_t num, den; } want[A_COUNT] = {
        [A_ADDR] = { 2025, 2048 }, [A_MB_I] = { 3, 4 }, [A_MB_P] = { 63, 64 },
        [A_MB_B] = { 63, 64 }, [A_CBP2] = { 511, 512 }, [A_CBP1] = { 510, 512 },
        [A_MV] = { 253, 256 }, [A_DC_LUMA] = { 1, 1 }, [A_DC_CHROMA] = { 1, 1 },
        [A_DCT0] = { 4095, 4096 }, [A_DCT0_FIRST] = { 4095, 4096 },
        [A_DCT1] = { 4087, 4096 },
    };
    build_alphabets(al);
    for (int a = 0; a < A_COUNT; a++) {
        uint64_t sum = 0, w = (want[a].num << 32) / want[a].den;
        /* a DCT pair's code plus its sign bit covers 2 * 2^-(len+1) = 2^-len */
        for (int i = 0; i < al[a].n; i++)
            sum += 1ull << (32 - al[a].s[i].v.len);
        CHECK(t, sum == w, "%s: Kraft sum %.10f, want %llu/%llu", al[a].name,
              (double)sum / 4294967296.0, (unsigned long long)want[a].num,
              (unsigned long long)want[a].den);
    }
}

static void test_length_bounds(TestCtx *t)
{
    Alpha al[A_COUNT];
    /* Shortest and longest code of each table as printed (DCT without s). */
    static const struct { int lo, hi; } want[A_COUNT] = {
        [A_ADDR] = { 1, 11 }, [A_MB_I] = { 1, 2 }, [A_MB_P] = { 1, 6 },
        [A_MB_B] = { 2, 6 }, [A_CBP2] = { 3, 9 }, [A_CBP1] = { 3, 9 },
        [A_MV] = { 1, 11 }, [A_DC_LUMA] = { 2, 9 }, [A_DC_CHROMA] = { 2, 10 },
        [A_DCT0] = { 2, 16 }, [A_DCT0_FIRST] = { 1, 16 }, [A_DCT1] = { 2, 16 },
    };
    build_alphabets(al);
    for (int a = 0; a < A_COUNT; a++) {
        int lo = 99, hi = 0;
        for (int i = 0; i < al[a].n; i++) {
            BsVlc v = al[a].s[i].v;
            lo = v.len < lo ? v.len : lo;
            hi = v.len > hi ? v.len : hi;
            CHECK(t, v.len >= 1 && v.len <= 32 && (v.code >> v.len) == 0,
                  "%s sym %d: code 0x%x does not fit len %d", al[a].name,
                  al[a].s[i].sym, (unsigned)v.code, v.len);
        }
        CHECK(t, lo == want[a].lo && hi == want[a].hi,
              "%s: lengths %d..%d, want %d..%d", al[a].name, lo, hi,
              want[a].lo, want[a].hi);
    }
}

/* ---- codes typed from the standard independently of vlc.c ---------------
 * Every table is checked entry by entry except B.15, where the 39 codes that
 * differ from B.14 are checked here and dct_tables_differ_where_expected
 * demands all other pairs equal B.14's (checked in full). */

static void test_full_addr_inc(TestCtx *t)
{
    /* All of Table B.1. */
    static const char *const c[34] = {
        NULL, "1", "011", "010", "0011", "0010", "0001 1", "0001 0",
        "0000 111", "0000 110", "0000 1011", "0000 1010", "0000 1001",
        "0000 1000", "0000 0111", "0000 0110", "0000 0101 11", "0000 0101 10",
        "0000 0101 01", "0000 0101 00", "0000 0100 11", "0000 0100 10",
        "0000 0100 011", "0000 0100 010", "0000 0100 001", "0000 0100 000",
        "0000 0011 111", "0000 0011 110", "0000 0011 101", "0000 0011 100",
        "0000 0011 011", "0000 0011 010", "0000 0011 001", "0000 0011 000",
    };
    for (int i = 1; i <= 33; i++)
        EXPECT_CODE(t, bs_vlc_mb_addr_inc[i], c[i], "macroblock_address_increment %d", i);
    EXPECT_CODE(t, bs_vlc_mb_escape, "0000 0001 000", "macroblock_escape");
}

/* A run of consecutive codes: prefix followed by every value of a
 * `bits`-wide suffix in increasing order, each coding sym[k] (first number
 * -1: that suffix is not used by the table).  This is the order a decoder
 * sees the codes in, unlike the standard's and vlc.c's order, so a swap or
 * a slip in either transcription shows up. */
typedef struct Block {
    const char *prefix;
    int bits;
    int sym[16][2];
} Block;

typedef BsVlc (*LookupFn)(int a, int b);

static int check_blocks(TestCtx *t, const char *what, const Block *bl, size_t n,
                        LookupFn lookup)
{
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        BsVlc pre = parse_bits(bl[i].prefix);
        for (int k = 0; k < (1 << bl[i].bits); k++) {
            const int *sym = bl[i].sym[k];
            BsVlc want = { pre.code << bl[i].bits | (uint32_t)k,
                           (uint8_t)(pre.len + bl[i].bits) };
            char gb[40], wb[40];
            if (sym[0] < 0)
                continue;
            count++;
            BsVlc got = lookup(sym[0], sym[1]);
            CHECK(t, same(got, want), "%s (%d, %d): got %s want %s", what,
                  sym[0], sym[1], bits_str(got, gb), bits_str(want, wb));
        }
    }
    return count;
}

static BsVlc lookup_cbp(int cbp, int unused)
{
    (void)unused;
    return bs_vlc_cbp[cbp];
}

static BsVlc lookup_dct_zero(int run, int level)
{
    return bs_vlc_dct_coeff(BS_DCT_TABLE_ZERO, run, level);
}

static void test_full_mb_type(TestCtx *t)
{
    enum { Q = BS_MB_QUANT, F = BS_MB_MOTION_FWD, B = BS_MB_MOTION_BWD,
           P = BS_MB_PATTERN, I = BS_MB_INTRA };
    /* All of Tables B.2, B.3, B.4. */
    static const struct { int pt, flags; const char *bits; } c[] = {
        { BS_PICTURE_I, I, "1" },
        { BS_PICTURE_I, Q | I, "01" },
        { BS_PICTURE_P, F | P, "1" },
        { BS_PICTURE_P, P, "01" },
        { BS_PICTURE_P, F, "001" },
        { BS_PICTURE_P, I, "00011" },
        { BS_PICTURE_P, Q | F | P, "00010" },
        { BS_PICTURE_P, Q | P, "00001" },
        { BS_PICTURE_P, Q | I, "000001" },
        { BS_PICTURE_B, F | B, "10" },
        { BS_PICTURE_B, F | B | P, "11" },
        { BS_PICTURE_B, B, "010" },
        { BS_PICTURE_B, B | P, "011" },
        { BS_PICTURE_B, F, "0010" },
        { BS_PICTURE_B, F | P, "0011" },
        { BS_PICTURE_B, I, "00011" },
        { BS_PICTURE_B, Q | F | B | P, "00010" },
        { BS_PICTURE_B, Q | F | P, "000011" },
        { BS_PICTURE_B, Q | B | P, "000010" },
        { BS_PICTURE_B, Q | I, "000001" },
    };
    int listed[4][32] = { { 0 } };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        EXPECT_CODE(t, bs_vlc_mb_type(c[i].pt, c[i].flags), c[i].bits,
                    "macroblock_type picture %d flags %d", c[i].pt, c[i].flags);
        listed[c[i].pt][c[i].flags] = 1;
    }
    /* everything else (e.g. quant without pattern in P, intra+motion) is not
     * allowed */
    for (int pt = BS_PICTURE_I; pt <= BS_PICTURE_B; pt++)
        for (int f = 0; f < 32; f++)
            if (!listed[pt][f])
                CHECK(t, bs_vlc_mb_type(pt, f).len == 0,
                      "picture %d flags %d should not be codable", pt, f);
    CHECK(t, bs_vlc_mb_type(0, BS_MB_INTRA).len == 0, "picture type 0");
    CHECK(t, bs_vlc_mb_type(4, BS_MB_INTRA).len == 0, "picture type 4 (D)");
    CHECK(t, bs_vlc_mb_type(-1, BS_MB_INTRA).len == 0, "picture type -1");
    CHECK(t, bs_vlc_mb_type(BS_PICTURE_I, 32 | BS_MB_INTRA).len == 0, "flags 48");
    CHECK(t, bs_vlc_mb_type(BS_PICTURE_I, -1).len == 0, "flags -1");
}

static void test_full_cbp(TestCtx *t)
{
    /* All of Table B.9, in code order. */
    static const Block b[] = {
        { "111", 0, { { 60 } } },
        { "110", 1, { { 8 }, { 4 } } },
        { "101", 1, { { 32 }, { 16 } } },
        { "1001", 1, { { 48 }, { 12 } } },
        { "1000", 1, { { 40 }, { 20 } } },
        { "0111", 1, { { 44 }, { 28 } } },
        { "0110", 1, { { 56 }, { 52 } } },
        { "0101", 1, { { 61 }, { 1 } } },
        { "0100", 1, { { 62 }, { 2 } } },
        { "0011", 2, { { 63 }, { 3 }, { 36 }, { 24 } } },
        { "0010", 3, { { 34 }, { 18 }, { 10 }, { 6 }, { 33 }, { 17 }, { 9 }, { 5 } } },
        { "0001", 4, { { 43 }, { 23 }, { 51 }, { 15 }, { 42 }, { 22 }, { 50 }, { 14 },
                       { 41 }, { 21 }, { 49 }, { 13 }, { 35 }, { 19 }, { 11 }, { 7 } } },
        { "0000 1", 3, { { 57 }, { 53 }, { 45 }, { 29 }, { 38 }, { 26 }, { 37 }, { 25 } } },
        { "0000 01", 2, { { 58 }, { 54 }, { 46 }, { 30 } } },
        { "0000 001", 2, { { 59 }, { 55 }, { 47 }, { 31 } } },
        { "0000 0001", 1, { { 39 }, { 27 } } },
        { "0000 0000 1", 0, { { 0 } } },
    };
    int n = check_blocks(t, "coded_block_pattern", b, sizeof(b) / sizeof(b[0]),
                         lookup_cbp);
    CHECK(t, n == 64, "test table lists %d values", n);
}

static void test_full_motion_code(TestCtx *t)
{
    /* All of Table B.10, positive values; negatives are checked by the sign
     * rule below. */
    static const char *const pos[17] = {
        "1", "010", "0010", "0001 0", "0000 110", "0000 1010", "0000 1000",
        "0000 0110", "0000 0101 10", "0000 0101 00", "0000 0100 10",
        "0000 0100 010", "0000 0100 000", "0000 0011 110", "0000 0011 100",
        "0000 0011 010", "0000 0011 000",
    };
    for (int m = 0; m <= 16; m++)
        EXPECT_CODE(t, bs_vlc_motion_code[m + 16], pos[m], "motion_code %d", m);
    /* The last bit of a non-zero motion_code is its sign: 0 +, 1 -. */
    for (int m = 1; m <= 16; m++) {
        BsVlc p = bs_vlc_motion_code[16 + m], n = bs_vlc_motion_code[16 - m];
        CHECK(t, n.len == p.len && n.code == (p.code | 1) && !(p.code & 1),
              "motion_code -%d is not +%d with the sign bit set", m, m);
    }
    EXPECT_CODE(t, bs_vlc_motion_code[16 - 1], "011", "motion_code -1");
    EXPECT_CODE(t, bs_vlc_motion_code[16 - 7], "0000 0111", "motion_code -7");
    EXPECT_CODE(t, bs_vlc_motion_code[16 - 16], "0000 0011 001", "motion_code -16");
}

static void test_full_dc_size(TestCtx *t)
{
    static const char *const luma[12] = {
        "100", "00", "01", "101", "110", "1110", "1111 0", "1111 10",
        "1111 110", "1111 1110", "1111 1111 0", "1111 1111 1",
    };
    static const char *const chroma[12] = {
        "00", "01", "10", "110", "1110", "1111 0", "1111 10", "1111 110",
        "1111 1110", "1111 1111 0", "1111 1111 10", "1111 1111 11",
    };
    for (int i = 0; i < 12; i++) {
        EXPECT_CODE(t, bs_vlc_dc_size_luma[i], luma[i], "dct_dc_size_luminance %d", i);
        EXPECT_CODE(t, bs_vlc_dc_size_chroma[i], chroma[i],
                    "dct_dc_size_chrominance %d", i);
    }
}

typedef struct DctSpot { int run, level; const char *bits; } DctSpot;

static void check_dct_spots(TestCtx *t, int table, const DctSpot *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        EXPECT_CODE(t, bs_vlc_dct_coeff(table, c[i].run, c[i].level), c[i].bits,
                    "table %d run %d level %d", table, c[i].run, c[i].level);
}

static void test_full_dct_zero(TestCtx *t)
{
    /* All 111 (run, level) pairs of Table B.14 in code order, sign bit left
     * off ("1 s" first coefficient, EOB and escape: see dct_eob_escape). */
    static const Block b[] = {
        { "11", 0, { { 0, 1 } } },
        { "011", 0, { { 1, 1 } } },
        { "010", 1, { { 0, 2 }, { 2, 1 } } },
        { "0011", 1, { { 4, 1 }, { 3, 1 } } },
        { "0010 1", 0, { { 0, 3 } } },
        { "0010 0", 3, { { 13, 1 }, { 0, 6 }, { 12, 1 }, { 11, 1 }, { 3, 2 },
                         { 1, 3 }, { 0, 5 }, { 10, 1 } } },
        { "0001", 2, { { 7, 1 }, { 6, 1 }, { 1, 2 }, { 5, 1 } } },
        { "0000 1", 2, { { 2, 2 }, { 9, 1 }, { 0, 4 }, { 8, 1 } } },
        /* 0000 01 is the escape */
        { "0000 0010", 2, { { 16, 1 }, { 5, 2 }, { 0, 7 }, { 2, 3 } } },
        { "0000 0011", 2, { { 1, 4 }, { 15, 1 }, { 14, 1 }, { 4, 2 } } },
        { "0000 0001", 4, { { 0, 11 }, { 8, 2 }, { 4, 3 }, { 0, 10 }, { 2, 4 },
                            { 7, 2 }, { 21, 1 }, { 20, 1 }, { 0, 9 }, { 19, 1 },
                            { 18, 1 }, { 1, 5 }, { 3, 3 }, { 0, 8 }, { 6, 2 },
                            { 17, 1 } } },
        { "0000 0000 1", 4, { { 10, 2 }, { 9, 2 }, { 5, 3 }, { 3, 4 }, { 2, 5 },
                              { 1, 7 }, { 1, 6 }, { 0, 15 }, { 0, 14 }, { 0, 13 },
                              { 0, 12 }, { 26, 1 }, { 25, 1 }, { 24, 1 },
                              { 23, 1 }, { 22, 1 } } },
        { "0000 0000 01", 4, { { 0, 31 }, { 0, 30 }, { 0, 29 }, { 0, 28 },
                               { 0, 27 }, { 0, 26 }, { 0, 25 }, { 0, 24 },
                               { 0, 23 }, { 0, 22 }, { 0, 21 }, { 0, 20 },
                               { 0, 19 }, { 0, 18 }, { 0, 17 }, { 0, 16 } } },
        { "0000 0000 001", 4, { { 0, 40 }, { 0, 39 }, { 0, 38 }, { 0, 37 },
                                { 0, 36 }, { 0, 35 }, { 0, 34 }, { 0, 33 },
                                { 0, 32 }, { 1, 14 }, { 1, 13 }, { 1, 12 },
                                { 1, 11 }, { 1, 10 }, { 1, 9 }, { 1, 8 } } },
        { "0000 0000 0001", 4, { { 1, 18 }, { 1, 17 }, { 1, 16 }, { 1, 15 },
                                 { 6, 3 }, { 16, 2 }, { 15, 2 }, { 14, 2 },
                                 { 13, 2 }, { 12, 2 }, { 11, 2 }, { 31, 1 },
                                 { 30, 1 }, { 29, 1 }, { 28, 1 }, { 27, 1 } } },
    };
    int n = check_blocks(t, "table zero", b, sizeof(b) / sizeof(b[0]),
                         lookup_dct_zero);
    CHECK(t, n == 111, "test table lists %d pairs", n);
}

static void test_spot_dct_one(TestCtx *t)
{
    /* Table B.15: every code that differs from table zero, and a few that
     * do not. */
    static const DctSpot c[] = {
        { 0, 1, "10" }, { 1, 1, "010" }, { 0, 2, "110" }, { 2, 1, "00101" },
        { 0, 3, "0111" }, { 3, 1, "00111" }, { 4, 1, "000110" },
        { 1, 2, "00110" }, { 5, 1, "000111" }, { 6, 1, "0000110" },
        { 7, 1, "0000100" }, { 0, 4, "11100" }, { 2, 2, "0000111" },
        { 8, 1, "0000101" }, { 9, 1, "1111000" }, { 0, 5, "11101" },
        { 0, 6, "000101" }, { 1, 3, "1111001" }, { 3, 2, "00100110" },
        { 10, 1, "1111010" }, { 11, 1, "00100001" }, { 12, 1, "00100101" },
        { 13, 1, "00100100" }, { 0, 7, "000100" }, { 1, 4, "00100111" },
        { 2, 3, "11111100" }, { 4, 2, "11111101" }, { 5, 2, "000000100" },
        { 14, 1, "000000101" }, { 15, 1, "000000111" }, { 16, 1, "0000001101" },
        { 0, 8, "1111011" }, { 0, 9, "1111100" }, { 0, 10, "00100011" },
        { 0, 11, "00100010" }, { 1, 5, "00100000" }, { 2, 4, "0000001100" },
        { 0, 12, "11111010" }, { 0, 13, "11111011" }, { 0, 14, "11111110" },
        { 0, 15, "11111111" },
        /* unchanged from table zero */
        { 3, 3, "000000011100" }, { 21, 1, "000000010110" },
        { 1, 6, "0000000010110" }, { 22, 1, "0000000011111" },
        { 0, 16, "00000000011111" }, { 0, 40, "000000000010000" },
        { 1, 18, "0000000000010000" }, { 31, 1, "0000000000011011" },
    };
    check_dct_spots(t, BS_DCT_TABLE_ONE, c, sizeof(c) / sizeof(c[0]));
}

static void test_spot_dct_special(TestCtx *t)
{
    EXPECT_CODE(t, bs_vlc_dct_first_run0_level1, "1", "first coefficient run 0 level 1");
    EXPECT_CODE(t, bs_vlc_dct_eob[BS_DCT_TABLE_ZERO], "10", "table zero end_of_block");
    EXPECT_CODE(t, bs_vlc_dct_eob[BS_DCT_TABLE_ONE], "0110", "table one end_of_block");
    EXPECT_CODE(t, bs_vlc_dct_escape, "0000 01", "escape");
}

/* Table B.15 differs from B.14 at exactly these 39 (run, level) pairs. */
static void test_dct_tables_differ(TestCtx *t)
{
    static const int diff[][2] = {
        { 0, 1 }, { 1, 1 }, { 0, 2 }, { 2, 1 }, { 0, 3 }, { 4, 1 }, { 1, 2 },
        { 6, 1 }, { 7, 1 }, { 0, 4 }, { 2, 2 }, { 8, 1 }, { 9, 1 }, { 0, 5 },
        { 0, 6 }, { 1, 3 }, { 3, 2 }, { 10, 1 }, { 11, 1 }, { 12, 1 },
        { 13, 1 }, { 0, 7 }, { 1, 4 }, { 2, 3 }, { 4, 2 }, { 5, 2 }, { 14, 1 },
        { 15, 1 }, { 16, 1 }, { 0, 8 }, { 0, 9 }, { 0, 10 }, { 0, 11 },
        { 1, 5 }, { 2, 4 }, { 0, 12 }, { 0, 13 }, { 0, 14 }, { 0, 15 },
    };
    int expect_diff[32][41] = { { 0 } }, ndiff = 0;
    for (size_t i = 0; i < sizeof(diff) / sizeof(diff[0]); i++)
        expect_diff[diff[i][0]][diff[i][1]] = 1;
    for (int run = 0; run < 32; run++)
        for (int level = 1; level <= 40; level++) {
            BsVlc z = bs_vlc_dct_coeff(BS_DCT_TABLE_ZERO, run, level);
            BsVlc o = bs_vlc_dct_coeff(BS_DCT_TABLE_ONE, run, level);
            CHECK(t, (z.len != 0) == (o.len != 0),
                  "run %d level %d coded in only one table", run, level);
            if (!same(z, o)) {
                ndiff++;
                CHECK(t, expect_diff[run][level],
                      "run %d level %d differs between the tables", run, level);
            } else {
                CHECK(t, !expect_diff[run][level] || !z.len,
                      "run %d level %d should differ between the tables", run, level);
            }
        }
    CHECK(t, ndiff == 39, "%d pairs differ, want 39", ndiff);
}

static void test_dct_ranges(TestCtx *t)
{
    /* The pairs the tables code, per run: the maximum level (B.14/B.15). */
    static const int max_level[32] = {
        40, 18, 5, 4, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    };
    for (int tab = 0; tab < 2; tab++) {
        for (int run = -3; run < 70; run++)
            for (int level = -3; level < 300; level++) {
                int want = run >= 0 && run < 32 && level >= 1 && level <= max_level[run];
                int got = bs_vlc_dct_coeff(tab, run, level).len != 0;
                CHECK(t, got == want, "table %d run %d level %d: %s", tab, run,
                      level, want ? "missing" : "unexpected code");
            }
        CHECK(t, bs_vlc_dct_coeff(tab, 0, 2047).len == 0, "level 2047");
        CHECK(t, bs_vlc_dct_coeff(tab, 0, -2048).len == 0, "level -2048");
        CHECK(t, bs_vlc_dct_coeff(tab, 63, 1).len == 0, "run 63");
    }
    CHECK(t, bs_vlc_dct_coeff(2, 0, 1).len == 0, "table 2");
    CHECK(t, bs_vlc_dct_coeff(-1, 0, 1).len == 0, "table -1");
}

/* ---- round trip -------------------------------------------------------- */

typedef struct Rec {
    int alpha;      /* -1: raw fixed-length field */
    int idx;        /* entry of the alphabet, or raw width */
    uint32_t extra; /* sign bit, escape payload, or raw value */
} Rec;

/* Linear-search decoder: read a bit at a time until the accumulated bits
 * equal some entry's code (prefix-freeness makes the first match right). */
static int decode(BsReader *br, const Alpha *a)
{
    uint32_t code = 0;
    for (int len = 1; len <= 24; len++) {
        code = (code << 1) | bs_get(br, 1);
        for (int i = 0; i < a->n; i++)
            if (a->s[i].v.len == len && a->s[i].v.code == code)
                return i;
    }
    return -1;
}

static void test_roundtrip(TestCtx *t)
{
    enum { N = 60000 };
    static Alpha al[A_COUNT];
    static Rec rec[N];
    TestRng rng = { 0x9e3779b97f4a7c15ull };
    BsWriter bw;
    BsReader br;
    uint64_t bits;

    build_alphabets(al);
    CHECK(t, bs_writer_init(&bw, 0) == 0, "init");
    for (int i = 0; i < N; i++) {
        Rec *r = &rec[i];
        if (test_rand(&rng) % 8 == 0) { /* a fixed-length field in between */
            r->alpha = -1;
            r->idx = (int)(test_rand(&rng) % 33);
            r->extra = test_rand(&rng) & (r->idx ? 0xffffffffu >> (32 - r->idx) : 0);
            bs_put(&bw, r->idx, r->extra);
            continue;
        }
        r->alpha = (int)(test_rand(&rng) % A_COUNT);
        r->idx = (int)(test_rand(&rng) % (unsigned)al[r->alpha].n);
        const Sym *s = &al[r->alpha].s[r->idx];
        bs_put(&bw, s->v.len, s->v.code);
        r->extra = 0;
        if (s->kind == K_SIGNED) {
            r->extra = test_rand(&rng) & 1;
            bs_put(&bw, 1, r->extra);
        } else if (s->kind == K_ESCAPE) {
            /* 13818-2 escape: 6-bit run, 12-bit signed level (never 0) */
            r->extra = (test_rand(&rng) % 64) << 12 | (1 + test_rand(&rng) % 4095);
            bs_put(&bw, 18, r->extra);
        }
    }
    bits = bs_bit_count(&bw);
    bs_flush(&bw);
    CHECK(t, !bs_error(&bw), "writer error");

    bs_reader_init(&br, bw.buf, bw.pos);
    for (int i = 0; i < N && !t->case_failed; i++) {
        const Rec *r = &rec[i];
        if (r->alpha < 0) {
            uint32_t v = bs_get(&br, r->idx);
            CHECK(t, v == r->extra, "item %d: raw %d bits 0x%x, read 0x%x", i,
                  r->idx, (unsigned)r->extra, (unsigned)v);
            continue;
        }
        const Alpha *a = &al[r->alpha];
        int got = decode(&br, a);
        CHECK(t, got >= 0 && a->s[got].sym == a->s[r->idx].sym,
              "item %d: %s: wrote symbol %d, decoded %d", i, a->name,
              a->s[r->idx].sym, got >= 0 ? a->s[got].sym : -9999);
        if (got < 0)
            break;
        if (a->s[got].kind == K_SIGNED)
            CHECK(t, bs_get(&br, 1) == r->extra, "item %d: sign bit", i);
        else if (a->s[got].kind == K_ESCAPE)
            CHECK(t, bs_get(&br, 18) == r->extra, "item %d: escape payload", i);
    }
    CHECK(t, br.bitpos == bits, "read %zu bits, wrote %llu", br.bitpos,
          (unsigned long long)bits);
    CHECK(t, !br.overrun, "reader overrun");
    bs_writer_free(&bw);
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_vlc");
    test_run(&t, "entry_counts", test_entry_counts);
    test_run(&t, "prefix_free", test_prefix_free);
    test_run(&t, "kraft_sums", test_kraft);
    test_run(&t, "length_bounds", test_length_bounds);
    test_run(&t, "full_mb_addr_inc", test_full_addr_inc);
    test_run(&t, "full_mb_type", test_full_mb_type);
    test_run(&t, "full_cbp", test_full_cbp);
    test_run(&t, "full_motion_code", test_full_motion_code);
    test_run(&t, "full_dc_size", test_full_dc_size);
    test_run(&t, "full_dct_table_zero", test_full_dct_zero);
    test_run(&t, "spot_dct_table_one", test_spot_dct_one);
    test_run(&t, "dct_eob_escape_first", test_spot_dct_special);
    test_run(&t, "dct_tables_differ_where_expected", test_dct_tables_differ);
    test_run(&t, "dct_coded_ranges", test_dct_ranges);
    test_run(&t, "roundtrip_random", test_roundtrip);
    return test_finish(&t);
}
