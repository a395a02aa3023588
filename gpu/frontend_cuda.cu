/* frontend_cuda.cu — the "cuda" front end: the fused RGB->YCbCr + chroma
 * lowpass kernel and the exhaustive SAD search of frontend.h in CUDA C,
 * bit-identical to frontend_cpu.c (integer arithmetic, one tie-break rule);
 * the hierarchical search's kernels are in frontend_cuda_hier.cu.
 *
 * Each frame slot owns a stream, device planes, pinned staging buffers and
 * events.  submit_frame(s) queues upload + conversion + read-back of the
 * planes on s's stream; motion_search(c, r) queues the search on c's stream
 * after r's conversion (an event wait), so the upload of frame n+1 runs on
 * the copy engine while frame n is searched.  A slot's planes are not
 * overwritten before every search that used them as reference is done
 * (the event `ref_free`).  Nothing blocks the host except wait()/download()
 * and reuse of a pinned buffer whose previous upload is still running.
 *
 * The runtime is linked statically: without the NVIDIA driver the probe
 * reports why and `auto` moves on to the next backend. */
extern "C" {
#include "common/cuda.h"
#include "gpu/frontend_internal.h"
}
#include "gpu/frontend_cuda_hier.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define Y_R 16829
#define Y_G 33039
#define Y_B 6416
#define CB_R (-9714)
#define CB_G (-19070)
#define CB_B 28784
#define CR_R 28784
#define CR_G (-24103)
#define CR_B (-4681)

/* ---- conversion ------------------------------------------------------- */

/* A block of CONV_T x CONV_T threads makes CONV_T^2 chroma samples and the
 * 2x2 luma samples under each, from an RGB tile with a one-pixel halo (the
 * [1 3 3 1] taps reach one source pixel past the tile) staged in shared
 * memory.  Chroma stays at full precision until the one final rounding. */
#define CONV_T 16
#define TILE (2 * CONV_T + 2)

__global__ void __launch_bounds__(CONV_T *CONV_T)
    convert_rgb_kernel(const uint8_t *__restrict__ rgb, int rgb_stride, int width, int height,
                       uint8_t *__restrict__ py, uint8_t *__restrict__ pcb,
                       uint8_t *__restrict__ pcr, int luma_w, int luma_h)
{
    __shared__ uint8_t tile[TILE * TILE * 3];
    __shared__ int cb[TILE * TILE], cr[TILE * TILE];
    __shared__ int hcb[TILE * CONV_T], hcr[TILE * CONV_T];

    const int lx = threadIdx.x, ly = threadIdx.y;
    const int lid = ly * CONV_T + lx;
    const int cx0 = blockIdx.x * CONV_T, cy0 = blockIdx.y * CONV_T;
    const int sx0 = 2 * cx0 - 1, sy0 = 2 * cy0 - 1;
    const int chroma_w = luma_w / 2, chroma_h = luma_h / 2;

    /* clamped source coordinates = edge replication, which also fills the
     * macroblock padding */
    for (int i = lid; i < TILE * TILE; i += CONV_T * CONV_T) {
        int tx = i % TILE, ty = i / TILE;
        int sx = min(max(sx0 + tx, 0), width - 1), sy = min(max(sy0 + ty, 0), height - 1);
        const uint8_t *p = rgb + (size_t)sy * rgb_stride + 3 * sx;
        tile[3 * i] = p[0];
        tile[3 * i + 1] = p[1];
        tile[3 * i + 2] = p[2];
    }
    __syncthreads();

    for (int i = lid; i < TILE * TILE; i += CONV_T * CONV_T) {
        int r = tile[3 * i], g = tile[3 * i + 1], b = tile[3 * i + 2];
        cb[i] = CB_R * r + CB_G * g + CB_B * b;
        cr[i] = CR_R * r + CR_G * g + CR_B * b;
    }
#pragma unroll
    for (int j = 0; j < 2; j++) {
        int y = 2 * (cy0 + ly) + j;
#pragma unroll
        for (int k = 0; k < 2; k++) {
            int x = 2 * (cx0 + lx) + k;
            if (x < luma_w && y < luma_h) {
                int i = (2 * ly + j + 1) * TILE + 2 * lx + k + 1;
                int r = tile[3 * i], g = tile[3 * i + 1], b = tile[3 * i + 2];
                py[(size_t)y * luma_w + x] =
                    (uint8_t)((Y_R * r + Y_G * g + Y_B * b + (16 << 16) + 32768) >> 16);
            }
        }
    }
    __syncthreads();

    for (int i = lid; i < TILE * CONV_T; i += CONV_T * CONV_T) {
        int row = i / CONV_T, col = i % CONV_T;
        const int base = row * TILE + 2 * col;
        hcb[i] = cb[base] + 3 * cb[base + 1] + 3 * cb[base + 2] + cb[base + 3];
        hcr[i] = cr[base] + 3 * cr[base + 1] + 3 * cr[base + 2] + cr[base + 3];
    }
    __syncthreads();

    const int cx = cx0 + lx, cy = cy0 + ly;
    if (cx < chroma_w && cy < chroma_h) {
        const int base = 2 * ly * CONV_T + lx;
        int scb = hcb[base] + 3 * hcb[base + CONV_T] + 3 * hcb[base + 2 * CONV_T] + hcb[base + 3 * CONV_T];
        int scr = hcr[base] + 3 * hcr[base + CONV_T] + 3 * hcr[base + 2 * CONV_T] + hcr[base + 3 * CONV_T];
        pcb[(size_t)cy * chroma_w + cx] = (uint8_t)min(max((scb + (128 << 22) + (1 << 21)) >> 22, 16), 240);
        pcr[(size_t)cy * chroma_w + cx] = (uint8_t)min(max((scr + (128 << 22) + (1 << 21)) >> 22, 16), 240);
    }
}

