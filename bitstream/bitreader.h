/* bitreader.h — MSB-first bit reader, used by tests to read back what the
 * writer and the syntax writers produced.  Reading past the end yields zero
 * bits and sets `overrun`. */
#ifndef MPE_BITREADER_H
#define MPE_BITREADER_H

#include <stddef.h>
#include <stdint.h>

typedef struct BsReader {
    const uint8_t *buf;
    size_t size;     /* bytes */
    size_t bitpos;
    int overrun;
} BsReader;

static inline void bs_reader_init(BsReader *br, const uint8_t *buf, size_t size)
{
    br->buf = buf;
    br->size = size;
    br->bitpos = 0;
    br->overrun = 0;
}

/* Next n (0..32) bits without consuming them. */
static inline uint32_t bs_peek(const BsReader *br, int n)
{
    uint32_t v = 0;
    for (int i = 0; i < n; i++) {
        size_t p = br->bitpos + (size_t)i;
        uint32_t bit = p / 8 < br->size ? (br->buf[p / 8] >> (7 - p % 8)) & 1 : 0;
        v = (v << 1) | bit;
    }
    return v;
}

static inline uint32_t bs_get(BsReader *br, int n)
{
    uint32_t v = bs_peek(br, n);
    br->bitpos += (size_t)n;
    if (br->bitpos > br->size * 8)
        br->overrun = 1;
    return v;
}

static inline size_t bs_bits_left(const BsReader *br)
{
    return br->bitpos >= br->size * 8 ? 0 : br->size * 8 - br->bitpos;
}

#endif
