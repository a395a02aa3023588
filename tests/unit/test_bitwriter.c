/* test_bitwriter.c — checks the MSB-first bit writer (bitwriter.h) by reading
 * its output back with the bit reader (bitreader.h). */
#include "bitstream/bitreader.h"
#include "bitstream/bitwriter.h"
#include "tests/test.h"

#include <errno.h>
#include <stdint.h>

static uint32_t mask(int n) { return n >= 32 ? 0xffffffffu : (1u << n) - 1u; }

typedef struct Field { int n; uint32_t v; } Field;

/* Write random fields of width 0..32 (values with bits above the width set
 * too: bs_put must drop them), flush, read back. */
static void test_random_widths(TestCtx *t)
{
    enum { N = 200000 };
    static Field f[N];
    TestRng rng = { 0x1234567887654321ull };
    BsWriter bw;
    BsReader br;
    uint64_t bits = 0;

    CHECK(t, bs_writer_init(&bw, 0) == 0, "init");
    for (int i = 0; i < N; i++) {
        f[i].n = (int)(test_rand(&rng) % 33);
        f[i].v = test_rand(&rng);
        bs_put(&bw, f[i].n, f[i].v);
        bits += (uint64_t)f[i].n;
        if (bs_bit_count(&bw) != bits) {
            CHECK(t, 0, "after field %d: bit count %llu, want %llu", i,
                  (unsigned long long)bs_bit_count(&bw), (unsigned long long)bits);
            break;
        }
        CHECK(t, bw.nbits < 32, "after field %d: %d bits pending", i, bw.nbits);
    }
    bs_flush(&bw);
    CHECK(t, !bs_error(&bw), "writer error %d", bs_error(&bw));
    CHECK(t, bw.pos == (bits + 7) / 8, "flushed %zu bytes for %llu bits", bw.pos,
          (unsigned long long)bits);

    bs_reader_init(&br, bw.buf, bw.pos);
    for (int i = 0; i < N; i++) {
        uint32_t got = bs_get(&br, f[i].n);
        if (got != (f[i].v & mask(f[i].n))) {
            CHECK(t, 0, "field %d (%d bits): read 0x%08x, wrote 0x%08x", i, f[i].n,
                  (unsigned)got, (unsigned)(f[i].v & mask(f[i].n)));
            break;
        }
    }
    CHECK(t, bs_get(&br, (int)((8 - bits % 8) % 8)) == 0, "padding bits not zero");
    CHECK(t, bs_bits_left(&br) == 0 && !br.overrun, "reader did not end at the end");
    bs_writer_free(&bw);
}

/* Widths at the edges of the 64-bit accumulator: a 32-bit write with up to
 * 31 bits pending, all-ones values, zero-width writes. */
static void test_edge_widths(TestCtx *t)
{
    BsWriter bw;
    BsReader br;

    CHECK(t, bs_writer_init(&bw, 16) == 0, "init");
    for (int pre = 0; pre <= 31; pre++) {
        bs_put(&bw, pre, 0xffffffffu);
        bs_put(&bw, 0, 0xffffffffu); /* writes nothing */
        bs_put(&bw, 32, 0xa5c3f00fu);
        bs_put(&bw, 32, 0xffffffffu);
        bs_put(&bw, 1, 0);
        bs_put(&bw, 32, 0);
    }
    bs_flush(&bw);
    bs_reader_init(&br, bw.buf, bw.pos);
    for (int pre = 0; pre <= 31; pre++) {
        CHECK(t, bs_get(&br, pre) == mask(pre), "pre %d: ones", pre);
        CHECK(t, bs_get(&br, 32) == 0xa5c3f00fu, "pre %d: pattern", pre);
        CHECK(t, bs_get(&br, 32) == 0xffffffffu, "pre %d: all ones", pre);
        CHECK(t, bs_get(&br, 1) == 0, "pre %d: zero bit", pre);
        CHECK(t, bs_get(&br, 32) == 0, "pre %d: zero word", pre);
    }
    CHECK(t, bs_bits_left(&br) < 8, "%zu bits left over", bs_bits_left(&br));
    bs_writer_free(&bw);

    /* byte-exact layout of a known sequence: MSB first */
    CHECK(t, bs_writer_init(&bw, 0) == 0, "init");
    bs_put(&bw, 1, 1);
    bs_put(&bw, 3, 0);
    bs_put(&bw, 4, 0xf);
    bs_put(&bw, 12, 0xabc);
    bs_put(&bw, 4, 0x1);
    bs_flush(&bw);
    CHECK(t, bw.pos == 3 && bw.buf[0] == 0x8f && bw.buf[1] == 0xab && bw.buf[2] == 0xc1,
          "bytes %02x %02x %02x (pos %zu), want 8f ab c1", bw.buf[0], bw.buf[1],
          bw.buf[2], bw.pos);
    bs_writer_free(&bw);
}