/* ---- intra costs ------------------------------------------------------ */

/* mpe_bdecide_intra_costs on the device: a warp per macroblock, each lane
 * 8 of its 256 luma samples; the sum, the rounded mean, and the SAD
 * against that flat block, all in integers (identical to the host's). */
#define INTRA_WARPS 4

__global__ void __launch_bounds__(32 * INTRA_WARPS)
    intra_cost_kernel(const uint8_t *__restrict__ luma, int plane_w, int mb_w, int n_mb,
                      uint32_t *__restrict__ out)
{
    const int mb = blockIdx.x * INTRA_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (mb >= n_mb)
        return;
    /* lane: row lane / 2, columns 8 (lane % 2) .. + 7 */
    const uint8_t *p = luma + (size_t)(16 * (mb / mb_w) + lane / 2) * plane_w + 16 * (mb % mb_w) +
                       8 * (lane % 2);
    const uint2 v = *(const uint2 *)p;   /* planes are 16-aligned */
    unsigned sum = __vsadu4(v.x, 0) + __vsadu4(v.y, 0);
    for (int o = 16; o; o >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const unsigned mean = (sum + 128) >> 8;
    const unsigned flat = mean * 0x01010101u;
    unsigned sad = __vsadu4(v.x, flat) + __vsadu4(v.y, flat);
    for (int o = 16; o; o >>= 1)
        sad += __shfl_xor_sync(0xffffffffu, sad, o);
    if (lane == 0)
        out[mb] = sad;
}

/* ---- motion search ---------------------------------------------------- */

/* The search is bound by integer instruction issue: 4.6 G absolute
 * differences per 2048x2048 frame at R = 16.  What keeps it near that bound:
 *  - vabsdiff4 with accumulate: 4 pixel differences summed into a running
 *    SAD by one instruction;
 *  - the current macroblock lives in 64 registers of every thread;
 *  - vertical row sharing: a thread owns one dx and NY consecutive dy, so
 *    each reference row it loads (5 aligned words, 4 funnel shifts) serves
 *    up to NY candidates at once;
 *  - a block searches a strip of MBS horizontally adjacent macroblocks,
 *    their common reference window staged once in shared memory; consecutive
 *    lanes take consecutive dx, so a warp's window reads are 8-9 consecutive
 *    words (broadcasts, no bank conflicts);
 *  - candidates are packed into 64-bit keys whose order is the tie-break
 *    rule (SAD, |dx|+|dy|, dy, dx) and reduced with a shared atomicMin. */
#define SEARCH_MAX_THREADS 512
#define SEARCH_MAX_MBS 8

template <int NY>
__global__ void __launch_bounds__(SEARCH_MAX_THREADS)
    search_kernel(const uint8_t *__restrict__ cur, const uint8_t *__restrict__ ref, int plane_w,
                  int plane_h, int mb_w, int range, int mbs, int chunks, int pitch,
                  uint32_t *__restrict__ out)
{
    extern __shared__ __align__(16) uint8_t smem[];
    __shared__ unsigned long long best[SEARCH_MAX_MBS];
    __shared__ uint32_t sad0[SEARCH_MAX_MBS];

    const int side = 2 * range + 1;
    const int mb_x0 = blockIdx.x * mbs, mb_y = blockIdx.y;
    const int count = min(mbs, mb_w - mb_x0);
    const int x0 = mb_x0 * 16, y0 = mb_y * 16;
    const int win_rows = chunks * NY + 15;
    uint8_t *blk = smem;                        /* count x 256 bytes */
    uint8_t *win = smem + SEARCH_MAX_MBS * 256; /* win_rows x pitch */

    for (int i = threadIdx.x; i < count * 64; i += blockDim.x) {
        int m = i >> 6, w = i & 63;
        const uint8_t *p = cur + (size_t)(y0 + (w >> 2)) * plane_w + x0 + 16 * m + 4 * (w & 3);
        ((uint32_t *)blk)[i] = *(const uint32_t *)p;  /* planes are 16-aligned */
    }
    /* Window rows/columns outside the plane only feed candidates that are
     * rejected below, so any in-plane value does.  With R a multiple of 4
     * the window starts word-aligned and every word lies wholly inside or
     * wholly outside the plane (its width is a multiple of 16): clamp whole
     * words, 4x fewer loads, several in flight per thread. */
    if ((range & 3) == 0) {
        const int wpitch = pitch >> 2, plane_w4 = plane_w >> 2;
        const int wx0 = (x0 - range) >> 2;
        const uint32_t *src = (const uint32_t *)ref;
        uint32_t *win32 = (uint32_t *)win;
#pragma unroll 4
        for (int i = threadIdx.x; i < win_rows * wpitch; i += blockDim.x) {
            int wy = i / wpitch, wx = i - wy * wpitch;
            int sx = min(max(wx0 + wx, 0), plane_w4 - 1);
            int sy = min(max(y0 - range + wy, 0), plane_h - 1);
            win32[i] = __ldg(src + (size_t)sy * plane_w4 + sx);
        }
    } else {
        for (int i = threadIdx.x; i < win_rows * pitch; i += blockDim.x) {
            int wy = i / pitch, wx = i - wy * pitch;
            int sx = min(max(x0 - range + wx, 0), plane_w - 1);
            int sy = min(max(y0 - range + wy, 0), plane_h - 1);
            win[i] = ref[(size_t)sy * plane_w + sx];
        }
    }
    if (threadIdx.x < SEARCH_MAX_MBS)
        best[threadIdx.x] = ~0ull;
    __syncthreads();

    const int per_mb = side * chunks;
    const int items = count * per_mb;
    for (int it = threadIdx.x; it < items; it += blockDim.x) {
        const int dxi = it % side;
        const int rest = it / side;
        const int m = rest % count, chunk = rest / count;

        uint32_t c[64];
        const uint4 *b4 = (const uint4 *)(blk + 256 * m);
#pragma unroll
        for (int i = 0; i < 16; i++) {
            uint4 v = b4[i];
            c[4 * i] = v.x;
            c[4 * i + 1] = v.y;
            c[4 * i + 2] = v.z;
            c[4 * i + 3] = v.w;
        }

        const int off = chunk * NY * pitch + 16 * m + dxi;
        const uint32_t *row = (const uint32_t *)(win + (off & ~3));
        const int shift = (off & 3) * 8;
        const int wpitch = pitch >> 2;
        uint32_t acc[NY];
#pragma unroll
        for (int j = 0; j < NY; j++)
            acc[j] = 0;
#pragma unroll
        for (int r = 0; r < NY + 15; r++) {
            const uint32_t *p = row + r * wpitch;
            uint32_t w0 = p[0], w1 = p[1], w2 = p[2], w3 = p[3], w4 = p[4];
            uint32_t s0 = __funnelshift_r(w0, w1, shift), s1 = __funnelshift_r(w1, w2, shift);
            uint32_t s2 = __funnelshift_r(w2, w3, shift), s3 = __funnelshift_r(w3, w4, shift);
#pragma unroll
            for (int j = 0; j < NY; j++) {
                const int k = r - j;   /* row of the macroblock this ref row meets */
                if (k >= 0 && k < 16) {
                    acc[j] = sad4_acc(c[4 * k], s0, acc[j]);
                    acc[j] = sad4_acc(c[4 * k + 1], s1, acc[j]);
                    acc[j] = sad4_acc(c[4 * k + 2], s2, acc[j]);
                    acc[j] = sad4_acc(c[4 * k + 3], s3, acc[j]);
                }
            }
        }

        const int mx = x0 + 16 * m;
        const int dx = dxi - range;
        const int dx_ok = dx >= -min(range, mx) && dx <= min(range, plane_w - 16 - mx);
        const int dy_lo = -min(range, y0), dy_hi = min(range, plane_h - 16 - y0);
        unsigned long long mine = ~0ull;
#pragma unroll
        for (int j = 0; j < NY; j++) {
            const int dy = chunk * NY + j - range;
            if (dx_ok && dy >= dy_lo && dy <= dy_hi) {
                unsigned long long k = cand_key(acc[j], dx, dy);
                mine = k < mine ? k : mine;
                if (dx == 0 && dy == 0)
                    sad0[m] = acc[j];
            }
        }
        if (mine != ~0ull)
            atomicMin(&best[m], mine);
    }
    __syncthreads();

    if (threadIdx.x < count) {
        const int m = threadIdx.x;
        const unsigned long long k = best[m];
        const int dx = (int)(k & 0xFFF) - 2048, dy = (int)((k >> 12) & 0xFFF) - 2048;
        uint32_t *o = out + 3 * ((size_t)mb_y * mb_w + mb_x0 + m);
        o[0] = ((uint32_t)dx & 0xFFFF) | ((uint32_t)dy << 16);
        o[1] = (uint32_t)(k >> 40);
        o[2] = sad0[m];
    }
}

/* Rows of candidates per thread: each instantiation trades registers
 * (NY accumulators next to the 64 of the macroblock) for fewer reloads of
 * reference rows (NY + 15 rows serve NY candidates). */
typedef void (*SearchKernel)(const uint8_t *, const uint8_t *, int, int, int, int, int, int, int,
                             uint32_t *);
static const struct {
    int ny;
    SearchKernel fn;
} search_variants[] = {
    { 8, search_kernel<8> },   { 11, search_kernel<11> }, { 13, search_kernel<13> },
    { 17, search_kernel<17> }, { 22, search_kernel<22> },
};
#define N_VARIANTS ((int)(sizeof(search_variants) / sizeof(search_variants[0])))

/* Launch shape of one search: variant, macroblocks per block, threads. */
typedef struct SearchPlan {
    int variant, ny, chunks, mbs, threads, pitch, win_rows;
    size_t smem;
} SearchPlan;

/* Instruction estimate per dx column: NY*64 SAD instructions per chunk plus
 * 9 per reference row (5 loads, 4 shifts); padded dy rows cost like real
 * ones, and threads idle in the last round cost like busy ones. */
static SearchPlan plan_search(int range, int mb_w)
{
    const int side = 2 * range + 1;
    SearchPlan best_plan;
    double best_cost = 1e300;
    memset(&best_plan, 0, sizeof(best_plan));
    for (int v = 0; v < N_VARIANTS; v++) {
        const int ny = search_variants[v].ny;
        const int chunks = (side + ny - 1) / ny;
        const double per_item = ny * 64.0 + (ny + 15) * 9.0;
        /* wide strips first: on equal cost they stage fewer window bytes
         * per macroblock and synchronise less (H200, R = 16: 8 MBs per
         * block 0.178 ms, 4: 0.224, 2: 0.214, 1: 0.192) */
        for (int mbs = SEARCH_MAX_MBS; mbs >= 1; mbs /= 2) {
            if (mbs > mb_w)
                continue;
            const int items = mbs * side * chunks;
            const int rounds = (items + SEARCH_MAX_THREADS - 1) / SEARCH_MAX_THREADS;
            const int threads = ((items + rounds - 1) / rounds + 31) / 32 * 32;
            /* per macroblock: work issued, idle lanes included, plus 1% per
             * block for staging its window and synchronising */
            const double cost = (double)rounds * threads * per_item / mbs * (1.0 + 0.01 * 8 / mbs);
            if (cost < best_cost) {
                best_cost = cost;
                best_plan.variant = v;
                best_plan.ny = ny;
                best_plan.chunks = chunks;
                best_plan.mbs = mbs;
                best_plan.threads = threads;
            }
        }
    }
    /* 5 words from the last dx of the last macroblock: 16*mbs + 2R + 4 bytes */
    best_plan.pitch = (16 * best_plan.mbs + 2 * range + 4 + 3) & ~3;
    best_plan.win_rows = best_plan.chunks * best_plan.ny + 15;
    best_plan.smem = (size_t)SEARCH_MAX_MBS * 256 + (size_t)best_plan.win_rows * best_plan.pitch;
    return best_plan;
}

/* ---- host side -------------------------------------------------------- */

#define CU_TRY(call, what) MPE_CUDA_TRY(NULL, call, what)

typedef struct CudaSlot {
    cudaStream_t stream;         /* upload, conversion, search, vectors out */
    cudaStream_t out_stream;     /* planes out, beside the search */
    uint8_t *d_rgb, *d_planes;   /* Y, Cb, Cr back to back */
    uint32_t *d_mv;              /* 3 words per macroblock: dx|dy<<16, sad, sad0 */
    uint8_t *d_half, *d_quarter; /* the pyramid (cfg->pyramid), built at submit */
    uint32_t *d_coarse;          /* the hierarchical search's stage 3: per slot, as the
                                  * searches of two slots may run at once */
    /* pinned staging: an RGB frame's (h_in, with d_rgb, and its planes
     * back in h_out) on its first RGB frame, the vectors' (h_mv) at open */
    uint8_t *h_in, *h_out, *h_mv;
    /* cfg->intra_costs: the macroblocks' intra costs, counted after the
     * conversion and brought back with the planes (ev_planes_out) */
    uint32_t *d_intra, *h_intra;
    /* a YUV frame's padded planes, in pinned (cached) memory laid out as
     * mpe_picture_alloc does: uploaded from there, and the encoder reads
     * them in place (host_planes), so they never come back down */
    uint8_t *h_yuv;
    MpePicture host_pic;
    /* ev_start -> ev_uploaded -> ev_converted -> ev_planes_out;
     * ev_search0 -> ev_search1 -> ev_mv_out; ref_free: every search that
     * read this slot as reference is done */
    cudaEvent_t ev_start, ev_uploaded, ev_converted, ev_planes_out;
    cudaEvent_t ev_search0, ev_search1, ev_mv_out, ref_free;
    int used, converted_on_device, ref_pending;
} CudaSlot;

struct GpuContext {
    int dev;
    const GpuGeometry *geo;
    int slots;
    size_t smem_optin;
    int pyramid, intra_costs;
    CudaSlot *slot;
};

static int cuda_probe(int device, int for_auto, char *why, size_t why_size)
{
    int dev;
    (void)for_auto;
    return mpe_cuda_pick(device, 0, &dev, why, why_size);
}

static void destroy_event(cudaEvent_t *e)
{
    if (*e) {
        cudaEventDestroy(*e);
        *e = NULL;
    }
}

static void cuda_close(GpuContext *g)
{
    if (!g)
        return;
    cudaSetDevice(g->dev);
    for (int i = 0; g->slot && i < g->slots; i++) {
        CudaSlot *s = &g->slot[i];
        if (s->stream)
            cudaStreamSynchronize(s->stream);
        if (s->out_stream)
            cudaStreamSynchronize(s->out_stream);
        cudaEvent_t *ev[] = { &s->ev_start, &s->ev_uploaded, &s->ev_converted, &s->ev_planes_out,
                              &s->ev_search0, &s->ev_search1, &s->ev_mv_out, &s->ref_free };
        for (size_t k = 0; k < sizeof(ev) / sizeof(ev[0]); k++)
            destroy_event(ev[k]);
        cudaFree(s->d_rgb);
        cudaFree(s->d_planes);
        cudaFree(s->d_mv);
        cudaFree(s->d_half);
        cudaFree(s->d_quarter);
        cudaFree(s->d_coarse);
        cudaFree(s->d_intra);
        cudaFreeHost(s->h_intra);
        cudaFreeHost(s->h_in);
        cudaFreeHost(s->h_out);
        cudaFreeHost(s->h_mv);
        cudaFreeHost(s->h_yuv);
        if (s->stream)
            cudaStreamDestroy(s->stream);
        if (s->out_stream)
            cudaStreamDestroy(s->out_stream);
    }
    free(g->slot);
    free(g);
}

static int cuda_alloc_slot(GpuContext *g, int slot, MpeError *err)
{
    const GpuGeometry *geo = g->geo;
    CudaSlot *s = &g->slot[slot];

    /* the highest priority the device has: the encoder waits for these
     * small kernels and copies, while the quality checker's MAD and
     * BLIINDS-II (--iqa) fill the device with work nobody waits for yet */
    int least, greatest;
    CU_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    CU_TRY(cudaStreamCreateWithPriority(&s->stream, cudaStreamNonBlocking, greatest), "cudaStreamCreate");
    CU_TRY(cudaStreamCreateWithPriority(&s->out_stream, cudaStreamNonBlocking, greatest),
           "cudaStreamCreate");
    CU_TRY(cudaMalloc((void **)&s->d_planes, geo->plane_off[3]), "cudaMalloc(planes)");
    CU_TRY(cudaMalloc((void **)&s->d_mv, geo->mv_size), "cudaMalloc(vectors)");
    if (g->pyramid) {
        const size_t half = (size_t)(geo->plane_w[0] / 2) * (geo->plane_h[0] / 2);
        CU_TRY(cudaMalloc((void **)&s->d_half, half), "cudaMalloc(half)");
        CU_TRY(cudaMalloc((void **)&s->d_quarter, half / 4), "cudaMalloc(quarter)");
        CU_TRY(cudaMalloc((void **)&s->d_coarse, (size_t)geo->mb_w * geo->mb_h * sizeof(uint32_t)),
               "cudaMalloc(coarse)");
    }
    CU_TRY(cudaHostAlloc((void **)&s->h_mv, geo->mv_size, cudaHostAllocDefault),
           "cudaHostAlloc(vectors)");
    if (g->intra_costs) {
        const size_t bytes = (size_t)geo->mb_w * geo->mb_h * sizeof(uint32_t);
        CU_TRY(cudaMalloc((void **)&s->d_intra, bytes), "cudaMalloc(intra costs)");
        CU_TRY(cudaHostAlloc((void **)&s->h_intra, bytes, cudaHostAllocDefault),
               "cudaHostAlloc(intra costs)");
    }
    const size_t yuv_size = mpe_picture_layout(&s->host_pic, geo->width, geo->height, NULL);
    CU_TRY(cudaHostAlloc((void **)&s->h_yuv, yuv_size, cudaHostAllocDefault), "cudaHostAlloc(yuv)");
    mpe_picture_layout(&s->host_pic, geo->width, geo->height, s->h_yuv);
    cudaEvent_t *timed[] = { &s->ev_start, &s->ev_uploaded, &s->ev_converted, &s->ev_planes_out,
                             &s->ev_search0, &s->ev_search1, &s->ev_mv_out };
    for (size_t k = 0; k < sizeof(timed) / sizeof(timed[0]); k++)
        CU_TRY(cudaEventCreate(timed[k]), "cudaEventCreate");
    CU_TRY(cudaEventCreateWithFlags(&s->ref_free, cudaEventDisableTiming), "cudaEventCreate");
    return 0;
}

static int cuda_open(GpuContext **out, const GpuConfig *cfg, const GpuGeometry *geo, MpeError *err)
{
    GpuContext *g;
    char why[256];
    int ret, optin = 0;

    if (!(*out = g = (GpuContext *)calloc(1, sizeof(*g))) ||
        !(g->slot = (CudaSlot *)calloc((size_t)cfg->slots, sizeof(*g->slot))))
        return mpe_error(err, -ENOMEM, "out of memory");
    g->geo = geo;
    g->slots = cfg->slots;
    g->pyramid = cfg->pyramid;
    g->intra_costs = cfg->intra_costs;
    if ((ret = mpe_cuda_pick(cfg->device, 0, &g->dev, why, sizeof(why))) < 0)
        return mpe_error(err, ret, "CUDA: %s", why);
    mpe_log(cfg->log, MPE_LOG_INFO, "CUDA front end on %s", why);
    /* the waits block (common/cuda.h); set here, on the context this open
     * makes anyway, and not in a probe (mpe_cuda_pick), which would then
     * make one: in CUDA 12+ cudaSetDevice makes the context */
    if ((ret = mpe_cuda_use_device(g->dev, NULL, err)) < 0)
        return ret;
    CU_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, g->dev),
           "cudaDeviceGetAttribute");
    g->smem_optin = (size_t)optin;
    /* every range's window must fit in a block's shared memory (beside the
     * kernel's own 96 static bytes) */
    for (int range = 0; range <= GPU_MAX_SEARCH_RANGE; range++) {
        SearchPlan p = plan_search(range, geo->mb_w);
        if (p.smem + 1024 > g->smem_optin)
            return mpe_error(err, -ENODEV,
                             "CUDA: device has %zu bytes of shared memory per block, need %zu",
                             g->smem_optin, p.smem + 1024);
    }
    return 0;
}

