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

/* Exhaustive full-pel search, one work-group of SEARCH_WG items per
 * macroblock.  The reference window (16+2R)^2 sits in local memory (dynamic
 * size, R <= 64: at most 20736 bytes), read from global memory once per
 * macroblock; the current macroblock too, so its rows are broadcast reads.
 * Each item takes candidates item, item+SEARCH_WG, ...; within one pass
 * neighbouring items hold neighbouring dx, so their 16-byte window reads
 * overlap in the same local-memory words.  The best candidate is reduced
 * with a 64-bit key whose order is the tie-break rule of frontend.h:
 * SAD, then |dx|+|dy|, then dy, then dx. */
#define SEARCH_WG 256

/* SAD of the 16x16 block blk (rows of 16) against the window at w (rows of
 * win_w), both in local memory. */
inline uint sad16_local(__local const uchar *blk, __local const uchar *w, int win_w)
{
    uint sad = 0;
    for (int r = 0; r < 16; r++) {
        uchar16 a = vload16(0, blk + 16 * r);
        uchar16 b = vload16(0, w + r * win_w);
        ushort16 d = convert_ushort16(abs_diff(a, b));
        ushort8 s8 = d.lo + d.hi;
        ushort4 s4 = s8.lo + s8.hi;
        ushort2 s2 = s4.lo + s4.hi;
        sad += (uint)s2.x + (uint)s2.y;
    }
    return sad;
}

inline ulong cand_key(uint sad, int dx, int dy)
{
    return ((ulong)sad << 40) | ((ulong)(abs(dx) + abs(dy)) << 24) |
           ((ulong)(dy + 2048) << 12) | (ulong)(dx + 2048);
}

__kernel __attribute__((reqd_work_group_size(SEARCH_WG, 1, 1)))
void motion_search(__global const uchar *cur, __global const uchar *ref, int plane_w,
                   int plane_h, int mb_w, int range, __global uint *out,
                   __local uchar *win)
{
    __local uchar blk[256];
    __local ulong best[SEARCH_WG];
    __local uint sad0;

    const int lid = get_local_id(0);
    const int mb = get_group_id(0);
    const int x0 = (mb % mb_w) * 16, y0 = (mb / mb_w) * 16;
    const int win_w = 16 + 2 * range, side = 2 * range + 1;
    const int wx0 = x0 - range, wy0 = y0 - range;

    for (int i = lid; i < 256; i += SEARCH_WG)
        blk[i] = cur[(y0 + i / 16) * plane_w + x0 + i % 16];
    /* window samples outside the plane belong to candidates that are
     * skipped below, so any in-plane value does */
    for (int i = lid; i < win_w * win_w; i += SEARCH_WG) {
        int x = clamp(wx0 + i % win_w, 0, plane_w - 1);
        int y = clamp(wy0 + i / win_w, 0, plane_h - 1);
        win[i] = ref[y * plane_w + x];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    const int dx_lo = -min(range, x0), dx_hi = min(range, plane_w - 16 - x0);
    const int dy_lo = -min(range, y0), dy_hi = min(range, plane_h - 16 - y0);
    ulong mine = ~(ulong)0;
    for (int c = lid; c < side * side; c += SEARCH_WG) {
        const int dx = c % side - range, dy = c / side - range;
        if (dx < dx_lo || dx > dx_hi || dy < dy_lo || dy > dy_hi)
            continue;
        __local const uchar *w = win + (dy + range) * win_w + dx + range;
        const uint sad = sad16_local(blk, w, win_w);
        if (dx == 0 && dy == 0)
            sad0 = sad;
        ulong k = cand_key(sad, dx, dy);
        mine = k < mine ? k : mine;
    }
    best[lid] = mine;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = SEARCH_WG / 2; s > 0; s >>= 1) {
        if (lid < s && best[lid + s] < best[lid])
            best[lid] = best[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        ulong k = best[0];
        int dx = (int)(k & 0xFFF) - 2048, dy = (int)((k >> 12) & 0xFFF) - 2048;
        out[3 * mb] = ((uint)dx & 0xFFFF) | ((uint)dy << 16);
        out[3 * mb + 1] = (uint)(k >> 40);
        out[3 * mb + 2] = sad0;
    }
}

/* ---- the hierarchical search (frontend.h): one kernel per pyramid level
 * built at submit, then stages 2-3 and stages 4-5, one work-item per
 * macroblock, each stage's minimum taken in cand_key's order (the
 * tie-break rule).  One work-item per macroblock, without work-group
 * reductions: kernels that shared each macroblock's candidates out over a
 * work-group and reduced them (barriers, local memory) gave wrong minima
 * on PoCL 5.0 (Xeon, skylake-avx512) while this form is exact there, on
 * PoCL 3.1 and against the C reference.  No bound is written as
 * max(max(a, -k), b): NVIDIA's compiler (ptxas) drops the negation
 * (frontend_cuda_hier.cu); with each bound tested on its own these kernels
 * are exact on the H100's OpenCL too. */

__kernel void decimate(__global const uchar *src, int sw, __global uchar *dst, int dw, int dh)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= dw || y >= dh)
        return;
    __global const uchar *a = src + 2 * y * sw + 2 * x;
    dst[y * dw + x] = (uchar)((a[0] + a[1] + a[sw] + a[sw + 1] + 2) >> 2);
}

