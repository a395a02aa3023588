/* psmux.c — see psmux.h.  Syntax from ISO/IEC 13818-1 §2.5.3 (pack header,
 * system header) and §2.4.3.6 (PES packet), and ISO/IEC 11172-1 §2.4.3
 * (pack, system header, packet). */
#include "cli/psmux.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bitstream/bitwriter.h"

#define STREAM_ID_VIDEO 0xE0
#define MUX_RATE_MAX 0x3FFFFE          /* 22 bits, units of 50 bytes/s; 0x3FFFFF is forbidden in 11172-1 */
#define STD_BUFFER_KB 1024             /* P-STD bound, 1024-byte units: room for a big I picture and preload */

struct MpePsMux {
    int mpeg2;
    int rate_num, rate_den;
    int reorder;                /* pictures decoding runs ahead of display */
    uint32_t mux_rate;          /* 50 bytes/s units */
    int64_t scr;                /* of the last pack, 90 kHz */
    uint64_t bytes_since_scr;   /* bytes written since that pack began */
    int packs;                  /* written so far: the first carries the system header */
    BsWriter bw;
};

int64_t mpe_ps_timestamp(const MpePsMux *m, int64_t k)
{
    /* exact per picture, rounded to nearest (floor division: k may be -1
     * for the decoding time of a reordered first picture): 29.97 fps is
     * 3003 ticks, 23.976 alternates 3753/3754 */
    const int64_t x = k * 90000 * m->rate_den + m->rate_num / 2;
    const int64_t q = x / m->rate_num - (x % m->rate_num < 0);
    return MPE_PS_PRELOAD + q;
}

/* A 33-bit time stamp in the 5-byte form both standards share:
 * prefix(4) ts[32..30] 1 ts[29..15] 1 ts[14..0] 1. */
static void put_timestamp(BsWriter *bw, unsigned prefix, int64_t ts)
{
    const uint64_t t = (uint64_t)ts & ((1ull << 33) - 1);
    bs_put(bw, 4, prefix);
    bs_put(bw, 3, (uint32_t)(t >> 30));
    bs_put(bw, 1, 1);
    bs_put(bw, 15, (uint32_t)(t >> 15) & 0x7FFF);
    bs_put(bw, 1, 1);
    bs_put(bw, 15, (uint32_t)t & 0x7FFF);
    bs_put(bw, 1, 1);
}

static void put_pack_header(MpePsMux *m, int64_t scr)
{
    BsWriter *bw = &m->bw;
    bs_put(bw, 32, 0x000001BA);                 /* pack_start_code */
    if (m->mpeg2) {
        const uint64_t base = (uint64_t)scr & ((1ull << 33) - 1);
        bs_put(bw, 2, 1);                       /* '01' */
        bs_put(bw, 3, (uint32_t)(base >> 30));  /* system_clock_reference_base */
        bs_put(bw, 1, 1);
        bs_put(bw, 15, (uint32_t)(base >> 15) & 0x7FFF);
        bs_put(bw, 1, 1);
        bs_put(bw, 15, (uint32_t)base & 0x7FFF);
        bs_put(bw, 1, 1);
        bs_put(bw, 9, 0);                       /* system_clock_reference_extension */
        bs_put(bw, 1, 1);
        bs_put(bw, 22, m->mux_rate);            /* program_mux_rate */
        bs_put(bw, 2, 3);                       /* marker_bit x2 */
        bs_put(bw, 5, 0x1F);                    /* reserved */
        bs_put(bw, 3, 0);                       /* pack_stuffing_length */
    } else {
        put_timestamp(bw, 0x2, scr);            /* '0010' system_clock_reference */
        bs_put(bw, 1, 1);
        bs_put(bw, 22, m->mux_rate);            /* mux_rate */
        bs_put(bw, 1, 1);
    }
}

