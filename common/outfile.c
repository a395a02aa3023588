/* outfile.c — see outfile.h. */
#include "common/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Longest chain of symbolic links followed, as the kernel's own limit. */
#define MAX_LINK_HOPS 40

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Follows the links of path's last component to the name a rename must
 * replace.  *via_proc: a hop went through /proc or /dev/fd (a descriptor of
 * some process, such as /dev/stdout): such a name is no place for a
 * temporary and a rename. */
static int follow_links(const char *path, char *out, int *via_proc, MpeError *err)
{
    char link[PATH_MAX], next[PATH_MAX];
    struct stat st;

    snprintf(out, PATH_MAX, "%s", path);
    *via_proc = starts_with(out, "/proc/") || starts_with(out, "/dev/fd/");
    for (int hops = 0;; hops++) {
        if (lstat(out, &st) != 0 || !S_ISLNK(st.st_mode))
            return 0;
        if (hops == MAX_LINK_HOPS)
            return mpe_error(err, -ELOOP, "%s: too many levels of symbolic links", path);
        ssize_t n = readlink(out, link, sizeof(link) - 1);
        if (n < 0)
            return 0;
        link[n] = '\0';
        if (link[0] == '/') {
            snprintf(next, sizeof(next), "%s", link);
        } else {
            /* relative to the directory holding the link */
            const char *slash = strrchr(out, '/');
            int dir_len = slash ? (int)(slash - out + 1) : 0;
            if ((size_t)dir_len + (size_t)n >= sizeof(next))
                return mpe_error(err, -ENAMETOOLONG, "%s: path too long", path);
            memcpy(next, out, (size_t)dir_len);
            memcpy(next + dir_len, link, (size_t)n + 1);
        }
        memcpy(out, next, sizeof(next));
        if (starts_with(out, "/proc/") || starts_with(out, "/dev/fd/"))
            *via_proc = 1;
    }
}

int mpe_out_resolve(const char *path, MpeOutTarget *t, MpeError *err)
{
    struct stat st;
    int via_proc, ret;

    memset(t, 0, sizeof(*t));
    if (!path || !*path)
        return mpe_error(err, -EINVAL, "(no output): empty output name");
    if (strlen(path) >= PATH_MAX)
        return mpe_error(err, -ENAMETOOLONG, "%s: path too long", path);
    if ((ret = follow_links(path, t->final, &via_proc, err)) < 0)
        return ret;
    t->regular = 1;
    if (stat(path, &st) == 0) {
        t->exists = 1;
        t->dev = st.st_dev;
        t->ino = st.st_ino;
        t->mode = st.st_mode & 07777;
        t->is_dir = S_ISDIR(st.st_mode);
        t->is_chardev = S_ISCHR(st.st_mode);
        t->regular = S_ISREG(st.st_mode) && !via_proc;
    } else {
        /* a new file: known by its directory and its name */
        char dir[PATH_MAX];
        const char *slash = strrchr(t->final, '/');
        if (slash)
            snprintf(dir, sizeof(dir), "%.*s", slash == t->final ? 1 : (int)(slash - t->final),
                     t->final);
        else
            snprintf(dir, sizeof(dir), ".");
        if (stat(dir, &st) == 0) {
            t->dev = st.st_dev;
            t->ino = st.st_ino;
        }
        t->regular = !via_proc;
    }
    const char *slash = strrchr(t->final, '/');
    t->base = slash ? slash + 1 : t->final;
    return 0;
}

int mpe_out_same(const MpeOutTarget *a, const MpeOutTarget *b)
{
    if (a->exists != b->exists)
        return 0;
    if (a->exists)
        return a->dev == b->dev && a->ino == b->ino;
    if (a->dev || a->ino || b->dev || b->ino)
        return a->dev == b->dev && a->ino == b->ino && !strcmp(a->base, b->base);
    return !strcmp(a->final, b->final);
}

/* A fresh temporary beside final, created exclusively (never an existing
 * file, whoever made it), with 0666 less the umask like fopen. */
static int create_temp(MpeOutFile *o, const char *final)
{
    static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    char name[PATH_MAX];
    struct timespec ts;
    uint64_t x;

    if (strlen(final) + sizeof(".tmp-XXXXXX") > sizeof(name)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    x = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^
        (uint64_t)(uintptr_t)o;
    for (int attempt = 0; attempt < 100; attempt++) {
        char suffix[7];
        for (int i = 0; i < 6; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            suffix[i] = chars[x % (sizeof(chars) - 1)];
        }
        suffix[6] = '\0';
        snprintf(name, sizeof(name), "%s.tmp-%s", final, suffix);
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            memcpy(o->tmp, name, sizeof(name));
            return fd;
        }
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

int mpe_outfile_open(MpeOutFile *o, const char *path, MpeError *err)
{
    MpeOutTarget t;
    int fd, ret;

    memset(o, 0, sizeof(*o));
    o->path = path;
    o->keep_mode = (mode_t)-1;
    if (!strcmp(path, "-")) {
        o->path = "<stdout>";
        o->f = stdout;
        o->in_place = o->is_stdout = 1;
        return 0;
    }
    if ((ret = mpe_out_resolve(path, &t, err)) < 0)
        return ret;
    if (t.is_dir)
        return mpe_error(err, -EISDIR, "%s: is a directory", path);
    snprintf(o->final, sizeof(o->final), "%s", t.final);
    if (!t.regular) {
        /* a device, FIFO or descriptor: written where it is */
        o->in_place = 1;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOCTTY | O_CLOEXEC, 0666);
    } else {
        fd = create_temp(o, t.final);
        if (fd >= 0 && t.exists) {
            o->keep_mode = t.mode;
            if (fchmod(fd, t.mode) != 0) {
                ret = -errno;
                close(fd);
                mpe_outfile_abort(o);
                return mpe_error(err, ret, "%s: cannot create: %s", path, strerror(-ret));
            }
        }
    }
    if (fd < 0)
        return mpe_error(err, -errno, "%s: cannot create: %s", path, strerror(errno));
    if (!(o->f = fdopen(fd, "wb"))) {
        ret = -errno;
        close(fd);
        mpe_outfile_abort(o);
        return mpe_error(err, ret, "%s: cannot create: %s", path, strerror(-ret));
    }
    return 0;
}

int mpe_outfile_finish(MpeOutFile *o, MpeError *err)
{
    int e = 0;
    if (!o->f)
        return 0;
    errno = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        e = errno ? errno : EIO;
    if (!o->is_stdout) {
        errno = 0;
        if (fclose(o->f) != 0 && !e)
            e = errno ? errno : EIO;
    }
    o->f = NULL;
    if (e)
        return mpe_error(err, -e, "%s: write error: %s", o->path, strerror(e));
    return 0;
}

int mpe_outfile_commit(MpeOutFile *o, MpeError *err)
{
    if (!o->tmp[0])
        return 0;
    if (rename(o->tmp, o->final) != 0) {
        int e = errno;
        mpe_outfile_abort(o);
        return mpe_error(err, -e, "%s: cannot rename into place: %s", o->path, strerror(e));
    }
    o->tmp[0] = '\0';
    return 0;
}

void mpe_outfile_abort(MpeOutFile *o)
{
    if (o->f && !o->is_stdout)
        fclose(o->f);
    else if (o->f)
        fflush(o->f);
    o->f = NULL;
    if (o->tmp[0]) {
        unlink(o->tmp);
        o->tmp[0] = '\0';
    }
}
