/* outfile.h — writing a named output without ever destroying what the name
 * points at.
 *
 * A path that names a regular file, or nothing yet, is written under a
 * temporary name beside the file it finally names (symbolic links are
 * followed, so the link stays and its target gets the new content) and
 * renamed into place only when the writer says the output is complete: a
 * failed or killed run leaves the old file as it was and no partial file.
 * A replaced file keeps its permission bits; a new one gets 0666 less the
 * umask, as fopen would give it.
 *
 * Anything else that exists — a character or block device (/dev/null), a
 * FIFO, a socket, a terminal, or a descriptor reached through /dev/stdout,
 * /dev/fd/N or /proc — is opened and written in place, never replaced.
 * "-" is the process's stdout.
 *
 *   MpeOutFile o;
 *   if (mpe_outfile_open(&o, "out.m2v", &err) < 0) ...   // temporary created now
 *   fwrite(..., o.f);
 *   ok = mpe_outfile_finish(&o, &err) == 0;               // flush + close, errors reported
 *   ok ? mpe_outfile_commit(&o, &err) : mpe_outfile_abort(&o);
 */
#ifndef MPE_OUTFILE_H
#define MPE_OUTFILE_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/common.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* What a path names before anything is written to it. */
typedef struct MpeOutTarget {
    int exists;           /* the final target exists */
    int regular;          /* written through a temporary and a rename (exists: a regular file) */
    int is_dir;           /* an existing directory: cannot be an output */
    int is_chardev;       /* an existing character device (/dev/null, a terminal) */
    dev_t dev;            /* identity: the target's when it exists, else its directory's */
    ino_t ino;
    mode_t mode;          /* the existing file's permission bits */
    char final[PATH_MAX]; /* the path the data ends up under (links followed) */
    const char *base;     /* within final: its last component (identity of a new file) */
} MpeOutTarget;

/* Fills t for path; fails only for a path that cannot be resolved (too
 * long, a loop of links, a missing directory is NOT an error here: opening
 * reports it).  "-" is not a path: callers handle stdout themselves. */
int mpe_out_resolve(const char *path, MpeOutTarget *t, MpeError *err);

/* 1 when a and b would write the same file (an existing file's identity, or
 * the same new name in the same directory). */
int mpe_out_same(const MpeOutTarget *a, const MpeOutTarget *b);

typedef struct MpeOutFile {
    FILE *f;
    const char *path;     /* as given, for messages */
    int in_place;         /* stdout, a device, a FIFO...: no temporary */
    int is_stdout;
    mode_t keep_mode;     /* replaced file's permission bits, or (mode_t)-1 */
    char final[PATH_MAX];
    char tmp[PATH_MAX];   /* the temporary's name while it exists, else "" (a
                             signal handler may unlink it: async-signal-safe) */
} MpeOutFile;

/* Opens path for writing ("-": stdout): creates the temporary now, so an
 * unwritable directory is found before any work is done.  Errors name path. */
int mpe_outfile_open(MpeOutFile *o, const char *path, MpeError *err);
/* Flushes and closes the stream (stdout is flushed, not closed); reports a
 * write error (disk full, EPIPE) naming the file.  NULL-safe on a never
 * opened MpeOutFile (o->f == NULL: returns 0). */
int mpe_outfile_finish(MpeOutFile *o, MpeError *err);
/* Renames the finished temporary into place (nothing to do in place). */
int mpe_outfile_commit(MpeOutFile *o, MpeError *err);
/* Closes (if still open) and removes the temporary; the old file stays. */
void mpe_outfile_abort(MpeOutFile *o);

#endif