static void put_system_header(MpePsMux *m)
{
    BsWriter *bw = &m->bw;
    bs_put(bw, 32, 0x000001BB);     /* system_header_start_code */
    bs_put(bw, 16, 6 + 3);          /* header_length: the fields below, one stream */
    bs_put(bw, 1, 1);
    bs_put(bw, 22, m->mux_rate);    /* rate_bound */
    bs_put(bw, 1, 1);
    bs_put(bw, 6, 0);               /* audio_bound */
    bs_put(bw, 1, 0);               /* fixed_flag: variable rate */
    bs_put(bw, 1, 0);               /* CSPS_flag */
    bs_put(bw, 1, 0);               /* system_audio_lock_flag */
    bs_put(bw, 1, 0);               /* system_video_lock_flag */
    bs_put(bw, 1, 1);
    bs_put(bw, 5, 1);               /* video_bound */
    if (m->mpeg2) {
        bs_put(bw, 1, 0);           /* packet_rate_restriction_flag */
        bs_put(bw, 7, 0x7F);        /* reserved_bits */
    } else {
        bs_put(bw, 8, 0xFF);        /* reserved_byte */
    }
    bs_put(bw, 8, STREAM_ID_VIDEO); /* stream_id */
    bs_put(bw, 2, 3);               /* '11' */
    bs_put(bw, 1, 1);               /* (P-)STD_buffer_bound_scale: 1024-byte units */
    bs_put(bw, 13, STD_BUFFER_KB);  /* (P-)STD_buffer_size_bound */
}

/* Header bytes of a packet after its 6-byte start and length. */
static size_t packet_header_bytes(const MpePsMux *m, int stamps)
{
    const size_t ts = stamps == 2 ? 10 : stamps == 1 ? 5 : 0;
    /* 13818-1: flags(2) + PES_header_data_length(1); 11172-1: the time
     * stamps themselves, or '0000 1111' */
    return m->mpeg2 ? 3 + ts : ts ? ts : 1;
}

/* stamps: 0 none, 1 PTS, 2 PTS and DTS */
static void put_packet_header(MpePsMux *m, size_t payload, int stamps, int64_t pts, int64_t dts,
                              int aligned)
{
    BsWriter *bw = &m->bw;
    bs_put(bw, 32, 0x00000100 | STREAM_ID_VIDEO);
    bs_put(bw, 16, (uint32_t)(packet_header_bytes(m, stamps) + payload));   /* packet_length */
    if (m->mpeg2) {
        bs_put(bw, 2, 2);                   /* '10' */
        bs_put(bw, 2, 0);                   /* PES_scrambling_control */
        bs_put(bw, 1, 0);                   /* PES_priority */
        bs_put(bw, 1, aligned);             /* data_alignment_indicator: starts with a start code */
        bs_put(bw, 1, 0);                   /* copyright */
        bs_put(bw, 1, 0);                   /* original_or_copy */
        bs_put(bw, 2, stamps == 2 ? 3 : stamps == 1 ? 2 : 0);   /* PTS_DTS_flags */
        bs_put(bw, 6, 0);                   /* ESCR, ES_rate, DSM_trick_mode, additional_copy_info,
                                               PES_CRC, PES_extension flags */
        bs_put(bw, 8, stamps == 2 ? 10 : stamps == 1 ? 5 : 0);  /* PES_header_data_length */
    }
    if (stamps == 2) {
        put_timestamp(bw, 0x3, pts);
        put_timestamp(bw, 0x1, dts);
    } else if (stamps == 1) {
        put_timestamp(bw, 0x2, pts);
    } else if (!m->mpeg2) {
        bs_put(bw, 8, 0x0F);                /* no time stamps */
    }
}

static int emit(MpePsMux *m, FILE *f, MpeError *err)
{
    bs_flush(&m->bw);
    if (bs_error(&m->bw))
        return mpe_error(err, -ENOMEM, "out of memory for the program stream");
    if (m->bw.pos && fwrite(m->bw.buf, 1, m->bw.pos, f) != m->bw.pos)
        return mpe_error(err, -(errno ? errno : EIO), "write error: %s",
                         strerror(errno ? errno : EIO));
    m->bytes_since_scr += m->bw.pos;
    bs_writer_reset(&m->bw);
    return 0;
}

