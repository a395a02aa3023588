/* mad_filters.c — the frequency-domain filters, lightness table and score
 * combination of MAD, written from ../shared/reference/mad/SPEC.md.  Every
 * constant below is the SPEC's; the arithmetic follows the order the SPEC
 * describes so that results track the original to the last few ulps. */
#include "iqa/mad_internal.h"
#include "iqa/mad_math.h"

#include <math.h>

#define MAD_PI 3.14159265358979323846

/* w_s = [0.5 0.75 1 5 6] / 13.25 (SPEC §4.3) */
const double mad_scale_weight[MAD_NSCALE] = {
    0.5 / 13.25, 0.75 / 13.25, 1.0 / 13.25, 5.0 / 13.25, 6.0 / 13.25,
};

void mad_lightness_lut(double lut[256])
{
    const double k = 0.02874, gamma = 2.2;
    for (int v = 0; v < 256; v++)
        lut[v] = k * pow((double)(v < 254 ? v : 254), gamma / 3.0);
}

double mad_csf_centred(int r, int c, int w, int h)
{
    return mad_csf_at(r, c, w, h);
}

void mad_csf_half(double *hs, int w, int h, double scale)
{
    int hc = w / 2 + 1;
    /* bin (k,l) reads centred index ((k + floor(M/2)) mod M, (l + floor(N/2)) mod N) */
    for (int k = 0; k < h; k++) {
        int r1 = (k + h / 2) % h;
        int r2 = ((h - k) % h + h / 2) % h;
        for (int l = 0; l < hc; l++) {
            int c1 = (l + w / 2) % w;
            int c2 = ((w - l) % w + w / 2) % w;
            double a = mad_csf_centred(r1, c1, w, h);
            double b = mad_csf_centred(r2, c2, w, h);
            hs[(size_t)k * hc + l] = 0.5 * (a + b) * scale;
        }
    }
}

/* Grid coordinates of SPEC §4.1 for DFT bin (k, l): the filter is built in
 * centred layout and moved with a forward fftshift, so bin k holds grid
 * index (k - floor(M/2)) mod M. */
static void lg_grid(double *x, double *y, int *is_fudge, int k, int l, int w, int h)
{
    int gr = (k - h / 2 + h) % h;
    int gc = (l - w / 2 + w) % w;
    *x = ((double)gc - w / 2.0) / (w / 2.0);
    *y = ((double)gr - h / 2.0) / (h / 2.0);
    /* the radius fudge at (round(M/2+1)-1, round(N/2+1)-1), 0-based: M/2 for
     * even M, (M+1)/2 for odd M; it always lands on the DC bin */
    *is_fudge = gr == (h % 2 ? (h + 1) / 2 : h / 2) && gc == (w % 2 ? (w + 1) / 2 : w / 2);
}

void mad_loggabor_radial(double *g, int s, int w, int h)
{
    const double min_wavelength = 3.0, mult = 3.0, sigma_on_f = 0.55;
    double wavelength = min_wavelength * pow(mult, s);
    double fo = 1.0 / wavelength;
    double lrfo = log(fo / 0.5); /* radius 1 = Nyquist */
    double denom = -2.0 * log(sigma_on_f) * log(sigma_on_f);

    for (int k = 0; k < h; k++) {
        for (int l = 0; l < w; l++) {
            double x, y;
            int fudge;
            lg_grid(&x, &y, &fudge, k, l, w, h);
            double lr = fudge ? 0.0 : log(sqrt(x * x + y * y));
            double d = lr - lrfo;
            g[(size_t)k * w + l] = fudge ? 0.0 : exp(d * d / denom);
        }
    }
}

void mad_loggabor_angular(double *a, int o, int w, int h)
{
    const double d_theta_on_sigma = 1.5;
    double theta_sigma = MAD_PI / MAD_NORIENT / d_theta_on_sigma;
    double angl = o * MAD_PI / MAD_NORIENT;
    double ca = cos(angl), sa = sin(angl);
    double den = 2.0 * theta_sigma * theta_sigma;

    for (int k = 0; k < h; k++) {
        for (int l = 0; l < w; l++) {
            double x, y;
            int fudge;
            lg_grid(&x, &y, &fudge, k, l, w, h);
            double theta = atan2(-y, x);
            double st = sin(theta), ct = cos(theta);
            double ds = st * ca - ct * sa;
            double dc = ct * ca + st * sa;
            double dtheta = fabs(atan2(ds, dc));
            a[(size_t)k * w + l] = exp(-dtheta * dtheta / den);
        }
    }
}

void mad_combine(MadScore *out, double d_detect, double d_appear)
{
    const double thresh1 = 2.55, thresh2 = 3.35;
    double beta1 = exp(-thresh1 / thresh2);
    double beta2 = 1.0 / (log(10.0) * thresh2);
    /* d_detect = 0 gives alpha = 1 and MAD = d_appear^0 * 0 = 0 (pow(x,0) = 1) */
    double alpha = 1.0 / (1.0 + beta1 * pow(d_detect, beta2));
    out->d_detect = d_detect;
    out->d_appear = d_appear;
    out->mad = pow(d_appear, 1.0 - alpha) * pow(d_detect, alpha);
}
