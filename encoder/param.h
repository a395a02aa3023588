/* param.h — encoder parameters: one struct, its defaults, and one parser
 * that every long option of the CLI goes through (x264's param_parse habit:
 * '-' and '_' are the same in names; unknown names and bad values are
 * reported differently). */
#ifndef MPE_PARAM_H
#define MPE_PARAM_H

#include <stddef.h>

#include "common/common.h"

typedef enum MpeFormat {
    MPE_FORMAT_AUTO = 0,   /* from the output file extension, else MPEG-2 */
    MPE_FORMAT_MPEG1 = 1,
    MPE_FORMAT_MPEG2 = 2,
} MpeFormat;

typedef enum MpeMotionSearch {
    MPE_ME_HIER = 0,       /* coarse-to-fine over +-merange (gpu/frontend.h) */
    MPE_ME_FULL = 1,       /* exhaustive +-search around zero */
} MpeMotionSearch;

typedef enum MpeAqMode {
    MPE_AQ_VARIANCE = 0,   /* luma AC energy (encoder/aq.h) */
    MPE_AQ_MAD = 1,        /* MAD's contrast masking of the source */
} MpeAqMode;

typedef enum MpeDspChoice {
    MPE_DSP_AUTO = 0,      /* the fastest primitives this CPU runs */
    MPE_DSP_C = 1,         /* the C references (same stream, slower) */
} MpeDspChoice;

/* Which quality measures a record carries (MpeFrameStats.metrics, and the
 * --iqa option's set): bit f is family f of the metric registry
 * (iqa/metric.h; test_metric checks these names).  Only the rate control and
 * the option table name them; everything else reads the registry. */
enum {
    MPE_IQA_PSNR = 1 << 0,     /* psnr[0..2] (always measured: it is nearly free) */
    MPE_IQA_SSIM = 1 << 1,     /* ssim_y */
    MPE_IQA_MAD = 1 << 2,      /* mad, mad_detect, mad_appear */
    MPE_IQA_BLIINDS = 1 << 3,  /* bliinds */
};

#define MPE_MAX_BFRAMES 4
/* --bframes auto with --b-adapt 1: runs of up to this many B pictures */
#define MPE_BADAPT_MAX_AUTO 3

/* --cqm: the quantiser matrices. */
typedef enum MpeCqm {
    MPE_CQM_AUTO = -1,     /* ramp in MPEG-2 (measured: make rd), mpeg in MPEG-1 and under a
                              MAD or BLIINDS-II target */
    MPE_CQM_MPEG = 0,      /* the standards' defaults (not sent) */
    MPE_CQM_FLAT = 1,      /* 16 everywhere (intra DC entry 8) */
    MPE_CQM_RAMP = 2,      /* intra 16..24 rising with frequency, non-intra 16 */
    MPE_CQM_FILE = 3,      /* read from a file (cqm_intra, cqm_inter) */
} MpeCqm;

/* The MPEG-2 switches resolved for a format. */
typedef struct MpeCodingSwitches {
    int intra_vlc, alt_scan, dc_precision, qscale_type;   /* dc_precision in bits */
    int cqm;
} MpeCodingSwitches;