/* The SCR of a pack that starts now, for data decoded at dts (-1: none). */
static int64_t next_scr(const MpePsMux *m, int64_t dts)
{
    int64_t scr = m->scr;
    if (m->packs)
        scr += (int64_t)((m->bytes_since_scr * 90000 + (uint64_t)m->mux_rate * 50 - 1) /
                         ((uint64_t)m->mux_rate * 50));
    if (dts >= 0 && scr < dts - MPE_PS_PRELOAD)
        scr = dts - MPE_PS_PRELOAD;   /* the link idles: no more than preload is buffered */
    return scr;
}

int mpe_ps_write(MpePsMux *m, FILE *f, const uint8_t *data, size_t size, int is_picture,
                 int64_t display_k, int64_t coding_k, MpeError *err)
{
    const int64_t pts = is_picture ? mpe_ps_timestamp(m, display_k) : -1;
    /* decoding runs `reorder` picture periods ahead of display; without
     * reordering DTS = PTS and only the PTS is sent */
    const int64_t dts = is_picture ? mpe_ps_timestamp(m, coding_k - m->reorder) : -1;
    size_t done = 0;
    int ret;

    while (done < size) {
        const int first = done == 0;
        const int stamps = first && is_picture ? (dts != pts ? 2 : 1) : 0;
        const int64_t scr = next_scr(m, first ? dts : -1);
        size_t room = MPE_PS_PACK_BYTES - (m->mpeg2 ? 14 : 12) - 6 - packet_header_bytes(m, stamps);
        if (!m->packs)
            room -= 6 + 6 + 3;   /* the system header */
        const size_t payload = MPE_MIN(room, size - done);

        put_pack_header(m, scr);
        if (!m->packs)
            put_system_header(m);
        put_packet_header(m, payload, stamps, pts, dts, first);
        m->scr = scr;
        m->bytes_since_scr = 0;
        m->packs++;
        if ((ret = emit(m, f, err)) < 0)
            return ret;
        if (fwrite(data + done, 1, payload, f) != payload)
            return mpe_error(err, -(errno ? errno : EIO), "write error: %s",
                             strerror(errno ? errno : EIO));
        m->bytes_since_scr += payload;
        done += payload;
    }
    return 0;
}

int mpe_ps_finish(MpePsMux *m, FILE *f, MpeError *err)
{
    bs_put(&m->bw, 32, 0x000001B9);   /* MPEG_program_end_code / ISO_11172_end_code */
    return emit(m, f, err);
}

int mpe_ps_open(MpePsMux **out, int mpeg2, int rate_num, int rate_den, int reorder,
                double bit_rate, MpeError *err)
{
    MpePsMux *m;
    *out = NULL;
    if (rate_num <= 0 || rate_den <= 0 || reorder < 0 || reorder > 16)
        return mpe_error(err, -EINVAL, "program stream: bad frame rate %d/%d or reorder %d",
                         rate_num, rate_den, reorder);
    if (!(m = calloc(1, sizeof(*m))) || bs_writer_init(&m->bw, 256) < 0) {
        free(m);
        return mpe_error(err, -ENOMEM, "out of memory for the program stream");
    }
    m->mpeg2 = mpeg2;
    m->rate_num = rate_num;
    m->rate_den = rate_den;
    m->reorder = reorder;
    /* the stream's peak plus the packs' own bytes (about 1.5 % at 2048) */
    m->mux_rate = MUX_RATE_MAX;
    if (bit_rate > 0) {
        const double units = bit_rate * 1.02 / 8 / 50 + 1;
        if (units < MUX_RATE_MAX)
            m->mux_rate = (uint32_t)units;
    }
    *out = m;
    return 0;
}

void mpe_ps_close(MpePsMux *m)
{
    if (!m)
        return;
    bs_writer_free(&m->bw);
    free(m);
}