inline int key_dx(ulong k) { return (int)(k & 0xFFF) - 2048; }
inline int key_dy(ulong k) { return (int)((k >> 12) & 0xFFF) - 2048; }

inline uint sad_n(__global const uchar *a, __global const uchar *b, int stride, int n)
{
    uint s = 0;
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++)
            s += abs_diff(a[y * stride + x], b[y * stride + x]);
    return s;
}
/* Stages 2-3: coarse[mb] = 2h as dx | dy << 16. */
__kernel void hier_coarse(__global const uchar *cq, __global const uchar *rq,
                                 __global const uchar *ch, __global const uchar *rh, int qw, int qh,
                                 int mb_w, int reach, __global uint *coarse, int nmb)
{
    const int mb = get_global_id(0);
    if (mb >= nmb)
        return;
    const int mbx = mb % mb_w, mby = mb / mb_w;
    int x0 = 4 * mbx, y0 = 4 * mby, lim = reach / 4;
    int lo_x = max(-x0, -lim), hi_x = min(qw - 4 - x0, lim);
    int lo_y = max(-y0, -lim), hi_y = min(qh - 4 - y0, lim);
    ulong best = ~(ulong)0;
    for (int dy = lo_y; dy <= hi_y; dy++)
        for (int dx = lo_x; dx <= hi_x; dx++) {
            ulong k = cand_key(sad_n(cq + y0 * qw + x0, rq + (y0 + dy) * qw + x0 + dx, qw, 4), dx, dy);
            best = k < best ? k : best;
        }
    const int ux = key_dx(best), uy = key_dy(best), hw = 2 * qw, hh = 2 * qh;
    x0 = 8 * mbx;
    y0 = 8 * mby;
    lim = reach / 2;
    lo_x = max(-x0, -lim);
    hi_x = min(hw - 8 - x0, lim);
    lo_y = max(-y0, -lim);
    hi_y = min(hh - 8 - y0, lim);
    best = ~(ulong)0;
    /* 2u + [-2, 2]^2 inside those bounds, tested one by one (not
     * max(max(-x0, -lim), 2 * ux - 2): see the top of this section) */
    for (int dy = 2 * uy - 2; dy <= 2 * uy + 2; dy++)
        for (int dx = 2 * ux - 2; dx <= 2 * ux + 2; dx++) {
            if (dx < lo_x || dx > hi_x || dy < lo_y || dy > hi_y)
                continue;
            ulong k = cand_key(sad_n(ch + y0 * hw + x0, rh + (y0 + dy) * hw + x0 + dx, hw, 8), dx, dy);
            best = k < best ? k : best;
        }
    coarse[mb] = ((uint)(2 * key_dx(best)) & 0xFFFF) | ((uint)(2 * key_dy(best)) << 16);
}

/* Stages 4-5: the candidates' best centres the exhaustive window. */
__kernel void hier_final(__global const uchar *cur, __global const uchar *ref, int plane_w,
                                int plane_h, int mb_w, int mb_h, int range, int reach,
                                __global const uint *coarse, __global const uint *prev, int has_prev,
                                __global uint *out)
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
    const int cx = key_dx(best), cy = key_dy(best);
    /* the window, clipped to the box one bound at a time (as in hier_coarse) */
    for (int dy = cy - range; dy <= cy + range; dy++)
        for (int dx = cx - range; dx <= cx + range; dx++) {
            if (dx < blo_x || dx > bhi_x || dy < blo_y || dy > bhi_y)
                continue;
            ulong k = cand_key(sad_n(a, r0 + dy * plane_w + dx, plane_w, 16), dx, dy);
            best = k < best ? k : best;
        }
    out[3 * mb] = ((uint)key_dx(best) & 0xFFFF) | ((uint)key_dy(best) << 16);
    out[3 * mb + 1] = (uint)(best >> 40);
    out[3 * mb + 2] = sad0;
}
