/* metric.h — the one registry of image quality metrics (libvmaf's
 * feature_extractor.[ch] is the model).
 *
 * A metric is one const IqaMetric: its name, device, flags, the values it
 * produces (name, unit, which direction is better, how people see them) and
 * open / set_reference / score / close.  CPU and CUDA twins are separate rows
 * of one family ("mad": mad_cpu, mad_cuda) that share one value table, so a
 * caller picks by family and device and a test can run both.  The list lives
 * in metric.c; a new metric is one file defining its IqaMetric plus one row
 * there.
 *
 * Value ids: the families in list order, each family's values in its table
 * order, numbered from 0 (psnr_y_db, psnr_cb_db, psnr_cr_db, ssim_y, mad, ...).
 * Per-frame records keep a fixed array of IQA_MAX_VALUES doubles indexed by
 * them and a mask of measured families (bit f = family f). */
#ifndef MPE_IQA_METRIC_H
#define MPE_IQA_METRIC_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/threads.h"

#define IQA_MAX_VALUES 16     /* sum of every family's values (metric.c checks it) */
#define IQA_MAX_FAMILIES 16   /* families fit a mask of unsigned bits */

enum IqaFlags {
    IQA_FULL_REFERENCE = 1 << 0,  /* set_reference() with the source, then score() */
    IQA_NO_REFERENCE = 1 << 1,    /* score() alone; set_reference is NULL */
    IQA_CUDA = 1 << 2,            /* runs on a CUDA device (IqaConfig.device) */
    IQA_DISPLAY_RANGE = 1 << 3,   /* models display values: the caller expands studio-range
                                     luma to 0..255 before giving it planes */
    IQA_FROM_SSE = 1 << 4,        /* the encoder measures it inline from the slices' SSE on
                                     every picture; checkers never open it */
};

enum IqaDirection {
    IQA_LOWER_IS_BETTER = -1,
    IQA_HIGHER_IS_BETTER = 1,
};

/* One number a metric produces.  Presentation fields may be NULL / 0. */
typedef struct IqaValue {
    const char *name;      /* log column / JSON key, carries the unit: "psnr_y_db", "mad" */
    const char *unit;      /* what the number is, for log headers: "dB", "MAD d_detect" */
    int direction;         /* IqaDirection */
    const char *label;     /* report rows, quality-target text: "PSNR-Y", "MAD d_detect" */
    const char *legend;    /* report chart legend: "Y", "d_detect" */
    const char *summary;   /* run-summary label ("PSNR Y"), NULL: not summarised */
    int summary_digits;
    const char *verbose;   /* printf format on the per-frame console line ("  MAD %.3f"),
                              NULL: not shown there */
    const char *color;     /* report line colour, NULL: the main one */
    double width;          /* report line width */
} IqaValue;

/* What a metric is opened for. */
typedef struct IqaConfig {
    int width, height;     /* of plane 0 */
    int threads;           /* worker threads for C implementations, 0 = all online cores */
    MpePool *pool;         /* non-NULL: C implementations run on it (threads unused) */
    int device;            /* CUDA device index, -1 = the default (0) */
    const char *dump_dir;  /* non-NULL: implementations that can dump their maps do */
} IqaConfig;

/* The pictures a metric sees: plane 0 is luma; chroma planes are there only
 * for metrics that use them (PSNR). */
typedef struct IqaPicture {
    const uint8_t *plane[3];
    ptrdiff_t stride[3];
    int width[3], height[3];
    int nplanes;
} IqaPicture;

typedef struct IqaMetric {
    const char *name;      /* row name: "mad_cuda", "ssim" */
    const char *family;    /* the --iqa name twins share: "mad" */
    const char *device;    /* "cpu" or "cuda" */
    unsigned flags;        /* IqaFlags */
    const char *label;     /* short name people read: "MAD", "BLIINDS-II" */
    int min_size;          /* smallest width and height it takes */
    const char *title;     /* report chart title */
    const char *axis;      /* report chart y-axis label */
    const char *vunit;     /* unit after values in the report, "" if none */
    const char *fmt;       /* printf format of one value in the report */
    double top;            /* largest value it can take (SSIM: 1), 0: unbounded */
    int nvalues;
    const IqaValue *values;  /* twins point at the same table */
    const void *impl;      /* the implementation behind the row (MadImpl, BliindsImpl) for
                              tools that need more than the values; NULL if none */
    /* 0 if it can run here, else negative errno and why[] */
    int (*probe)(char *why, size_t why_size);
    int (*open)(void **ctx, const IqaConfig *cfg, MpeError *err);
    void (*close)(void *ctx);
    /* full-reference metrics: keep what depends on the source alone */
    int (*set_reference)(void *ctx, const IqaPicture *ref, MpeError *err);
    /* writes nvalues doubles, in the order of values[] */
    int (*score)(void *ctx, const IqaPicture *pic, double *values, MpeError *err);
    /* score() in two halves, so that a caller can code picture n + 1 while
     * picture n is scored (NULL in rows without them: use score()).
     * submit() returns once pic may be reused: CUDA rows queue the work on
     * the device, the others compute the score there and then; collect()
     * waits for it and writes the values.  One submitted score at a time
     * per context (-EBUSY); set_reference() may come between submit() and
     * collect() (the pending score keeps the old reference). */
    int (*submit)(void *ctx, const IqaPicture *pic, MpeError *err);
    int (*collect)(void *ctx, double *values, MpeError *err);
} IqaMetric;