typedef struct MpeParam {
    int format;          /* --format: MpeFormat */
    int qscale;          /* --q: quantiser_scale 1..31 (MPEG-2: quantiser_scale_code, linear) */
    int gop;             /* --gop: pictures per closed GOP, 1..1024 (at most: a scene cut
                            starts one early) */
    int scenecut;        /* --scenecut: a frame whose luma histogram moved more than this
                            percentage from the previous frame's starts a GOP; 0: never */
    int bframes;         /* --bframes: B pictures between I/P pictures, 0..MPE_MAX_BFRAMES,
                            -1 = auto (mpe_param_bframes) */
    int b_adapt;         /* --b-adapt: 1 = each run of B pictures as long as the front end's
                            costs say (encoder/bdecide.h), up to bframes; 0 = always bframes;
                            -1 = auto (mpe_param_b_adapt) */
    double pb_ratio;     /* --pb-ratio: a B picture's quantiser / a P picture's (--q) */
    double ip_ratio;     /* --ip-ratio: a P picture's quantiser / an I picture's (--q); 0: auto */
    int chunk_gops;      /* --chunk-gops: GOPs per chunk, the unit an encode may be split into
                            (mpegenc-mpi); state that crosses GOPs (rate control, f_code)
                            starts afresh at each chunk; 0 = one chunk; -1 = auto:
                            MPE_CHUNK_GOPS_AUTO, or one chunk under a bit rate (see
                            mpe_param_chunk_gops) */
    int search_range;    /* --search: full-pel exhaustive window R, 0..64, -1 = auto */
    int me;              /* --me: MpeMotionSearch */
    int merange;         /* --merange: hier's reach, 4..255, 0 = auto (the level's) */
    int merange_adapt;   /* --merange-adapt: 1 = each search's reach from its reference's
                            vectors (encoder.c search_reach), 0 = always merange */
    int trellis;         /* --trellis: 1 = trellis quantisation (dsp/trellis.h), 0 = plain */
    int trellis_lambda;  /* --lambda: C in lambda = c / 1000 * qscale^2 */
    /* MPEG-2's own coding switches; -1 = auto (MPEG-1's fixed choice in
     * MPEG-1, the measured default in MPEG-2: mpe_param_mpeg2_switches) */
    int intra_vlc;       /* --intra-vlc: intra_vlc_format 0 (B.14), 1 (B.15), -1 = auto: picture
                            by picture, from the last picture of its kind */
    int alt_scan;        /* --scan: alternate_scan 0 (zigzag), 1 (alternate) */
    int dc_precision;    /* --dc-precision: intra DC bits, 8..10 */
    int qscale_type;     /* --qscale-type: 0 linear, 1 non-linear (Table 7-6) */
    int cqm;             /* --cqm: MpeCqm; MPE_CQM_FILE: cqm_intra/cqm_inter hold the file's */
    uint8_t cqm_intra[64], cqm_inter[64];   /* raster order */
    char cqm_file[256];  /* the file they were read from */
    double aq_strength;  /* --aq-strength: variance adaptive quantisation, 0 = off; the parser
                            takes -1 < S < 4, mpe_param_check refuses S < 0 */
    int aq_mode;         /* --aq-mode: MpeAqMode, what --aq-strength adapts to */
    int fps_num;         /* --fps: frame rate; 0/0 = the input's, else 25 */
    int fps_den;
    int start_number;    /* --start: first number of a printf-pattern sequence */
    int seek;            /* --seek: input frames skipped before the first encoded (the caller's) */
    int frames;          /* --frames: most frames encoded, 0 = all (the caller's) */
    long length;         /* the frames the caller will encode where it knows (a file's length,
                            --frames), 0 = unknown: --backend auto opens no GPU for a run too
                            short to gain from one (gpu_frontend_open_async) */
    int pipeline;        /* the caller's: 1 codes the pictures on a thread of their own while
                            the calls run the next frames' front end, returning each picture
                            a few calls later (MpeOutput.recon is then NULL); 0: each call
                            codes its picture before it returns */
    char backend[32];    /* --backend: auto | cpu | (opencl | cuda when built) */
    int device;          /* --device: the backend's device index, -1 = auto */
    int threads;         /* --threads: the run's CPU threads (one pool for slices, the cpu
                            front end, C metrics, PNG decoding), 0 = auto (all online cores) */
    int dsp;             /* --dsp: MpeDspChoice; c is cpu_mask 0 */
    unsigned cpu_mask;   /* --cpu-mask: MPE_CPU_* bits (common/cpu.h) the DSP tables may use,
                            ANDed with the CPU's own; default all */
    int read_threads;    /* --read-threads: PNG frames decoded at once ahead of the encoder,
                            -1 = auto (min(4, cores)), 0 = read on the calling thread */
    unsigned iqa;        /* --iqa: MPE_IQA_* bits (encoder.h) scored on every picture */
    char iqa_backend[16];/* --iqa-backend: auto | cpu | cuda, for metrics with a CUDA twin */
    /* rate control (ratecontrol.h): constant quantiser unless one of these is set */
    double bitrate;      /* --bitrate: bit/s, 0 = none (with a quality target: a cap) */
    double maxrate;      /* --maxrate: bit/s peak (variable rate), 0 = bitrate (constant rate) */
    int vbv_size;        /* --vbv-size: VBV buffer in kbit (1000 bits), 0 = the level's maximum */
    double target_psnr;  /* --target-psnr: dB (PSNR-Y), 0 = none */
    double target_mad;   /* --target-mad: MAD index, 0 = none */
    double target_bliinds; /* --target-bliinds: BLIINDS-II score, 0 = none */
    int max_trials;      /* --max-trials: codings of one picture a quality/bitrate target may try; 0: auto */
    int strict;          /* --strict: 1 = refuse what the format cannot signal conformantly (a frame
                            rate without a frame_rate_code); 0 = allow it, with a warning */
    /* set by the caller from the input, not options: */
    int width, height;
} MpeParam;

