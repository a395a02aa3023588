/* frontend.cl — OpenCL C 1.2 kernels of the "opencl" front end.
 * The arithmetic is defined in frontend.h and must equal frontend_cpu.c bit
 * for bit; every operation here is on 32-bit integers. */

#define Y_R 16829
#define Y_G 33039
#define Y_B 6416
#define CB_R (-9714)
#define CB_G (-19070)
#define CB_B 28784
#define CR_R 28784
#define CR_G (-24103)
#define CR_B (-4681)

/* A work-group of CONV_T x CONV_T items makes CONV_T^2 chroma samples and
 * the 2x2 luma samples under each; its RGB tile plus a one-pixel halo
 * (chroma taps reach one source pixel beyond the tile on each side) is read
 * from global memory once into local memory. */
#define CONV_T 16
#define TILE (2 * CONV_T + 2)

__kernel __attribute__((reqd_work_group_size(CONV_T, CONV_T, 1)))
void convert_rgb(__global const uchar *rgb, int rgb_stride, int width, int height,
                 __global uchar *py, __global uchar *pcb, __global uchar *pcr,
                 int luma_w, int luma_h)
{
    __local uchar tile[TILE * TILE * 3];
    __local int cb[TILE * TILE], cr[TILE * TILE];
    __local int hcb[TILE * CONV_T], hcr[TILE * CONV_T];

    const int lx = get_local_id(0), ly = get_local_id(1);
    const int lid = ly * CONV_T + lx;
    const int cx0 = get_group_id(0) * CONV_T, cy0 = get_group_id(1) * CONV_T;
    const int sx0 = 2 * cx0 - 1, sy0 = 2 * cy0 - 1;   /* source position of tile[0][0] */
    const int chroma_w = luma_w / 2, chroma_h = luma_h / 2;

    /* 1. RGB tile with halo, clamped coordinates = edge replication */
    for (int i = lid; i < TILE * TILE; i += CONV_T * CONV_T) {
        int tx = i % TILE, ty = i / TILE;
        int sx = clamp(sx0 + tx, 0, width - 1), sy = clamp(sy0 + ty, 0, height - 1);
        __global const uchar *p = rgb + sy * rgb_stride + 3 * sx;
        tile[3 * i] = p[0];
        tile[3 * i + 1] = p[1];
        tile[3 * i + 2] = p[2];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* 2. full-precision chroma of every tile pixel; luma of the 2x2 owned */
    for (int i = lid; i < TILE * TILE; i += CONV_T * CONV_T) {
        int r = tile[3 * i], g = tile[3 * i + 1], b = tile[3 * i + 2];
        cb[i] = CB_R * r + CB_G * g + CB_B * b;
        cr[i] = CR_R * r + CR_G * g + CR_B * b;
    }
    for (int j = 0; j < 2; j++) {
        int y = 2 * (cy0 + ly) + j;
        for (int k = 0; k < 2; k++) {
            int x = 2 * (cx0 + lx) + k;
            if (x < luma_w && y < luma_h) {
                int i = (2 * ly + j + 1) * TILE + 2 * lx + k + 1;
                int r = tile[3 * i], g = tile[3 * i + 1], b = tile[3 * i + 2];
                py[y * luma_w + x] = (uchar)((Y_R * r + Y_G * g + Y_B * b + (16 << 16) + 32768) >> 16);
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* 3. horizontal [1 3 3 1] for every tile row, per chroma column */
    for (int i = lid; i < TILE * CONV_T; i += CONV_T * CONV_T) {
        int row = i / CONV_T, col = i % CONV_T;
        const int base = row * TILE + 2 * col;
        hcb[i] = cb[base] + 3 * cb[base + 1] + 3 * cb[base + 2] + cb[base + 3];
        hcr[i] = cr[base] + 3 * cr[base + 1] + 3 * cr[base + 2] + cr[base + 3];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* 4. vertical [1 3 3 1], one rounding, clamp */
    const int cx = cx0 + lx, cy = cy0 + ly;
    if (cx < chroma_w && cy < chroma_h) {
        const int base = 2 * ly * CONV_T + lx;
        int scb = hcb[base] + 3 * hcb[base + CONV_T] + 3 * hcb[base + 2 * CONV_T] + hcb[base + 3 * CONV_T];
        int scr = hcr[base] + 3 * hcr[base + CONV_T] + 3 * hcr[base + 2 * CONV_T] + hcr[base + 3 * CONV_T];
        pcb[cy * chroma_w + cx] = (uchar)clamp((scb + (128 << 22) + (1 << 21)) >> 22, 16, 240);
        pcr[cy * chroma_w + cx] = (uchar)clamp((scr + (128 << 22) + (1 << 21)) >> 22, 16, 240);
    }
}

/* ---- the windowed exhaustive search: --me full, and stage 5 of the
 * hierarchical search.  The techniques of frontend_cuda.cu's search_kernel:
 *  - the current macroblock in 64 private words of every item;
 *  - an item owns one dx and NY consecutive dy, so each reference row it
 *    loads (5 aligned words, 4 funnel shifts) serves up to NY candidates;
 *  - a work-group searches MBS macroblocks: with one centre for all (the
 *    full search) a strip of adjacent macroblocks over their common window,
 *    else (per-macroblock centres) one window each, staged in local memory;
 *  - consecutive items take consecutive dx: their window reads are
 *    neighbouring words.
 * Items are dealt out per macroblock (tpm items each, each taking
 * candidates i, i + tpm, ...), so every item's candidates belong to one
 * macroblock and one private minimum of cand_key (the tie-break rule)
 * serves; the work-group reduces those per macroblock in local memory.
 * Bounds are tested one operand pair at a time (see the hierarchical
 * search below: ptxas fuses max(max(a, -k), b) wrongly). */

inline uint sad4_acc(uint a, uint b, uint acc)
{
#if defined(cl_nv_pragma_unroll)
    /* NVIDIA's compiler: one instruction, as in frontend_cuda_hier.h */
    uint d;
    asm("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(acc));
    return d;
#else
    uchar4 d = abs_diff(as_uchar4(a), as_uchar4(b));
    return acc + d.x + d.y + d.z + d.w;
#endif
}

/* the 4 bytes at bit offset shift (0, 8, 16, 24) of the pair lo, hi */
inline uint funnel(uint lo, uint hi, int shift)
{
    return (uint)(upsample(hi, lo) >> shift);
}

inline ulong cand_key(uint sad, int dx, int dy)
{
    return ((ulong)sad << 40) | ((ulong)(abs(dx) + abs(dy)) << 24) |
           ((ulong)(dy + 2048) << 12) | (ulong)(dx + 2048);
}

inline int key_dx(ulong k) { return (int)(k & 0xFFF) - 2048; }
inline int key_dy(ulong k) { return (int)((k >> 12) & 0xFFF) - 2048; }

#define WS_MAX_MBS 8
#define WS_PARTS 16   /* partial minima per macroblock in the reduction */

/* centres: 2 words per macroblock (vector dx | dy << 16, zero vector's
 * SAD) when has_centres, else every centre is (0, 0), the strip shares one
 * window and the zero vector's SAD is taken from the window.  reach bounds
 * |dx|, |dy| (the box); the window is centre +-range; win: win_rows x pitch
 * bytes per window (one, or one per macroblock); keys: 8 bytes per item. */
inline void window_search(const int NY, __global const uchar *cur, __global const uchar *ref,
                          int plane_w, int plane_h, int mb_w, int range, int reach, int mbs,
                          int tpm, int chunks, int pitch, __global const uint *centres,
                          int has_centres, __global uint *out, __local uint *win,
                          __local ulong *keys, __local uint *blk, __local int *ctr,
                          __local uint *sad0, __local ulong *part)
{

    const int lid = get_local_id(0), nthreads = get_local_size(0);
    const int side = 2 * range + 1, win_rows = chunks * NY + 15;
    const int mb_x0 = get_group_id(0) * mbs, mb_y = get_group_id(1);
    const int count = min(mbs, mb_w - mb_x0);
    const int x0 = 16 * mb_x0, y0 = 16 * mb_y;
    const int nwin = has_centres ? count : 1, win_size = win_rows * pitch;

    for (int i = lid; i < count * 64; i += nthreads) {
        const int m = i >> 6, w = i & 63;
        /* planes and rows are 16-aligned */
        blk[i] = *(__global const uint *)(cur + (y0 + (w >> 2)) * plane_w + x0 + 16 * m + 4 * (w & 3));
    }
    if (lid < count) {
        uint v = has_centres ? centres[2 * (mb_y * mb_w + mb_x0 + lid)] : 0;
        ctr[2 * lid] = (short)(v & 0xFFFF);
        ctr[2 * lid + 1] = (short)(v >> 16);
        sad0[lid] = has_centres ? centres[2 * (mb_y * mb_w + mb_x0 + lid) + 1] : 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* window samples outside the plane belong to candidates rejected below,
     * so any in-plane value does */
    if (!has_centres && (range & 3) == 0) {
        /* the strip's window starts word-aligned and every word lies wholly
         * inside or wholly outside the plane (its width is a multiple of
         * 16): whole words clamped, 4x fewer loads */
        const int wpitch = pitch >> 2, plane_w4 = plane_w >> 2, wx0 = (x0 - range) >> 2;
        __global const uint *src = (__global const uint *)ref;
        for (int i = lid; i < win_rows * wpitch; i += nthreads) {
            const int wy = i / wpitch, wx = i - wy * wpitch;
            const int sx = clamp(wx0 + wx, 0, plane_w4 - 1);
            const int sy = clamp(y0 - range + wy, 0, plane_h - 1);
            win[i] = src[sy * plane_w4 + sx];
        }
    } else {
        __local uchar *wb = (__local uchar *)win;
        for (int i = lid; i < nwin * win_size; i += nthreads) {
            const int n = i / win_size, o = i - n * win_size, wy = o / pitch, wx = o - wy * pitch;
            const int sx = clamp(x0 + 16 * n + ctr[2 * n] - range + wx, 0, plane_w - 1);
            const int sy = clamp(y0 + ctr[2 * n + 1] - range + wy, 0, plane_h - 1);
            wb[i] = ref[sy * plane_w + sx];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    const int m = lid / tpm, sub = lid - m * tpm;
    ulong mine = ~(ulong)0;
    if (m < count) {
        uint c[64];
#ifndef MPE_OCL_ONE_VARIANT   /* unrolled on GPUs: c and acc in registers */
#pragma unroll
#endif
        for (int i = 0; i < 64; i++)
            c[i] = blk[64 * m + i];
        const int cx = ctr[2 * m], cy = ctr[2 * m + 1], mx = x0 + 16 * m;
        /* the box, each bound from two operands */
        const int box_lo_x = max(-mx, -reach), box_hi_x = min(plane_w - 16 - mx, reach);
        const int box_lo_y = max(-y0, -reach), box_hi_y = min(plane_h - 16 - y0, reach);
        const int base = has_centres ? m * win_size : 16 * m;
        for (int it = sub; it < side * chunks; it += tpm) {
            const int chunk = it / side, dxi = it - chunk * side;
            const int off = base + chunk * NY * pitch + dxi;
            __local const uint *row = win + (off >> 2);
            const int shift = (off & 3) * 8, wpitch = pitch >> 2;
            uint acc[22];   /* NY <= 22, a constant once inlined */
#ifndef MPE_OCL_ONE_VARIANT
#pragma unroll
#endif
            for (int j = 0; j < NY; j++)
                acc[j] = 0;
#ifndef MPE_OCL_ONE_VARIANT
#pragma unroll
#endif
            for (int r = 0; r < NY + 15; r++) {
                __local const uint *p = row + r * wpitch;
                const uint w0 = p[0], w1 = p[1], w2 = p[2], w3 = p[3], w4 = p[4];
                const uint s0 = funnel(w0, w1, shift), s1 = funnel(w1, w2, shift);
                const uint s2 = funnel(w2, w3, shift), s3 = funnel(w3, w4, shift);
#ifndef MPE_OCL_ONE_VARIANT
#pragma unroll
#endif
                for (int j = 0; j < NY; j++) {
                    const int k = r - j;   /* the macroblock's row this reference row meets */
                    if (k >= 0 && k < 16) {
                        acc[j] = sad4_acc(c[4 * k], s0, acc[j]);
                        acc[j] = sad4_acc(c[4 * k + 1], s1, acc[j]);
                        acc[j] = sad4_acc(c[4 * k + 2], s2, acc[j]);
                        acc[j] = sad4_acc(c[4 * k + 3], s3, acc[j]);
                    }
                }
            }
            const int dx = cx + dxi - range;
            const int dx_ok = dx >= box_lo_x && dx <= box_hi_x;
#ifndef MPE_OCL_ONE_VARIANT
#pragma unroll
#endif
            for (int j = 0; j < NY; j++) {
                const int dy = cy + chunk * NY + j - range;
                if (dx_ok && chunk * NY + j < side && dy >= box_lo_y && dy <= box_hi_y) {
                    const ulong k = cand_key(acc[j], dx, dy);
                    mine = k < mine ? k : mine;
                    if (!has_centres && dx == 0 && dy == 0)
                        sad0[m] = acc[j];
                }
            }
        }
    }
    keys[lid] = mine;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = lid; i < count * WS_PARTS; i += nthreads) {
        const int pm = i / WS_PARTS, pj = i - pm * WS_PARTS;
        ulong b = ~(ulong)0;
        for (int j = pj; j < tpm; j += WS_PARTS) {
            const ulong k = keys[pm * tpm + j];
            b = k < b ? k : b;
        }
        part[i] = b;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < count) {
        ulong b = ~(ulong)0;
        for (int j = 0; j < WS_PARTS; j++) {
            const ulong k = part[lid * WS_PARTS + j];
            b = k < b ? k : b;
        }
        __global uint *o = out + 3 * (mb_y * mb_w + mb_x0 + lid);
        o[0] = ((uint)key_dx(b) & 0xFFFF) | ((uint)key_dy(b) << 16);
        o[1] = (uint)(b >> 40);
        o[2] = sad0[lid];
    }
}

#define WINDOW_SEARCH_KERNEL(NY)                                                                 \
    __kernel void window_search_##NY(__global const uchar *cur, __global const uchar *ref,       \
                                     int plane_w, int plane_h, int mb_w, int range, int reach,   \
                                     int mbs, int tpm, int chunks, int pitch,                    \
                                     __global const uint *centres, int has_centres,              \
                                     __global uint *out, __local uint *win, __local ulong *keys) \
    {                                                                                            \
        __local uint blk[WS_MAX_MBS * 64];                                                       \
        __local int ctr[WS_MAX_MBS * 2];                                                         \
        __local uint sad0[WS_MAX_MBS];                                                           \
        __local ulong part[WS_MAX_MBS * WS_PARTS];                                               \
        window_search(NY, cur, ref, plane_w, plane_h, mb_w, range, reach, mbs, tpm, chunks,      \
                      pitch, centres, has_centres, out, win, keys, blk, ctr, sad0, part);        \
    }
/* the variants the host chooses among (frontend_ocl.c: WS_VARIANTS) */
WINDOW_SEARCH_KERNEL(8)
#ifndef MPE_OCL_ONE_VARIANT   /* a CPU device's build */
WINDOW_SEARCH_KERNEL(9)
WINDOW_SEARCH_KERNEL(11)
WINDOW_SEARCH_KERNEL(13)
WINDOW_SEARCH_KERNEL(17)
WINDOW_SEARCH_KERNEL(22)
#endif

/* ---- the hierarchical search (frontend.h): one kernel per pyramid level
 * built at submit, then stages 2-3 (hier_coarse, a work-group per
 * macroblock as in frontend_cuda_hier.cu), stage 4 (hier_centre, one item
 * per macroblock) and stage 5 (window_search around those centres), each
 * stage's minimum taken in cand_key's order (the tie-break rule).  No bound
 * is written as max(max(a, -k), b): NVIDIA's compiler (ptxas) drops the
 * negation (frontend_cuda_hier.cu); each bound is taken from two operands. */

/* mpe_bdecide_intra_costs (encoder/bdecide.c) on the device, one item per
 * macroblock: the sum of its 256 luma samples, the rounded mean, and the
 * SAD against that flat block, in integers (identical to the host's). */
__kernel void intra_cost(__global const uchar *luma, int plane_w, int mb_w, int n_mb,
                         __global uint *out)
{
    const int mb = get_global_id(0);
    if (mb >= n_mb)
        return;
    __global const uchar *p = luma + (size_t)(16 * (mb / mb_w)) * plane_w + 16 * (mb % mb_w);
    uint sum = 0;
    for (int y = 0; y < 16; y++) {
        const uint16 v = convert_uint16(vload16(0, p + y * plane_w));
        const uint8 h = v.lo + v.hi;
        const uint4 q = h.lo + h.hi;
        sum += q.x + q.y + q.z + q.w;
    }
    const uchar16 flat = (uchar16)((uchar)((sum + 128) >> 8));
    uint sad = 0;
    for (int y = 0; y < 16; y++) {
        const uint16 d = convert_uint16(abs_diff(vload16(0, p + y * plane_w), flat));
        const uint8 h = d.lo + d.hi;
        const uint4 q = h.lo + h.hi;
        sad += q.x + q.y + q.z + q.w;
    }
    out[mb] = sad;
}

__kernel void decimate(__global const uchar *src, int sw, __global uchar *dst, int dw, int dh)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= dw || y >= dh)
        return;
    __global const uchar *a = src + 2 * y * sw + 2 * x;
    dst[y * dw + x] = (uchar)((a[0] + a[1] + a[sw] + a[sw + 1] + 2) >> 2);
}

inline uint sad_n(__global const uchar *a, __global const uchar *b, int stride, int n)
{
    uint s = 0;
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++)
            s += abs_diff(a[y * stride + x], b[y * stride + x]);
    return s;
}

#define COARSE_WG 256
/* the 1/4-resolution window: a 4x4 block over +-(GPU_MAX_REACH / 4) = 63,
 * +8 bytes: a word past a row's last candidate is read */
#define QWIN_SIDE (4 + 2 * 63)

/* Stages 2-3: coarse[mb] = 2h as dx | dy << 16. */
__kernel __attribute__((reqd_work_group_size(COARSE_WG, 1, 1)))
void hier_coarse(__global const uchar *cq, __global const uchar *rq, __global const uchar *ch,
                 __global const uchar *rh, int qw, int qh, int mb_w, int reach,
                 __global uint *coarse)
{
    __local uint win[(QWIN_SIDE * QWIN_SIDE + 8) / 4];
    __local ulong red[COARSE_WG];
    const int t = get_local_id(0), mb = get_group_id(0);
    const int mbx = mb % mb_w, mby = mb / mb_w;

    /* 1/4 resolution: u in [-reach/4, reach/4]^2 inside the plane */
    int x0 = 4 * mbx, y0 = 4 * mby, lim = reach / 4;
    const int lo_x = max(-x0, -lim), hi_x = min(qw - 4 - x0, lim);
    const int lo_y = max(-y0, -lim), hi_y = min(qh - 4 - y0, lim);
    const int nx = hi_x - lo_x + 1, ny = hi_y - lo_y + 1, ww = nx + 3;
    __local uchar *wb = (__local uchar *)win;
    for (int i = t; i < ww * (ny + 3); i += COARSE_WG) {
        const int wy = i / ww, wx = i - wy * ww;
        wb[i] = rq[(y0 + lo_y + wy) * qw + x0 + lo_x + wx];
    }
    uint c[4];
    for (int r = 0; r < 4; r++)
        c[r] = as_uint(vload4(0, cq + (y0 + r) * qw + x0));
    barrier(CLK_LOCAL_MEM_FENCE);
    ulong mine = ~(ulong)0;
    for (int i = t; i < nx * ny; i += COARSE_WG) {
        const int iy = i / nx, ix = i - iy * nx;
        uint sad = 0;
        for (int r = 0; r < 4; r++) {
            const int o = (iy + r) * ww + ix;
            sad = sad4_acc(c[r], funnel(win[o >> 2], win[(o >> 2) + 1], (o & 3) * 8), sad);
        }
        const ulong k = cand_key(sad, lo_x + ix, lo_y + iy);
        mine = k < mine ? k : mine;
    }
    red[t] = mine;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = COARSE_WG / 2; s > 0; s >>= 1) {
        if (t < s) {
            const ulong o = red[t + s];
            red[t] = o < red[t] ? o : red[t];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const ulong ku = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);   /* red is reused below */

    /* 1/2 resolution: h in 2u + [-2, 2]^2, |h| <= reach/2, inside the plane;
     * an item per candidate */
    const int ux = key_dx(ku), uy = key_dy(ku), hw = 2 * qw, hh = 2 * qh;
    x0 = 8 * mbx;
    y0 = 8 * mby;
    lim = reach / 2;
    mine = ~(ulong)0;
    const int dx = 2 * ux - 2 + t % 5, dy = 2 * uy - 2 + t / 5;
    if (t < 25 && dx >= max(-x0, -lim) && dx <= min(hw - 8 - x0, lim) && dy >= max(-y0, -lim) &&
        dy <= min(hh - 8 - y0, lim))
        mine = cand_key(sad_n(ch + y0 * hw + x0, rh + (y0 + dy) * hw + x0 + dx, hw, 8), dx, dy);
    if (t < 32)
        red[t] = mine;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0) {
        ulong b = ~(ulong)0;
        for (int i = 0; i < 25; i++)
            b = red[i] < b ? red[i] : b;
        coarse[mb] = ((uint)(2 * key_dx(b)) & 0xFFFF) | ((uint)(2 * key_dy(b)) << 16);
    }
}

/* Stage 4: the best of the candidates (own coarse vector, zero, co-located,
 * left, right, top, bottom) is the window's centre: centres[2 mb] = its
 * vector as dx | dy << 16, centres[2 mb + 1] = the zero vector's SAD. */
__kernel void hier_centre(__global const uchar *cur, __global const uchar *ref, int plane_w,
                          int plane_h, int mb_w, int mb_h, int reach, __global const uint *coarse,
                          __global const uint *prev, int has_prev, __global uint *centres)
{
    const int mb = get_global_id(0);
    if (mb >= mb_w * mb_h)
        return;
    const int mbx = mb % mb_w, mby = mb / mb_w, x0 = 16 * mbx, y0 = 16 * mby;
    const int blo_x = max(-x0, -reach), bhi_x = min(plane_w - 16 - x0, reach);
    const int blo_y = max(-y0, -reach), bhi_y = min(plane_h - 16 - y0, reach);
    __global const uchar *a = cur + y0 * plane_w + x0, *r0 = ref + y0 * plane_w + x0;
    ulong best = ~(ulong)0;
    uint sad0 = 0;
    for (int ci = 0; ci < 7; ci++) {
        int have = 1;
        uint v = 0;
        if (ci == 0) v = coarse[mb];
        else if (ci == 2) { have = has_prev; v = has_prev ? prev[3 * mb] : 0; }
        else if (ci == 3) { have = mbx > 0; v = have ? coarse[mb - 1] : 0; }
        else if (ci == 4) { have = mbx < mb_w - 1; v = have ? coarse[mb + 1] : 0; }
        else if (ci == 5) { have = mby > 0; v = have ? coarse[mb - mb_w] : 0; }
        else if (ci == 6) { have = mby < mb_h - 1; v = have ? coarse[mb + mb_w] : 0; }
        const int dx = (short)(v & 0xFFFF), dy = (short)(v >> 16);
        if (!have || dx < blo_x || dx > bhi_x || dy < blo_y || dy > bhi_y)
            continue;
        uint s = sad_n(a, r0 + dy * plane_w + dx, plane_w, 16);
        if (ci == 1)
            sad0 = s;
        ulong k = cand_key(s, dx, dy);
        best = k < best ? k : best;
    }
    centres[2 * mb] = ((uint)key_dx(best) & 0xFFFF) | ((uint)key_dy(best) << 16);
    centres[2 * mb + 1] = sad0;
}