/* the kernels are loaded (and PTX JIT-compiled) around here: where a build
 * failure would show */
static int cuda_build(GpuContext *g, MpeError *err)
{
    for (int v = 0; v < N_VARIANTS; v++)
        CU_TRY(cudaFuncSetAttribute(search_variants[v].fn,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)g->smem_optin - 1024),
               "cudaFuncSetAttribute");
    return 0;
}

static int cuda_input(GpuContext *g, int slot, GpuInput *in, MpeError *err)
{
    CudaSlot *s = &g->slot[slot];
    CU_TRY(cudaSetDevice(g->dev), "cudaSetDevice");
    /* the pinned input may still feed this slot's previous upload */
    if (s->used)
        CU_TRY(cudaEventSynchronize(s->ev_uploaded), "cudaEventSynchronize(upload)");
    if (in->rgb && !s->h_in) {
        /* 25 MB of pinned and 12 MB of device memory a slot that Y4M input
         * never uses (and pinning it at open delays the device's start) */
        const GpuGeometry *geo = g->geo;
        CU_TRY(cudaMalloc((void **)&s->d_rgb, geo->rgb_size), "cudaMalloc(rgb)");
        CU_TRY(cudaHostAlloc((void **)&s->h_out, geo->plane_off[3], cudaHostAllocDefault),
               "cudaHostAlloc(output)");
        CU_TRY(cudaHostAlloc((void **)&s->h_in, geo->rgb_size, cudaHostAllocWriteCombined),
               "cudaHostAlloc(input)");
    }
    in->staging = s->h_in;
    in->pic = &s->host_pic;
    return 0;
}

