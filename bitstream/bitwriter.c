#include "bitwriter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int reserve(BsWriter *bw, size_t extra)
{
    size_t need = bw->pos + extra, n;
    uint8_t *p;

    if (bw->error)
        return -1;
    if (need <= bw->size)
        return 0;
    n = bw->size ? bw->size : 4096;
    while (n < need)
        n *= 2;
    p = realloc(bw->buf, n);
    if (!p) {
        bw->error = -ENOMEM;
        return -1;
    }
    bw->buf = p;
    bw->size = n;
    return 0;
}

int bs_writer_init(BsWriter *bw, size_t capacity)
{
    memset(bw, 0, sizeof(*bw));
    if (capacity && reserve(bw, capacity) < 0)
        return -ENOMEM;
    return 0;
}

void bs_writer_free(BsWriter *bw)
{
    free(bw->buf);
    memset(bw, 0, sizeof(*bw));
}

void bs_writer_reset(BsWriter *bw)
{
    bw->pos = 0;
    bw->acc = 0;
    bw->nbits = 0;
    bw->error = 0;
}

void bs_writer_drain(BsWriter *bw)
{
    if (reserve(bw, 8) < 0) {
        bw->nbits = 0;
        return;
    }
    while (bw->nbits >= 8) {
        bw->nbits -= 8;
        bw->buf[bw->pos++] = (uint8_t)(bw->acc >> bw->nbits);
    }
    bw->acc &= (1ull << bw->nbits) - 1;
}

void bs_flush(BsWriter *bw)
{
    bs_align(bw);
    bs_writer_drain(bw);
}

void bs_append(BsWriter *dst, const BsWriter *src)
{
    bs_flush(dst);
    if (src->error) {
        dst->error = src->error;
        return;
    }
    /* An empty source may never have allocated (buf NULL), and memcpy from
     * NULL is undefined even for 0 bytes. */
    if (src->pos == 0)
        return;
    if (reserve(dst, src->pos) < 0)
        return;
    memcpy(dst->buf + dst->pos, src->buf, src->pos);
    dst->pos += src->pos;
}
