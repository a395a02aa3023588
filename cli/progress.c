/* progress.c — the progress line (see progress.h). */
#include "cli/progress.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/timer.h"
#include "iqa/metric.h"

#define IN_PLACE_INTERVAL_MS 250.0   /* 4 refreshes a second on a terminal */
#define LINE_INTERVAL_MS 1000.0      /* one line a second into a file */

static void print_line(MpeProgress *p, int frames, uint64_t bytes, double now_ms)
{
    char line[256], eta[32] = "";
    double secs = (now_ms - p->t0_ms) / 1000.0, speed = secs > 0 ? frames / secs : 0.0;
    double kbits = bytes * 8.0 * p->fps / frames / 1000.0;
    int n = 0;

    if (p->total > 0) {
        double done = frames < p->total ? (double)frames / p->total : 1.0;
        long left = frames < p->total ? p->total - frames : 0;
        long s = speed > 0 ? (long)(left / speed + 0.5) : 0;
        n = snprintf(line, sizeof(line), "[%5.1f%%] %d/%ld frames", 100.0 * done, frames, p->total);
        snprintf(eta, sizeof(eta), ", eta %ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    } else {
        n = snprintf(line, sizeof(line), "%d frames", frames);
    }
    n += snprintf(line + n, sizeof(line) - (size_t)n, ", %.2f fps, %.1f kbit/s, q %.2f", speed, kbits,
                  p->q);
    if (p->target_value >= 0) {
        /* the target's value, named and rounded as the metric registry says */
        const IqaValue *v = iqa_value_get(p->target_value);
        const char *u = iqa_family_metric(iqa_value_family(p->target_value))->vunit;
        n += snprintf(line + n, sizeof(line) - (size_t)n, ", %s %.*f%s%s", v->label,
                      v->summary ? v->summary_digits : 3, p->metric, u && *u ? " " : "", u ? u : "");
    }
    n += snprintf(line + n, sizeof(line) - (size_t)n, "%s", eta);
    if (n >= (int)sizeof(line))
        n = (int)sizeof(line) - 1;
    if (p->in_place) {
        /* blanks cover what a longer line before left on the screen */
        fprintf(p->f, "\r%s%*s", line, p->width > n ? p->width - n : 0, "");
        p->width = n > p->width ? n : p->width;
        p->open = 1;
    } else {
        fprintf(p->f, "%s\n", line);
    }
    fflush(p->f);
    p->last_ms = now_ms;
}

void mpe_progress_start(MpeProgress *p, FILE *f, int requested, int quiet, int verbose, long total,
                        double fps, unsigned target)
{
    int tty = isatty(fileno(f));

    memset(p, 0, sizeof(*p));
    p->f = f;
    p->on = requested > 0 || (requested < 0 && tty && !quiet && !verbose);
    p->in_place = tty && !verbose;
    p->interval_ms = p->in_place ? IN_PLACE_INTERVAL_MS : LINE_INTERVAL_MS;
    p->total = total;
    p->fps = fps;
    p->target = target;
    p->target_value = target ? iqa_family_bit_value(target) : -1;
    p->t0_ms = mpe_time_ms();
    /* the first picture is shown as soon as it is out */
    p->last_ms = p->t0_ms - p->interval_ms;
}

void mpe_progress_picture(MpeProgress *p, const MpeFrameStats *fs)
{
    p->have_picture = 1;
    p->q = fs->qscale_mean;
    p->metric = p->target_value >= 0 ? fs->value[p->target_value] : 0.0;
}

void mpe_progress_update(MpeProgress *p, int frames, uint64_t bytes)
{
    double now;

    if (!p->on || !p->have_picture || frames <= 0)
        return;
    now = mpe_time_ms();
    if (now - p->last_ms >= p->interval_ms)
        print_line(p, frames, bytes, now);
}

void mpe_progress_break(MpeProgress *p)
{
    int e = errno;   /* the caller may be about to report it */

    if (p->open) {
        fputc('\n', p->f);
        p->open = 0;
    }
    errno = e;
}

void mpe_progress_end(MpeProgress *p, int frames, uint64_t bytes)
{
    if (p->on && p->have_picture && frames > 0)
        print_line(p, frames, bytes, mpe_time_ms());
    mpe_progress_break(p);
}