static void test_align(TestCtx *t)
{
    for (int pre = 0; pre < 24; pre++) {
        BsWriter bw;
        BsReader br;
        CHECK(t, bs_writer_init(&bw, 0) == 0, "init");
        bs_put(&bw, pre, 0xffffffu);
        bs_align(&bw);
        uint64_t after = bs_bit_count(&bw);
        CHECK(t, after % 8 == 0 && after >= (uint64_t)pre && after < (uint64_t)pre + 8,
              "pre %d: aligned to %llu bits", pre, (unsigned long long)after);
        bs_align(&bw); /* already aligned: no-op */
        CHECK(t, bs_bit_count(&bw) == after, "pre %d: second align moved", pre);
        bs_put(&bw, 8, 0x5a);
        bs_flush(&bw);
        bs_reader_init(&br, bw.buf, bw.pos);
        CHECK(t, bs_get(&br, pre) == mask(pre), "pre %d: data", pre);
        CHECK(t, bs_get(&br, (int)(after - (uint64_t)pre)) == 0, "pre %d: stuffing not zero", pre);
        CHECK(t, bs_get(&br, 8) == 0x5a, "pre %d: byte after alignment", pre);
        CHECK(t, bs_bits_left(&br) == 0, "pre %d: trailing bits", pre);
        bs_writer_free(&bw);
    }
}

static void test_start_code(TestCtx *t)
{
    for (int pre = 0; pre < 17; pre++) {
        BsWriter bw;
        CHECK(t, bs_writer_init(&bw, 0) == 0, "init");
        bs_put(&bw, pre, 0x1ffffu);
        bs_put_start_code(&bw, 0xb3);
        bs_put_start_code(&bw, 0x00);
        bs_flush(&bw);
        size_t at = ((size_t)pre + 7) / 8;
        CHECK(t, bw.pos == at + 8, "pre %d: %zu bytes, want %zu", pre, bw.pos, at + 8);
        if (bw.pos == at + 8) {
            static const uint8_t want[8] = { 0, 0, 1, 0xb3, 0, 0, 1, 0 };
            CHECK(t, !memcmp(bw.buf + at, want, 8), "pre %d: start code bytes", pre);
            if (pre % 8)
                CHECK(t, (bw.buf[at - 1] & ((1u << (8 - pre % 8)) - 1)) == 0,
                      "pre %d: stuffing before start code not zero", pre);
        }
        bs_writer_free(&bw);
    }
}

static void test_flush(TestCtx *t)
{
    BsWriter bw;
    CHECK(t, bs_writer_init(&bw, 0) == 0, "init");
    bs_flush(&bw);
    CHECK(t, bw.pos == 0 && bs_bit_count(&bw) == 0, "flush of empty writer stored %zu bytes",
          bw.pos);
    bs_put(&bw, 3, 0x7);
    bs_flush(&bw);
    CHECK(t, bw.pos == 1 && bw.nbits == 0 && bw.buf[0] == 0xe0,
          "3 bits flushed: pos %zu nbits %d byte %02x", bw.pos, bw.nbits, bw.buf[0]);
    bs_flush(&bw);
    CHECK(t, bw.pos == 1 && bs_bit_count(&bw) == 8, "second flush changed the stream");
    /* writing after a flush continues at the byte boundary */
    bs_put(&bw, 16, 0xbeef);
    bs_put(&bw, 5, 0x1f);
    bs_flush(&bw);
    CHECK(t, bw.pos == 4 && bw.buf[1] == 0xbe && bw.buf[2] == 0xef && bw.buf[3] == 0xf8,
          "after more writes: pos %zu bytes %02x %02x %02x", bw.pos, bw.buf[1],
          bw.buf[2], bw.buf[3]);
    bs_writer_free(&bw);
}

