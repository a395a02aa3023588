/* psmux.h — wrapping the video elementary stream in a program stream, so a
 * .mpg / .mpeg file carries time stamps players and ffprobe understand
 * (duration, seeking) instead of a bare elementary stream.
 *
 * MPEG-2 video goes into an ISO/IEC 13818-1 program stream (pack header
 * with SCR base and extension, PES packets); MPEG-1 video into an ISO/IEC
 * 11172-1 system stream (its own pack and packet syntax).  One video
 * stream, id 0xE0; packs of at most MPE_PS_PACK_BYTES; the first pack
 * carries the system header; the stream ends with MPEG_program_end_code.
 *
 * Time stamps are 90 kHz: picture k in display order is shown at
 * PTS = preload + k * 90000 * rate_den / rate_num (exact, rounded per
 * picture, never accumulated); picture c in coding order is decoded at
 * DTS = the time stamp of slot c - reorder (reorder = 0 without B pictures:
 * DTS = PTS, and then only the PTS is written; 1 for I/P/B coding order).  Each pack's SCR is the time its first byte enters the
 * decoder: the bytes before it at the mux rate, but no earlier than
 * preload before the DTS of the picture it starts (a buffer never holds
 * more than preload ahead), so SCR <= DTS for every picture that fits the
 * mux rate.
 *
 *   MpePsMux *m; mpe_ps_open(&m, mpeg2, 25, 1, 0, 0, &err);
 *   per mpe_encode_frame output: mpe_ps_write(m, f, data, size, is_picture, pts_k, dts_k, &err);
 *   mpe_ps_finish(m, f, &err); mpe_ps_close(m);
 */
#ifndef MPE_PSMUX_H
#define MPE_PSMUX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/common.h"

#define MPE_PS_PACK_BYTES 2048
#define MPE_PS_PRELOAD 45000   /* 90 kHz ticks: 0.5 s, the first PTS (as ffmpeg's -muxpreload) */

typedef struct MpePsMux MpePsMux;

/* mpeg2: 13818-1 program stream, else 11172-1 system stream.  rate: the
 * stream's frame rate; reorder: see above.  bit_rate: the stream's peak bit/s when known
 * (--bitrate/--maxrate), 0 for constant-quantiser streams: the mux rate is
 * then the largest the header can say, so SCR never runs ahead of DTS. */
int mpe_ps_open(MpePsMux **m, int mpeg2, int rate_num, int rate_den, int reorder,
                double bit_rate, MpeError *err);
/* Writes size bytes of the elementary stream as PES packets.  When
 * is_picture, the bytes hold one coded picture (with the headers before
 * it), shown as picture display_k and decoded as picture coding_k; the
 * first packet carries its time stamps.  Other bytes (sequence_end_code)
 * go without time stamps.  Errors name nothing: the caller adds the file. */
int mpe_ps_write(MpePsMux *m, FILE *f, const uint8_t *data, size_t size, int is_picture,
                 int64_t display_k, int64_t coding_k, MpeError *err);
/* MPEG_program_end_code (0x000001B9, in both standards). */
int mpe_ps_finish(MpePsMux *m, FILE *f, MpeError *err);
void mpe_ps_close(MpePsMux *m);

/* The 90 kHz time stamp of picture k (preload included). */
int64_t mpe_ps_timestamp(const MpePsMux *m, int64_t k);

#endif
