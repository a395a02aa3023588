/* input.h — frame sequence readers: PNG through libpng and YUV4MPEG2.
 *
 * The input spec names the source:
 *   "-"                 YUV4MPEG2 on stdin
 *   "clip.y4m"          YUV4MPEG2 file (extension .y4m, any case)
 *   "frames/s_%d.png"   printf pattern (one integer conversion, e.g. %d,
 *                       %04d); frames start_number, start_number+1, ... until
 *                       the first missing file
 *   "frames/"           a directory: every *.png (any case) in strcmp order
 *   "one.png"           a single PNG frame
 * PNG: 8- or 16-bit, gray, gray+alpha, RGB, RGBA, palette; alpha ignored;
 * 16-bit rounded to 8 (v*255+32767)/65535; gray replicated to R=G=B;
 * output MPE_FRAME_RGB24.  Y4M: 4:2:0 8-bit only (C420jpeg, C420mpeg2,
 * C420paldv, C420 or no C tag), progressive or unknown interlacing;
 * output MPE_FRAME_YUV420.  Every error message starts with the file name
 * ("<stdin>" for "-"). */
#ifndef MPE_INPUT_H
#define MPE_INPUT_H

#include <errno.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/common.h"
#include "common/picture.h"
#include "common/threads.h"

typedef struct MpeInput MpeInput;

typedef struct MpeInputInfo {
    MpeFrameFormat format;
    int width, height;
    int fps_num, fps_den;  /* from the Y4M header; 0/0 when the input has none */
} MpeInputInfo;

/* Opens the source and reads enough to know the frame size (the first PNG's
 * header, or the Y4M stream header).  Sizes outside 16..4095 are an error. */
int mpe_input_open(MpeInput **in, const char *spec, int start_number, MpeError *err);

/* A YUV4MPEG2 stream already open (a pipe, fmemopen'ed bytes: the fuzz
 * target uses this); `name` is used in messages.  The caller keeps f and
 * closes it after mpe_input_close. */
int mpe_input_open_y4m_stream(MpeInput **in, FILE *f, const char *name, MpeError *err);

const MpeInputInfo *mpe_input_info(const MpeInput *in);

/* The MPE_CPU_* flags (common/cpu.h: mpe_cpu_flags() & mask) the PNG
 * unfilters may use; mpe_input_open sets mpe_cpu_flags().  Call before the
 * first mpe_input_read or mpe_input_start_ahead. */
void mpe_input_set_cpu_flags(MpeInput *in, unsigned cpu_flags);

/* Skips the next n frames without decoding them, before the first read:
 * a printf pattern starts n numbers later (each must exist: the sequence
 * ends at the first missing one), a directory drops its first n files, a
 * Y4M file seeks over the planes (reading each FRAME line, which may carry
 * parameters), a pipe reads and drops them.  Returns 1 when a frame
 * follows (for PNG input the info may change: it is the new first frame's),
 * 0 when none does (close the input then), a negative errno with err set.
 * *have: the frames skipped, which on 0 is all the input has (<= n). */
int mpe_input_skip(MpeInput *in, long n, long *have, MpeError *err);

/* Frames left to read, counted without reading them (a pattern's files are
 * looked up with stat), for a progress display: a Y4M file's from its size
 * (an estimate when FRAME lines carry parameters), -1 when unknown (a pipe).
 * Call before mpe_input_start_ahead. */
long mpe_input_frames_left(const MpeInput *in);

/* mpe_input_read's answer when a Y4M stream goes on, after one or more
 * complete frames, with bytes that are not a frame: a few stray bytes, a
 * cut last frame, a broken FRAME marker.  The frames read are intact and
 * may be kept; err names the file, the bytes left over (how many, when the
 * end is known: a regular file, or a pipe already closed) and what is wrong
 * with them.  The next read returns 0.  Negative like every error, so a
 * caller that does not know it stops as on any other. */
#define MPE_INPUT_DAMAGED_END (-EBADMSG)

/* Reads the next frame into `frame`, which the caller allocated with
 * mpe_frame_alloc(info->format, info->width, info->height).
 * Returns 1 when a frame was read, 0 at the end of the sequence,
 * MPE_INPUT_DAMAGED_END (above), or another negative errno with err set
 * (corrupt PNG, a frame whose size differs from the first, a Y4M stream
 * whose first frame is cut or malformed, a read error, ...). */
int mpe_input_read(MpeInput *in, MpeFrame *frame, MpeError *err);

/* Read ahead on other threads from now on: `threads` PNG frames are
 * decoded at once, up to 2 * threads ahead of the caller (a Y4M source gets
 * one reader thread and 3 frames whatever `threads` says); 0 keeps reading
 * on the caller's thread.  Frames, errors and names come out exactly as
 * without it: an error in a frame is returned when that frame's turn comes,
 * naming its file.  Call at most once, before the first mpe_input_read;
 * frames the caller reads into should come from mpe_frame_alloc (then they
 * are swapped with the reader's buffers instead of copied). */
int mpe_input_start_ahead(MpeInput *in, int threads, MpeError *err);
/* The `threads` for mpe_input_start_ahead_pool when the user gave none:
 * a Y4M source 1 (one reader, no decoding); PNG frames as many as the pool
 * has threads (pool_threads), since decoding (tens of ms of CPU per 2048²
 * frame) is the heaviest stage and shares the pool with everything else,
 * whose scheduler balances them; at most as many as keep the 2 * threads
 * frames read ahead within 1 GiB, and 64. */
int mpe_input_auto_threads(const MpeInput *in, int pool_threads);
/* The same with the decoding on the caller's pool (common/threads.h), at
 * most `threads` frames at once, beside the caller's other work on it; one
 * reader thread of the input's own hands out the frames (and reads Y4M).
 * NULL: a pool of the input's own of `threads` threads.  The pool must
 * outlive the input. */
int mpe_input_start_ahead_pool(MpeInput *in, int threads, MpePool *pool, MpeError *err);

/* Milliseconds spent reading/decoding the frame mpe_input_read returned
 * last, on whichever thread did it. */
double mpe_input_decode_ms(const MpeInput *in);

/* Name of the file the last frame came from (for messages). */
const char *mpe_input_current_name(const MpeInput *in);

/* 1 when the input reads the file dev/ino (the Y4M file or stdin, a PNG of
 * the directory, or a frame of the pattern from the start number until the
 * first missing one; frames mpe_input_skip passed over included), with
 * its name in name; else 0.  The CLI refuses an
 * output that would replace one of its inputs. */
int mpe_input_find_file(const MpeInput *in, dev_t dev, ino_t ino, char *name, size_t size);

void mpe_input_close(MpeInput *in);

#endif