/* Fill a writer with a reproducible random stream of nfields fields and
 * return its bit count. */
static uint64_t fill(BsWriter *bw, unsigned long long seed, int nfields)
{
    TestRng rng = { seed };
    uint64_t bits = 0;
    for (int i = 0; i < nfields; i++) {
        int n = (int)(test_rand(&rng) % 33);
        bs_put(bw, n, test_rand(&rng));
        bits += (uint64_t)n;
    }
    return bits;
}

/* Check the reader's next bits are fill(seed, nfields)'s stream. */
static int matches(BsReader *br, unsigned long long seed, int nfields)
{
    TestRng rng = { seed };
    for (int i = 0; i < nfields; i++) {
        int n = (int)(test_rand(&rng) % 33);
        uint32_t v = test_rand(&rng) & mask(n);
        if (bs_get(br, n) != v)
            return 0;
    }
    return 1;
}

static void test_append(TestCtx *t)
{
    BsWriter a, b, e;
    BsReader br;

    CHECK(t, bs_writer_init(&a, 0) == 0 && bs_writer_init(&b, 0) == 0 &&
                 bs_writer_init(&e, 0) == 0, "init");
    uint64_t abits = fill(&a, 11, 1001); /* leaves a partial byte pending */
    uint64_t bbits = fill(&b, 22, 5003);
    bs_flush(&b);
    size_t bbytes = b.pos;
    bs_append(&a, &b);
    bs_append(&a, &e); /* empty: no change */
    CHECK(t, !bs_error(&a), "error after append");
    size_t abytes = (size_t)((abits + 7) / 8);
    CHECK(t, a.pos == abytes + bbytes && a.nbits == 0, "pos %zu nbits %d, want %zu 0",
          a.pos, a.nbits, abytes + bbytes);
    CHECK(t, b.pos == bbytes && bs_bit_count(&b) == (bbits + 7) / 8 * 8,
          "source changed by append");
    /* the destination keeps working after an append */
    bs_put(&a, 24, 0x123456);
    bs_flush(&a);
    bs_reader_init(&br, a.buf, a.pos);
    CHECK(t, matches(&br, 11, 1001), "first writer's bits");
    bs_get(&br, (int)((8 - abits % 8) % 8));
    CHECK(t, matches(&br, 22, 5003), "appended writer's bits");
    bs_get(&br, (int)((8 - bbits % 8) % 8));
    CHECK(t, bs_get(&br, 24) == 0x123456, "bits written after the append");
    CHECK(t, bs_bits_left(&br) == 0, "%zu bits left", bs_bits_left(&br));

    /* appending into an empty writer copies the source */
    bs_writer_reset(&e);
    bs_append(&e, &b);
    CHECK(t, e.pos == b.pos && !memcmp(e.buf, b.buf, b.pos), "append into empty writer");

    /* a source many times the destination's allocation */
    BsWriter big, small;
    CHECK(t, bs_writer_init(&big, 0) == 0 && bs_writer_init(&small, 1) == 0, "init");
    uint64_t bigbits = fill(&big, 66, 400000);
    bs_flush(&big);
    bs_put(&small, 7, 0x55);
    bs_append(&small, &big);
    CHECK(t, !bs_error(&small) && small.pos == 1 + big.pos && small.size >= small.pos,
          "big append: pos %zu size %zu, source %zu bytes", small.pos, small.size, big.pos);
    bs_reader_init(&br, small.buf, small.pos);
    CHECK(t, bs_get(&br, 8) == 0xaa, "big append: first byte");
    CHECK(t, matches(&br, 66, 400000), "big append: contents");
    CHECK(t, bs_bits_left(&br) == (8 - bigbits % 8) % 8, "big append: length");
    bs_writer_free(&big);
    bs_writer_free(&small);

    /* a failed source poisons the destination (one check at the end) */
    b.error = -ENOMEM;
    bs_append(&e, &b);
    CHECK(t, bs_error(&e) == -ENOMEM, "error not propagated: %d", bs_error(&e));

    bs_writer_free(&a);
    bs_writer_free(&b);
    bs_writer_free(&e);
}