static int cuda_submit(GpuContext *g, int slot, const MpeFrame *rgb, MpeError *err)
{
    const GpuGeometry *geo = g->geo;
    CudaSlot *s = &g->slot[slot];

    /* the planes may still be on their way out, or some other slot's search
     * reference */
    if (s->used)
        CU_TRY(cudaStreamWaitEvent(s->stream, s->ev_planes_out, 0), "cudaStreamWaitEvent");
    if (s->ref_pending) {
        CU_TRY(cudaStreamWaitEvent(s->stream, s->ref_free, 0), "cudaStreamWaitEvent");
        s->ref_pending = 0;
    }
    /* ev_start goes in after the host's copy into the pinned buffer, so the
     * upload time is the transfer's alone */
    CU_TRY(cudaEventRecord(s->ev_start, s->stream), "cudaEventRecord");
    if (rgb) {
        CU_TRY(cudaMemcpyAsync(s->d_rgb, s->h_in, geo->rgb_size, cudaMemcpyHostToDevice, s->stream),
               "cudaMemcpyAsync(rgb)");
        CU_TRY(cudaEventRecord(s->ev_uploaded, s->stream), "cudaEventRecord");
        dim3 block(CONV_T, CONV_T);
        dim3 grid((geo->plane_w[1] + CONV_T - 1) / CONV_T, (geo->plane_h[1] + CONV_T - 1) / CONV_T);
        convert_rgb_kernel<<<grid, block, 0, s->stream>>>(
            s->d_rgb, geo->width * 3, geo->width, geo->height, s->d_planes,
            s->d_planes + geo->plane_off[1], s->d_planes + geo->plane_off[2], geo->plane_w[0],
            geo->plane_h[0]);
        CU_TRY(cudaGetLastError(), "convert kernel launch");
    } else {
        const MpePicture *hp = &s->host_pic;
        for (int c = 0; c < 3; c++)
            CU_TRY(cudaMemcpy2DAsync(s->d_planes + geo->plane_off[c], (size_t)geo->plane_w[c], hp->plane[c],
                                     (size_t)hp->stride[c], (size_t)geo->plane_w[c], (size_t)geo->plane_h[c],
                                     cudaMemcpyHostToDevice, s->stream),
                   "cudaMemcpy2DAsync(planes)");
        CU_TRY(cudaEventRecord(s->ev_uploaded, s->stream), "cudaEventRecord");
    }
    s->converted_on_device = rgb != NULL;
    if (g->pyramid) {
        /* luma -> 1/2 -> 1/4 (timed with the conversion) */
        const uint8_t *from[2] = { s->d_planes, s->d_half };
        uint8_t *to[2] = { s->d_half, s->d_quarter };
        for (int l = 0; l < 2; l++)
            CU_TRY(gpu_cuda_decimate(from[l], geo->plane_w[0] >> l, to[l], geo->plane_h[0] >> l,
                                     s->stream),
                   "decimate kernel launch");
    }
    CU_TRY(cudaEventRecord(s->ev_converted, s->stream), "cudaEventRecord");
    CU_TRY(cudaStreamWaitEvent(s->out_stream, s->ev_converted, 0), "cudaStreamWaitEvent");
    if (rgb)   /* a YUV frame's planes are on the host already (host_pic) */
        CU_TRY(cudaMemcpyAsync(s->h_out, s->d_planes, geo->plane_off[3], cudaMemcpyDeviceToHost,
                               s->out_stream),
               "cudaMemcpyAsync(planes out)");
    if (g->intra_costs) {
        /* beside the search, on the planes' stream: 4 MB of luma read once */
        const int n_mb = geo->mb_w * geo->mb_h;
        intra_cost_kernel<<<(n_mb + INTRA_WARPS - 1) / INTRA_WARPS, 32 * INTRA_WARPS, 0, s->out_stream>>>(
            s->d_planes, geo->plane_w[0], geo->mb_w, n_mb, s->d_intra);
        CU_TRY(cudaGetLastError(), "intra cost kernel launch");
        CU_TRY(cudaMemcpyAsync(s->h_intra, s->d_intra, (size_t)n_mb * sizeof(uint32_t),
                               cudaMemcpyDeviceToHost, s->out_stream),
               "cudaMemcpyAsync(intra costs)");
    }
    CU_TRY(cudaEventRecord(s->ev_planes_out, s->out_stream), "cudaEventRecord");
    s->used = 1;
    return 0;
}