/* For rows' submit/collect: the one-score-in-flight bookkeeping, and for
 * implementations without halves (queue / wait NULL) the score that
 * submit() computed, held for collect(). */
typedef struct IqaHalves {
    int pending;
    double held[IQA_MAX_VALUES];
} IqaHalves;

int iqa_halves_submit(IqaHalves *h, const char *name,
                      int (*queue)(void *ctx, const IqaPicture *pic, MpeError *err),
                      int (*score)(void *ctx, const IqaPicture *pic, double *values, MpeError *err),
                      void *ctx, const IqaPicture *pic, MpeError *err);
int iqa_halves_collect(IqaHalves *h, const char *name,
                       int (*wait)(void *ctx, double *values, MpeError *err), int nvalues,
                       void *ctx, double *values, MpeError *err);

/* Rows, in list order (twins: CUDA first, so "auto" tries the GPU first). */
int iqa_metric_count(void);
const IqaMetric *iqa_metric_get(int i);
/* A row by its exact name ("mad_cpu"), or NULL. */
const IqaMetric *iqa_metric_find(const char *name);

/* Families: the distinct `family` names in list order. */
int iqa_family_count(void);
const char *iqa_family_name(int f);
/* Index of a family by name, -1 if none. */
int iqa_family_find(const char *name);
/* Whether the build has a row of family `family` that answers to backend
 * ("auto", a device such as "cuda", or a row's name), usable here or not. */
int iqa_family_has_backend(const char *family, const char *backend);
/* The family's first row (where its presentation and values are read). */
const IqaMetric *iqa_family_metric(int f);
/* Id of the family's first value. */
int iqa_family_value_base(int f);

/* Id of the first value of the family whose mask bit (1 << f) is given;
 * -1 unless exactly one valid family bit is set. */
int iqa_family_bit_value(unsigned bit);

/* Values over all families. */
int iqa_value_count(void);
const IqaValue *iqa_value_get(int id);
int iqa_value_family(int id);
/* Id of a value by name ("mad_detect"), -1 if none. */
int iqa_value_find(const char *name);

/* An opened metric. */
typedef struct IqaInstance {
    const IqaMetric *metric;
    void *ctx;
    int family, value_base;
} IqaInstance;

/* Opens family `family` ("mad") on `backend`: "auto" (probe the CUDA row,
 * open it, and on any failure log why at warning level and take the next
 * twin), "cpu" or "cuda" (that row or an error naming it), or a row name
 * ("mad_cuda").  Checks the config (sizes, threads, device index). */
int iqa_metric_open(IqaInstance *inst, const char *family, const char *backend,
                    const IqaConfig *cfg, const MpeLog *log, MpeError *err);
void iqa_metric_close(IqaInstance *inst);

/* The row iqa_metric_open would try first (the probe alone), for tools that
 * drive the implementation behind it (IqaMetric.impl) themselves. */
const IqaMetric *iqa_metric_pick(const char *family, const char *backend, const MpeLog *log,
                                 MpeError *err);

/* Picture of one 8-bit plane (w x h, rows stride apart). */
void iqa_picture_gray(IqaPicture *pic, const uint8_t *plane, ptrdiff_t stride, int w, int h);

/* Page-locks `bytes` of host memory at p (left as they are) so that the CUDA
 * metrics upload pictures there by DMA straight from it instead of copying
 * them into their staging memory first.  For buffers a caller scores from
 * again and again; undo with iqa_host_unregister before freeing.  1: done;
 * 0: not (no CUDA build or device, the driver refused): everything works
 * as before, through the staging copy. */
int iqa_host_register(void *p, size_t bytes);
void iqa_host_unregister(void *p);

#endif
