/* bitwriter.h — MSB-first bit writer into a growable byte buffer.
 *
 * Bits accumulate in a 64-bit word and are stored big-endian, 32 at once
 * when 32 or more are pending, so bs_put costs a shift and an or on the
 * common path.  A failed allocation sets `error` and further writes are
 * dropped; the caller checks bs_error() once at the end instead of after
 * every write. */
#ifndef MPE_BITWRITER_H
#define MPE_BITWRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct BsWriter {
    uint8_t *buf;
    size_t size;      /* bytes allocated */
    size_t pos;       /* bytes stored */
    uint64_t acc;     /* pending bits, right-aligned */
    int nbits;        /* number of pending bits (< 32 between calls) */
    int error;
} BsWriter;

int bs_writer_init(BsWriter *bw, size_t capacity);
void bs_writer_free(BsWriter *bw);
/* Forget the contents, keep the allocation. */
void bs_writer_reset(BsWriter *bw);
/* Store pending whole bytes; slow path of bs_put. */
void bs_writer_drain(BsWriter *bw);

/* Write the n (0..32) low bits of value, most significant first.  Once 32
 * are pending and the buffer has room, their top 32 go out as four bytes at
 * once (the compiler merges the byte stores); acc keeps stale bits above the
 * pending ones, which no read looks at.  Otherwise (growth, or an error:
 * drain's reserve) the byte-wise drain. */
static inline void bs_put(BsWriter *bw, int n, uint32_t value)
{
    if (n <= 0)
        return;
    bw->acc = (bw->acc << n) | (value & (uint32_t)((1ull << n) - 1));
    bw->nbits += n;
    if (bw->nbits >= 32) {
        if (bw->size - bw->pos >= 8) {   /* drain's reserve(8): no room after an error */
            bw->nbits -= 32;
            const uint32_t w = (uint32_t)(bw->acc >> bw->nbits);
            uint8_t *p = bw->buf + bw->pos;
            p[0] = (uint8_t)(w >> 24);
            p[1] = (uint8_t)(w >> 16);
            p[2] = (uint8_t)(w >> 8);
            p[3] = (uint8_t)w;
            bw->pos += 4;
        } else {
            bs_writer_drain(bw);
        }
    }
}

static inline uint64_t bs_bit_count(const BsWriter *bw)
{
    return (uint64_t)bw->pos * 8 + (uint64_t)bw->nbits;
}

/* Pad with zero bits to the next byte boundary (stuffing before start codes). */
static inline void bs_align(BsWriter *bw)
{
    bs_put(bw, (8 - (bw->nbits & 7)) & 7, 0);
}

/* Byte-align, store everything pending; buf[0..pos) is then the stream. */
void bs_flush(BsWriter *bw);

/* Aligned start code 0x000001xx (ISO/IEC 13818-2 §6.2.1 / 11172-2 §2.4.2). */
static inline void bs_put_start_code(BsWriter *bw, uint8_t code)
{
    bs_align(bw);
    bs_put(bw, 24, 0x000001);
    bs_put(bw, 8, code);
}

/* Append the contents of src to dst (aligning dst first).  src must have
 * been flushed with bs_flush(): pending bits are not carried over. */
void bs_append(BsWriter *dst, const BsWriter *src);

static inline int bs_error(const BsWriter *bw) { return bw->error; }

#endif