static int cuda_search(GpuContext *g, int cur, int ref, int range, int reach, int ref_has_mv,
                       MpeError *err)
{
    const GpuGeometry *geo = g->geo;
    CudaSlot *s = &g->slot[cur], *r = &g->slot[ref];

    CU_TRY(cudaSetDevice(g->dev), "cudaSetDevice");
    if (ref != cur)
        CU_TRY(cudaStreamWaitEvent(s->stream, r->ev_converted, 0), "cudaStreamWaitEvent");
    /* ref's vectors are the co-located candidates: its own search (on its
     * stream) must be done */
    if (reach && ref_has_mv)
        CU_TRY(cudaStreamWaitEvent(s->stream, r->ev_search1, 0), "cudaStreamWaitEvent");
    CU_TRY(cudaEventRecord(s->ev_search0, s->stream), "cudaEventRecord");
    if (reach) {
        CU_TRY(gpu_cuda_hier_search(s->d_quarter, r->d_quarter, s->d_half, r->d_half, s->d_planes,
                                    r->d_planes, geo->plane_w[0], geo->plane_h[0], geo->mb_w,
                                    geo->mb_h, range, reach, s->d_coarse, r->d_mv, ref_has_mv,
                                    s->d_mv, s->stream),
               "hierarchical search kernel launch");
    } else {
        const SearchPlan p = plan_search(range, geo->mb_w);
        dim3 grid((geo->mb_w + p.mbs - 1) / p.mbs, geo->mb_h);
        search_variants[p.variant].fn<<<grid, p.threads, p.smem, s->stream>>>(
            s->d_planes, r->d_planes, geo->plane_w[0], geo->plane_h[0], geo->mb_w, range, p.mbs,
            p.chunks, p.pitch, s->d_mv);
        CU_TRY(cudaGetLastError(), "search kernel launch");
    }
    CU_TRY(cudaEventRecord(s->ev_search1, s->stream), "cudaEventRecord");
    if (ref != cur) {
        CU_TRY(cudaEventRecord(r->ref_free, s->stream), "cudaEventRecord");
        r->ref_pending = 1;
    }
    CU_TRY(cudaMemcpyAsync(s->h_mv, s->d_mv, geo->mv_size,
                           cudaMemcpyDeviceToHost, s->stream),
           "cudaMemcpyAsync(vectors)");
    CU_TRY(cudaEventRecord(s->ev_mv_out, s->stream), "cudaEventRecord");
    return 0;
}