/* Outputs far beyond the initial allocation, from zero and tiny capacities. */
static void test_growth(TestCtx *t)
{
    static const size_t caps[] = { 0, 1, 4096, 100000 };
    for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
        BsWriter bw;
        BsReader br;
        CHECK(t, bs_writer_init(&bw, caps[c]) == 0, "init %zu", caps[c]);
        CHECK(t, bw.size >= caps[c], "capacity %zu: allocated %zu", caps[c], bw.size);
        uint64_t bits = fill(&bw, 33 + c, 1500000); /* ~3 MB */
        bs_flush(&bw);
        CHECK(t, !bs_error(&bw), "writer error");
        CHECK(t, bw.pos == (bits + 7) / 8 && bw.size >= bw.pos,
              "capacity %zu: pos %zu size %zu bits %llu", caps[c], bw.pos, bw.size,
              (unsigned long long)bits);
        bs_reader_init(&br, bw.buf, bw.pos);
        CHECK(t, matches(&br, 33 + c, 1500000), "capacity %zu: contents", caps[c]);
        bs_writer_free(&bw);
        CHECK(t, bw.buf == NULL && bw.size == 0 && bw.pos == 0, "free did not clear");
    }
}

static void test_reset(TestCtx *t)
{
    BsWriter bw;
    BsReader br;
    CHECK(t, bs_writer_init(&bw, 0) == 0, "init");
    fill(&bw, 44, 20000);
    bs_put(&bw, 5, 0x15); /* leave bits pending too */
    uint8_t *buf = bw.buf;
    size_t size = bw.size;
    bs_writer_reset(&bw);
    CHECK(t, bs_bit_count(&bw) == 0 && bw.pos == 0 && bw.nbits == 0, "reset left data");
    CHECK(t, bw.buf == buf && bw.size == size, "reset dropped the allocation");
    uint64_t bits = fill(&bw, 55, 300);
    CHECK(t, bs_bit_count(&bw) == bits, "bit count after reset");
    bs_flush(&bw);
    bs_reader_init(&br, bw.buf, bw.pos);
    CHECK(t, matches(&br, 55, 300), "contents after reset");
    CHECK(t, bw.pos == (bits + 7) / 8, "size after reset");
    /* reset also clears a sticky error */
    bw.error = -ENOMEM;
    bs_writer_reset(&bw);
    CHECK(t, !bs_error(&bw), "error survived reset");
    bs_writer_free(&bw);
}

static void test_reader_end(TestCtx *t)
{
    static const uint8_t buf[2] = { 0xff, 0x81 };
    BsReader br;
    bs_reader_init(&br, buf, sizeof(buf));
    CHECK(t, bs_peek(&br, 4) == 0xf && br.bitpos == 0, "peek consumed");
    CHECK(t, bs_get(&br, 12) == 0xff8 && !br.overrun, "first 12 bits");
    CHECK(t, bs_bits_left(&br) == 4, "bits left %zu", bs_bits_left(&br));
    CHECK(t, bs_get(&br, 8) == 0x10, "reading past the end gives zero bits");
    CHECK(t, br.overrun, "overrun not flagged");
    CHECK(t, bs_bits_left(&br) == 0, "bits left after overrun");
}

int main(void)
{
    TestCtx t;
    test_init(&t, "test_bitwriter");
    test_run(&t, "random_widths_roundtrip", test_random_widths);
    test_run(&t, "edge_widths", test_edge_widths);
    test_run(&t, "align", test_align);
    test_run(&t, "start_code", test_start_code);
    test_run(&t, "flush", test_flush);
    test_run(&t, "append", test_append);
    test_run(&t, "growth", test_growth);
    test_run(&t, "reset", test_reset);
    test_run(&t, "reader_end", test_reader_end);
    return test_finish(&t);
}