#define MPE_PARAM_BAD_NAME (-2)   /* -ENOENT: no such option */
#define MPE_PARAM_BAD_VALUE (-22) /* -EINVAL: option exists, value rejected */

void mpe_param_default(MpeParam *p);

/* The quality target set in p (MPE_IQA_PSNR, _MAD or _BLIINDS) and its
 * value, or 0 when none is. */
unsigned mpe_param_target(const MpeParam *p, double *value);

/* The B pictures between I/P pictures p asks for, auto resolved. */
int mpe_param_bframes(const MpeParam *p);
int mpe_param_b_adapt(const MpeParam *p);

/* --chunk-gops auto: 24 pictures at the default --gop, so a 400-frame clip
 * is 17 chunks, enough to keep 16 ranks busy. */
#define MPE_CHUNK_GOPS_AUTO 2

/* p->chunk_gops resolved: auto is MPE_CHUNK_GOPS_AUTO where chunks cost
 * nothing (constant quantiser, quality targets without a cap) and 0 (one
 * chunk) under a bit rate, where restarting the rate control's models at
 * every chunk costs quality (docs/MPI.md). */
int mpe_param_chunk_gops(const MpeParam *p);

/* Options that contradict each other (two quality targets, --maxrate or
 * --vbv-size without --bitrate, ...): a usage error, found before any input
 * is opened.  mpe_encoder_open checks the same. */
int mpe_param_check(const MpeParam *p, MpeError *err);

/* The flags every DSP table is filled with: this CPU's MPE_CPU_* features
 * ANDed with --cpu-mask, or 0 (C only) for --dsp c. */
unsigned mpe_param_cpu_flags(const MpeParam *p);

/* The switches p asks for with auto resolved, for MPEG-2 (mpeg2 1) or
 * MPEG-1.  qscale_type auto is -1 still: non-linear under rate control, which
 * the encoder knows. */
void mpe_param_mpeg2_switches(const MpeParam *p, int mpeg2, MpeCodingSwitches *sw);

/* The matrices of a --cqm choice, raster order (NULL for mpeg: the defaults
 * the stream need not send). */
void mpe_param_cqm_matrices(const MpeParam *p, int cqm, const uint8_t **intra,
                            const uint8_t **inter);

/* Set option `name` (without leading dashes) from its text value. */
int mpe_param_parse(MpeParam *p, const char *name, const char *value, MpeError *err);

/* Option descriptions for --help: iterate i = 0, 1, ... until NULL. */
typedef struct MpeParamInfo {
    const char *name;
    const char *arg;    /* placeholder, e.g. "N" */
    const char *help;
} MpeParamInfo;
const MpeParamInfo *mpe_param_info(int i);
/* The value of option i in p, as text (for printing defaults). */
void mpe_param_value_string(const MpeParam *p, int i, char *buf, size_t size);

/* Parse a frame rate: "25", "29.97", "30000/1001", "30000:1001". */
int mpe_parse_rate(const char *s, int *num, int *den);

#endif