static int cuda_wait(GpuContext *g, int slot, int has_mv, MpeError *err)
{
    CudaSlot *s = &g->slot[slot];
    CU_TRY(cudaSetDevice(g->dev), "cudaSetDevice");
    CU_TRY(cudaEventSynchronize(s->ev_planes_out), "front-end work (planes)");
    if (has_mv)
        CU_TRY(cudaEventSynchronize(s->ev_mv_out), "front-end work (search)");
    return 0;
}

static int cuda_download(GpuContext *g, int slot, MpePicture *pic, GpuMotion *mv, MpeError *err)
{
    const CudaSlot *s = &g->slot[slot];
    (void)err;
    if (pic && !s->converted_on_device) {   /* a YUV frame: on the host already */
        mpe_picture_copy(pic, &s->host_pic);
        pic = NULL;
    }
    gpu_unpack_readback(pic, NULL, s->h_out, g->geo);
    if (mv)
        gpu_unpack_vectors(mv, s->h_mv, g->geo);
    return 0;
}

static int cuda_intra_costs(GpuContext *g, int slot, uint32_t *intra, MpeError *err)
{
    const CudaSlot *s = &g->slot[slot];
    if (!g->intra_costs || !s->used)   /* counted at every submit when asked for */
        return -ENOSYS;
    CU_TRY(cudaSetDevice(g->dev), "cudaSetDevice");
    CU_TRY(cudaEventSynchronize(s->ev_planes_out), "front-end work (intra costs)");
    memcpy(intra, s->h_intra, (size_t)g->geo->mb_w * g->geo->mb_h * sizeof(uint32_t));
    return 0;
}

