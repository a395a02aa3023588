/* encoder.h — the mpegenc library API.  The CLI is a thin layer over this.
 *
 *   MpeParam p; mpe_param_default(&p); ... p.width = w; p.height = h;
 *   mpe_encoder_open(&enc, &p, &log, &err);
 *   for each frame: mpe_encode_frame(enc, &frame, &out, &err); write out.data
 *   mpe_encode_frame(enc, NULL, &out, &err);   (flush: sequence_end_code)
 *   mpe_encoder_close(enc);
 */
#ifndef MPE_ENCODER_H
#define MPE_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/picture.h"
#include "encoder/param.h"

#define MPE_VERSION "0.1.0"

typedef struct MpeEncoder MpeEncoder;

typedef struct MpeFrameStats {
    int display_index;     /* frame number in input order */
    char type;             /* 'I' or 'P' */
    int qscale;
    uint64_t bits;         /* picture bits including headers before it */
    uint64_t sse[3];       /* recon vs source, per plane, true size */
    double psnr[3];        /* dB */
    int mb_intra, mb_inter, mb_skipped;
} MpeFrameStats;

typedef struct MpeOutput {
    const uint8_t *data;   /* stream bytes produced by this call; valid until the next */
    size_t size;
    int have_picture;      /* a picture was coded: stats and recon are valid */
    MpeFrameStats stats;
    const MpePicture *recon;  /* the reconstructed picture (padded planes) */
} MpeOutput;

/* p->width/height must be set; p->format AUTO means MPEG-2; fps 0/0 means 25. */
int mpe_encoder_open(MpeEncoder **enc, const MpeParam *p, const MpeLog *log, MpeError *err);
/* Take one frame (RGB24 or YUV420 of the configured size) and code the one
 * before it: the front end works one frame ahead, so the first call returns
 * no picture and the flush call (frame == NULL) returns the last one followed
 * by sequence_end_code.  out->have_picture says whether a picture came out. */
int mpe_encode_frame(MpeEncoder *enc, const MpeFrame *frame, MpeOutput *out, MpeError *err);
void mpe_encoder_close(MpeEncoder *enc);

/* The front-end backend in use. */
const char *mpe_encoder_backend(const MpeEncoder *enc);
/* The frame rate the stream signals (may differ from the requested one when
 * the format cannot express it; a warning is logged). */
void mpe_encoder_stream_rate(const MpeEncoder *enc, int *num, int *den);

#endif
