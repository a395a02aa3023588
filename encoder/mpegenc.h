/* mpegenc.h — the library's public API in one include (installed as
 * <mpegenc.h>, with its headers beside it; pkg-config --cflags mpegenc).
 *
 *   MpeParam p;   mpe_param_default(&p); mpe_param_parse(&p, "q", "5", &err);
 *   MpeInput *in; mpe_input_open(&in, "clip.y4m", p.start_number, &err);
 *   p.width/height (and fps) from mpe_input_info(in);
 *   MpeEncoder *e; mpe_encoder_open(&e, &p, NULL, &err);
 *   loop: mpe_input_read -> mpe_encode_frame (NULL at the end: flush, and
 *         again until a call returns no bytes and no picture: B pictures
 *         leave several to code) -> write out.data/out.size;
 *         mpe_encoder_pop_stats for the records;
 *   mpe_encoder_close(e); mpe_input_close(in);
 *
 * examples/encode.c is that loop as a complete program. */
#ifndef MPE_MPEGENC_H
#define MPE_MPEGENC_H

#include "common/common.h"
#include "common/picture.h"
#include "encoder/encoder.h"
#include "encoder/param.h"
#include "input/input.h"
#include "iqa/metric.h"

#endif