static const MpePicture *cuda_host_planes(GpuContext *g, int slot)
{
    const CudaSlot *s = &g->slot[slot];
    return s->converted_on_device ? NULL : &s->host_pic;
}

static double elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms : 0.0;
}

static int cuda_timings(GpuContext *g, int slot, int has_mv, GpuTimings *t)
{
    const CudaSlot *s = &g->slot[slot];
    if (cudaSetDevice(g->dev) != cudaSuccess)
        return 0;
    t->upload_ms = elapsed_ms(s->ev_start, s->ev_uploaded);
    t->convert_ms = s->converted_on_device ? elapsed_ms(s->ev_uploaded, s->ev_converted) : 0;
    t->readback_ms = elapsed_ms(s->ev_converted, s->ev_planes_out);
    if (has_mv) {
        t->search_ms = elapsed_ms(s->ev_search0, s->ev_search1);
        t->readback_ms += elapsed_ms(s->ev_search1, s->ev_mv_out);
    }
    return 0;
}

extern "C" const GpuBackend gpu_backend_cuda = {
    "cuda",
    cuda_probe,
    cuda_open,
    cuda_build,
    cuda_alloc_slot,
    cuda_close,
    cuda_input,
    cuda_submit,
    cuda_search,
    cuda_wait,
    cuda_download,
    cuda_timings,
    1,   /* the hierarchical search: the pyramid built at submit (cfg->pyramid) */
    cuda_host_planes,   /* a YUV frame's: RGB frames' planes are downloaded */
    cuda_intra_costs,
};
