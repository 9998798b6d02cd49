// Prefill GEMMs on the matrix units: out = x · Wᵀ for many tokens at once, with
// W in the MLX affine layout of quant.metal read in place (no repacking). The
// decode GEMVs (quant.metal) read every weight once per token; here a weight
// tile is dequantized once into threadgroup memory and serves QG_BM tokens.
//
// Numerics (the contract the CPU reference follows), by the scalar exact:
//   exact = 1: out = bf16(Σ_j x_j·w_j), every weight w = sc·c + bi taken
//     exactly (f32), the products summed in f32 in an order of the matrix
//     unit's choosing: qmatmul_bf16's sum in another order. CUDA's unit
//     takes bf16, so each weight is staged as two bf16 tiles, hi = bf16(w)
//     and lo = bf16(w − hi), both multiplied by the same x tile (hi + lo is
//     w to within 2^-17 of it); Metal's f32 tiles hold w itself.
//   exact = 0: each weight rounded to bf16 before its products, as MLX's
//     quantized GEMM (qmm) stages it: the hi tile alone, half the products.
//     That rounding, about as large as the output's own, takes a prompt's
//     logits measurably further from an exact forward than a decode step's
//     (docs/numerics.md); the engine's switch prefill-exact-weights chooses.
// 4-bit weights on sm_80+ round the exact sc·c + bi to bf16 once
// (qg_dequant4); the f32 forms round it to f32 first, which differs only
// where that lands on a bf16 tie.

// ---- The matrix unit, per backend ------------------------------------------
// A SIMD-group multiplies 16×16 tiles held in threadgroup memory:
//   MMA_T                     the element type of the staged tiles
//   qg_put_w(hi, lo, v)       a weight staged: v itself (Metal), or its bf16
//                             hi and lo parts in the two weight tiles (CUDA)
//   mma_acc                   a 16×16 f32 accumulator spread over the lanes
//   mma_zero(acc)
//   mma_16x16x16(acc, A, lda, B, ldb, lane)
//                             acc += A·Bᵀ; A is [16 m][16 k] and B [16 n][16 k],
//                             row-major with leading dimensions lda, ldb
//   mma_store(acc, C, ldc, lane)
//                             C[m·ldc + n] = acc, C threadgroup f32
// Metal: simdgroup_float8x8 (every Apple GPU with SIMD-group matrices); the
// tiles are f32: x's bf16 values and the weights' f32 values. CUDA: mma.sync m16n8k16 with bf16
// inputs (sm_80 and newer); older targets (the embedded compute_75 PTX) take a
// plain loop with the same accumulator layout.
#if defined(__METAL_VERSION__)

typedef float MMA_T;
// f32 tiles: 32 inputs per step keeps both tiles in 27 KB of the 32 KB.
#define QG_BK 32
#define QG_LD 36  // QG_BK + 4 floats: staggers the rows across banks
#define QG_SMEM 6912
// The weights' tiles hold f32 values: no lo tile (QG_SPLIT 0).
#define QG_SPLIT 0
// mma_put8 stores the eight bf16 of v (low half of each word first) at dst[0..8).
INLINE void mma_put8(threadgroup MMA_T *dst, u32x4 v) {
  for (int i = 0; i < 4; i++) {
    dst[2 * i] = as_float(v[i] << 16);
    dst[2 * i + 1] = as_float(v[i] & 0xffff0000u);
  }
}

struct mma_acc {
  simdgroup_float8x8 c[2][2];
};

// mma_warp is a SIMD-group's 32×32 share of a tile: four 16×16 accumulators,
// (i, j) at c[2i + j].
struct mma_warp {
  mma_acc c[4];
};

INLINE void mma_zero(thread mma_acc &acc) {
  UNROLL for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) acc.c[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
}

INLINE void mma_16x16x16(thread mma_acc &acc, threadgroup const MMA_T *A, int lda, threadgroup const MMA_T *B,
                         int ldb, int lane) {
  for (int kk = 0; kk < 16; kk += 8) {
    simdgroup_float8x8 a[2], b[2];
    UNROLL for (int i = 0; i < 2; i++) simdgroup_load(a[i], A + i * 8 * lda + kk, (ulong)lda);
    // B rows are output columns: load them transposed, [k][n].
    UNROLL for (int j = 0; j < 2; j++) simdgroup_load(b[j], B + j * 8 * ldb + kk, (ulong)ldb, ulong2(0), true);
    UNROLL for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) simdgroup_multiply_accumulate(acc.c[i][j], a[i], b[j], acc.c[i][j]);
  }
}

INLINE void mma_store(thread mma_acc &acc, threadgroup float *C, int ldc, int lane) {
  UNROLL for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) simdgroup_store(acc.c[i][j], C + i * 8 * ldc + j * 8, (ulong)ldc);
}

// qg_put_w stores the weight v at hi[0]: v itself (Metal's tiles hold it
// whole) when exact, else rounded to bf16; qg_put_w2 the weights a, b at
// hi[0], hi[1].
INLINE void qg_put_w(threadgroup MMA_T *hi, threadgroup MMA_T *lo, float v, bool exact) {
  hi[0] = exact ? v : round_bf16(v);
}
INLINE void qg_put_w2(threadgroup MMA_T *hi, threadgroup MMA_T *lo, float a, float b, bool exact) {
  hi[0] = exact ? a : round_bf16(a);
  hi[1] = exact ? b : round_bf16(b);
}

#else  // CUDA

typedef bf16_t MMA_T;
// bf16 tiles: 64 inputs per step (27 KB for both tiles); each step's global
// loads are issued before the previous step's products, which hides their
// latency.
#define QG_BK 64
#define QG_LD 72  // QG_BK + 8 bf16: rows 16-byte aligned, ldmatrix rows on distinct banks
// The x tile and the weights' hi and lo tiles: (QG_BM + 2·QG_BN)·QG_LD bf16.
#define QG_SMEM 9216
// Each weight is staged as two bf16 tiles, hi and lo (QG_SPLIT 1).
#define QG_SPLIT 1
INLINE void mma_put8(threadgroup MMA_T *dst, u32x4 v) { *(threadgroup u32x4 *)dst = v; }
// qg_bf16x2 is two values rounded to bf16, a in the low half (one cvt on
// sm_80+: round to nearest even as f32_to_bf16, which differs only for NaNs).
INLINE uint qg_bf16x2(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return cvt_bf16x2(a, b);
#else
  return (uint)f32_to_bf16(a) | ((uint)f32_to_bf16(b) << 16);
#endif
}
// qg_lo2 is the pair of lo parts of the weights a, b (f32) whose hi parts are
// the bf16 pair h: w − hi is exact in f32 (hi is w rounded), then rounded.
INLINE uint qg_lo2(float a, float b, uint h) {
  return qg_bf16x2(a - as_float(h << 16), b - as_float(h & 0xffff0000u));
}
// qg_put_w2 stores the weights a, b as hi at hi[0..1] and, when exact, lo
// at lo[0..1].
INLINE void qg_put_w2(threadgroup MMA_T *hi, threadgroup MMA_T *lo, float a, float b, bool exact) {
  uint h = qg_bf16x2(a, b);
  *(threadgroup uint *)hi = h;
  if (exact) *(threadgroup uint *)lo = qg_lo2(a, b, h);
}
// qg_put_w stores one weight v as hi and, when exact, lo.
INLINE void qg_put_w(threadgroup MMA_T *hi, threadgroup MMA_T *lo, float v, bool exact) {
  bf16_t h = f32_to_bf16(v);
  hi[0] = h;
  if (exact) lo[0] = f32_to_bf16(v - bf16_to_f32(h));
}

// The m16n8k16 accumulator layout, for both 8-column halves h of the 16×16
// tile: lane = 4g + q/2 holds c[4h + i] at row g + 8·(i/2), column 8h + q + i%2.
struct mma_acc {
  float c[8];
};

// mma_warp is a SIMD-group's 32×32 share of a tile: four 16×16 accumulators,
// (i, j) at c[2i + j].
struct mma_warp {
  mma_acc c[4];
};

INLINE void mma_zero(thread mma_acc &acc) {
  UNROLL for (int i = 0; i < 8; i++) acc.c[i] = 0.0f;
}

// mma_16x16x16 is the plain-loop product of the targets without mma.sync
// (below sm_80); sm_80 and later go through mma_warp_32x32x16 with ldmatrix.
INLINE void mma_16x16x16(thread mma_acc &acc, threadgroup const MMA_T *A, int lda, threadgroup const MMA_T *B,
                         int ldb, int lane) {
  int g = lane >> 2, q = (lane & 3) * 2;
  UNROLL for (int i = 0; i < 8; i++) {
    int m = g + 8 * ((i & 3) >> 1), n = 8 * (i >> 2) + q + (i & 1);
    float s = 0.0f;
    UNROLL for (int k = 0; k < 16; k++) s += bf16_to_f32(A[m * lda + k]) * bf16_to_f32(B[n * ldb + k]);
    acc.c[i] += s;
  }
}

INLINE void mma_store(thread mma_acc &acc, threadgroup float *C, int ldc, int lane) {
  int g = lane >> 2, q = (lane & 3) * 2;
  UNROLL for (int i = 0; i < 8; i++) {
    int m = g + 8 * ((i & 3) >> 1), n = 8 * (i >> 2) + q + (i & 1);
    C[m * ldc + n] = acc.c[i];
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define MMA_WARP_NATIVE 1
// ldsm_x4 loads four 8×8 bf16 matrices; lane l gives the address of row l%8 of
// matrix l/8 (16-byte aligned) and gets its fragment of each.
INLINE void ldsm_x4(threadgroup const MMA_T *row, thread uint *r) { ldsm_x4_at(smem_u32(row), r); }

// mma_warp_32x32x16: acc[2i + j] (16×16 each) += A[16i.., :16]·B[16j.., :16]ᵀ for a
// warp's 32×32 tile: four ldmatrix.x4 and eight mma.sync.
INLINE void mma_warp_32x32x16(thread mma_warp &acc, threadgroup const MMA_T *A, int lda, threadgroup const MMA_T *B,
                              int ldb, int lane) {
  int mi = lane >> 3, r = lane & 7;
  uint a[2][4], b[2][4];
  UNROLL for (int i = 0; i < 2; i++) ldsm_x4(A + (16 * i + (mi & 1) * 8 + r) * lda + (mi >> 1) * 8, a[i]);
  UNROLL for (int j = 0; j < 2; j++) ldsm_x4(B + (16 * j + (mi >> 1) * 8 + r) * ldb + (mi & 1) * 8, b[j]);
  UNROLL for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      for (int h = 0; h < 2; h++) {
        float *c = acc.c[2 * i + j].c + 4 * h;
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][2 * h]), "r"(b[j][2 * h + 1]));
      }
}

// mma_warp_at is mma_warp_32x32x16 from the lane's ldmatrix addresses,
// worked out once per tile (mma_lane_a, mma_lane_b) and moved along k by the
// caller: converting every pointer to the shared window took most of a
// GEMM step's instructions (H200: 650 a SIMD-group for 32 products).
INLINE void mma_warp_at(thread mma_warp &acc, uint a, uint b, int lda, int ldb) {
  uint fa[2][4], fb[2][4];
  UNROLL for (int i = 0; i < 2; i++) ldsm_x4_at(a + (uint)(32 * i * lda), fa[i]);
  UNROLL for (int j = 0; j < 2; j++) ldsm_x4_at(b + (uint)(32 * j * ldb), fb[j]);
  UNROLL for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      for (int h = 0; h < 2; h++) {
        float *c = acc.c[2 * i + j].c + 4 * h;
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(fa[i][0]), "r"(fa[i][1]), "r"(fa[i][2]), "r"(fa[i][3]), "r"(fb[j][2 * h]), "r"(fb[j][2 * h + 1]));
      }
}

// mma_warp_at_split is mma_warp_at over the hi tile at b and then the lo tile
// at blo, with the x fragments loaded once: acc += A·(Bhi + Blo)ᵀ.
INLINE void mma_warp_at_split(thread mma_warp &acc, uint a, uint b, uint blo, int lda, int ldb) {
  uint fa[2][4], fb[2][4];
  UNROLL for (int i = 0; i < 2; i++) ldsm_x4_at(a + (uint)(32 * i * lda), fa[i]);
  UNROLL for (int part = 0; part < 2; part++) {
    UNROLL for (int j = 0; j < 2; j++) ldsm_x4_at((part == 0 ? b : blo) + (uint)(32 * j * ldb), fb[j]);
    UNROLL for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++)
        for (int h = 0; h < 2; h++) {
          float *c = acc.c[2 * i + j].c + 4 * h;
          asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
              "{%0,%1,%2,%3};"
              : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
              : "r"(fa[i][0]), "r"(fa[i][1]), "r"(fa[i][2]), "r"(fa[i][3]), "r"(fb[j][2 * h]), "r"(fb[j][2 * h + 1]));
        }
  }
}

// mma_lane_a / mma_lane_b: the shared-window address of the lane's ldmatrix
// row in a warp's 32-row A tile (rows of m) and B tile (rows of n), at k = 0,
// as mma_warp_32x32x16 reads them.
INLINE uint mma_lane_a(threadgroup const MMA_T *A, int lda, int lane) {
  int mi = lane >> 3, r = lane & 7;
  return smem_u32(A + ((mi & 1) * 8 + r) * lda + (mi >> 1) * 8);
}
INLINE uint mma_lane_b(threadgroup const MMA_T *B, int ldb, int lane) {
  int mi = lane >> 3, r = lane & 7;
  return smem_u32(B + ((mi >> 1) * 8 + r) * ldb + (mi & 1) * 8);
}
#endif

#endif

// mma_warp_32x32x16 is native on sm_80+ (above); elsewhere it is four 16×16
// products.
#ifndef MMA_WARP_NATIVE
INLINE void mma_warp_32x32x16(thread mma_warp &acc, threadgroup const MMA_T *A, int lda, threadgroup const MMA_T *B,
                              int ldb, int lane) {
  UNROLL for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) mma_16x16x16(acc.c[2 * i + j], A + 16 * i * lda, lda, B + 16 * j * ldb, ldb, lane);
}
#endif

// ---- The tile ----------------------------------------------------------------
// A threadgroup of QG_THREADS (8 SIMD-groups, 4×2, each 32×32) computes a tile
// of QG_BM token rows × QG_BN output rows, stepping over the input width QG_BK
// (per backend, above) at a time. x rows and output rows go through the tile's
// row maps arow / orow, so the same tile serves the dense GEMM (row r of the
// tile is token m0 + r) and the grouped expert GEMM (row r is a (token, slot)
// pair of one expert). For 4- and 8-bit weights each step's global loads go to
// registers first (qg_fetch_x, qg_fetch_w) and are issued before the previous
// step's products, the weights two steps ahead (they come from DRAM; x from
// L2); other widths stage synchronously.
// 128 token rows a tile: a step's weights are dequantized once for twice the
// products of a 64-row tile (ncu: the 64-row tile issued 8 instructions of
// staging and dequantizing per matrix product, the tensor pipe 12% busy).
// QG_SMEM holds the tiles ((QG_BM + QG_BN + QG_SPLIT·QG_BN)·QG_LD elements), and after the
// last step half the result tile (QG_BM / 2 rows of QG_LDC floats) in their place.
#define QG_BM 128
#define QG_BN 64
#define QG_THREADS 256
#define QG_LDC 68
// Two tiles per multiprocessor (16 SIMD-groups): at most 128 registers a
// thread, which ptxas meets without spilling; left to itself it took 132 and
// so fit one tile, and the matrix units idled through each tile's barriers.
#define KERNEL_BOUNDS_qgemm_bf16 BOUNDS(QG_THREADS, 2)
#define KERNEL_BOUNDS_qgemm_gather_bf16 BOUNDS(QG_THREADS, 2)
#define KERNEL_BOUNDS_qgemm_multi_bf16 BOUNDS(QG_THREADS, 2)
// Per thread and step: 16-byte pieces of x (eight bf16 each), and weight words
// of 8-bit codes (4-bit codes need half as many).
#define QG_XV (QG_BM * QG_BK / 8 / QG_THREADS)
#define QG_WW (QG_BN * QG_BK / 4 / QG_THREADS)

// qg_plan is a thread's fixed share of every step, worked out once per tile:
// the same x column of rows tid/(QG_BK/8) + n·(QG_THREADS·8/QG_BK), the same
// weight word of rows tid/words + n·(QG_THREADS/words). Offsets are element
// offsets from x, w and scales (−1: a row past the tile's end).
struct qg_plan {
  int xoff[QG_XV];
  int woff[QG_WW];
  int soff[QG_WW];
  int xcol;   // bf16 column of the thread's x pieces within a step
  int wcol;   // weight word of the thread within a row's step
  int words;  // weight words per row and step (4 and 8 bits)
  int wk;     // the first input of the thread's word within a step
  int gsh;    // log2 of the group size, −1 if it is not a power of two
};

INLINE qg_plan qg_make_plan(threadgroup const int *arow, int nrows, int o0, int In, int Out, int bits, int gs,
                            int tid) {
  qg_plan p;
  p.xcol = (tid % (QG_BK / 8)) * 8;
  UNROLL for (int n = 0; n < QG_XV; n++) {
    int r = tid / (QG_BK / 8) + n * (QG_THREADS * 8 / QG_BK);
    p.xoff[n] = r < nrows ? arow[r] * In + p.xcol : -1;
  }
  p.words = bits == 4 || bits == 8 ? QG_BK * bits / 32 : 1;
  p.wcol = tid % p.words;
  p.wk = bits == 4 ? p.wcol * 8 : p.wcol * 4;
  p.gsh = -1;
  for (int b = 0; b < 16; b++)
    if (gs == 1 << b) p.gsh = b;
  int wstride = In / 32 * bits, sstride = In / gs;
  UNROLL for (int n = 0; n < QG_WW; n++) {
    int o = o0 + tid / p.words + n * (QG_THREADS / p.words);
    bool ok = (bits == 4 || bits == 8) && n < QG_BN * p.words / QG_THREADS && o < Out;
    p.woff[n] = ok ? o * wstride + p.wcol : -1;
    p.soff[n] = ok ? o * sstride : -1;
  }
  return p;
}

// qg_xregs and qg_wregs are one step's x and weights for one thread.
struct qg_xregs {
  u32x4 x[QG_XV];
};
struct qg_wregs {
  uint w[QG_WW];
  uint sb[QG_WW];  // the word's scale (low half) and bias (high half), bf16
};

// qg_fetch_x and qg_fetch_w load the step at k0 (zeros past a row's end or
// the tile's). No divisions by the runtime width or group size: the step's
// loop ran 650 instructions a SIMD-group for its 32 matrix products (H200,
// ncu), six 32-bit divisions among them.
INLINE void qg_fetch_x(thread qg_xregs &g, thread const qg_plan &p, device const bf16_t *x, int k0, int In) {
  bool xin = k0 + p.xcol < In;
  UNROLL for (int n = 0; n < QG_XV; n++) {
    g.x[n] = p.xoff[n] >= 0 && xin ? *(device const u32x4 *)(x + p.xoff[n] + k0) : u32x4_zero();
  }
}
INLINE void qg_fetch_w(thread qg_wregs &g, thread const qg_plan &p, device const uint *w, device const bf16_t *scales,
                       device const bf16_t *biases, int k0, int In, int bits, int gs) {
  int kw = k0 + p.wk;  // the word's first input
  bool win = kw < In;
  int g0 = p.gsh >= 0 ? kw >> p.gsh : kw / gs;
  int wofs = (k0 * bits) >> 5;  // k0's word in a row
  UNROLL for (int n = 0; n < QG_WW; n++) {
    bool ok = p.woff[n] >= 0 && win;
    g.w[n] = ok ? w[p.woff[n] + wofs] : 0u;
    g.sb[n] = ok ? (uint)scales[p.soff[n] + g0] | ((uint)biases[p.soff[n] + g0] << 16) : 0u;
  }
}

#if defined(MMA_WARP_NATIVE)
// qg_dequant4: a word's eight 4-bit codes as the weights sc·c + bi, in order,
// two at a time, as bf16 hi and (when exact) lo parts: a byte's two codes as
// bf16 of 128 + c (byte_perm and a mask), less 128 (exact); hi by one
// fma.rn.bf16x2, which rounds the exact sc·c + bi once; lo from the f32
// weight less hi (exact), rounded. The f32 form of hi took about twice the
// instructions, in the step's loop, which ncu showed issue-bound.
INLINE void qg_dequant4(uint w, uint sb, bool exact, thread u32x4 &hi, thread u32x4 &lo) {
  uint sc2 = __byte_perm(sb, 0u, 0x1010u), bi2 = __byte_perm(sb, 0u, 0x3232u), w4 = w >> 4;
  float sc = as_float(sb << 16), bi = as_float(sb & 0xffff0000u);
  uint h[4], l[4];
  UNROLL for (int b = 0; b < 4; b++) {
    uint pair = (__byte_perm(w, w4, (uint)(b | ((4 + b) << 8))) & 0x000f000fu) | 0x43004300u;
    uint c;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(c) : "r"(pair), "r"(0x3f803f80u), "r"(0xc300c300u));
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(h[b]) : "r"(sc2), "r"(c), "r"(bi2));
    l[b] = exact ? qg_lo2(sc * as_float(c << 16) + bi, sc * as_float(c & 0xffff0000u) + bi, h[b]) : 0u;
  }
  hi = u32x4_make(h[0], h[1], h[2], h[3]);
  lo = u32x4_make(l[0], l[1], l[2], l[3]);
}
#endif

// qg_put writes a fetched step into the tiles As [QG_BM][QG_LD], Bs and Bl
// [QG_BN][QG_LD], dequantizing the weights on the way (qg_put_w: their hi and
// lo parts on CUDA); other widths than 4 and 8 bits dequantize from device
// memory here.
INLINE void qg_put(thread qg_xregs &gx, thread qg_wregs &g, thread const qg_plan &p, threadgroup MMA_T *As,
                   threadgroup MMA_T *Bs, threadgroup MMA_T *Bl, device const uint *w, device const bf16_t *scales,
                   device const bf16_t *biases, int o0, int k0, int In, int Out, int bits, int gs, bool exact, int tid) {
  UNROLL for (int n = 0; n < QG_XV; n++) {
    int r = tid / (QG_BK / 8) + n * (QG_THREADS * 8 / QG_BK);
    mma_put8(As + r * QG_LD + p.xcol, gx.x[n]);
  }
  if (bits == 4) {
#if defined(MMA_WARP_NATIVE)
    UNROLL for (int n = 0; n < QG_WW; n++) {
      if (n >= QG_BN * p.words / QG_THREADS) continue;
      int r = tid / p.words + n * (QG_THREADS / p.words);
      u32x4 hi, lo;
      qg_dequant4(g.w[n], g.sb[n], exact, hi, lo);
      *(threadgroup u32x4 *)(Bs + r * QG_LD + p.wcol * 8) = hi;
      if (exact) *(threadgroup u32x4 *)(Bl + r * QG_LD + p.wcol * 8) = lo;
    }
    return;
#endif
    // Codes m and m + 4 of a word at once, as bf16 of value 128 + code
    // (quant.metal's GEMV does the same); sc·(128 + c) + (bi − 128·sc) is
    // sc·c + bi to within f32 rounding.
    UNROLL for (int n = 0; n < QG_WW; n++) {
      if (n >= QG_BN * p.words / QG_THREADS) continue;
      int r = tid / p.words + n * (QG_THREADS / p.words);
      threadgroup MMA_T *dst = Bs + r * QG_LD + p.wcol * 8, *dlo = Bl + r * QG_LD + p.wcol * 8;
      float sc = as_float(g.sb[n] << 16), bo = as_float(g.sb[n] & 0xffff0000u) - 128.0f * sc;
      float v[8];
      UNROLL for (int m = 0; m < 4; m++) {
        uint pair = ((g.w[n] >> (4u * (uint)m)) & 0x000f000fu) | 0x43004300u;
        v[m] = sc * as_float(pair << 16) + bo;
        v[m + 4] = sc * as_float(pair & 0xffff0000u) + bo;
      }
      UNROLL for (int j = 0; j < 8; j += 2) qg_put_w2(dst + j, dlo + j, v[j], v[j + 1], exact);
    }
    return;
  }
  if (bits == 8) {
    int per = 4;
    uint mask = 0xffu;
    UNROLL for (int n = 0; n < QG_WW; n++) {
      if (n >= QG_BN * p.words / QG_THREADS) continue;
      int r = tid / p.words + n * (QG_THREADS / p.words);
      threadgroup MMA_T *dst = Bs + r * QG_LD + p.wcol * per, *dlo = Bl + r * QG_LD + p.wcol * per;
      float sc = as_float(g.sb[n] << 16), bi = as_float(g.sb[n] & 0xffff0000u);
      for (int j = 0; j < per; j += 2)
        qg_put_w2(dst + j, dlo + j, sc * code_f(g.w[n], (uint)(bits * j), mask) + bi,
                  sc * code_f(g.w[n], (uint)(bits * (j + 1)), mask) + bi, exact);
    }
    return;
  }
  int wstride = In / 32 * bits, sstride = In / gs;
  for (int i = tid; i < QG_BN * QG_BK; i += QG_THREADS) {
    int r = i / QG_BK, j = i % QG_BK, o = o0 + r;
    float v = 0.0f;
    if (o < Out && k0 + j < In) {
      int g0 = (k0 + j) / gs;
      v = bf16_to_f32(scales[o * sstride + g0]) * (float)qcode(w + o * wstride, k0 + j, bits) +
          bf16_to_f32(biases[o * sstride + g0]);
    }
    qg_put_w(Bs + r * QG_LD + j, Bl + r * QG_LD + j, v, exact);
  }
}

// qg_step is one step of qgemm_tile_of at k0: stage it (gx, gw), then fetch
// the next step's x into gx and the weights two steps on into gw while the
// SIMD-groups multiply.
INLINE void qg_step(thread mma_warp &acc, thread qg_xregs &gx, thread qg_wregs &gw, thread const qg_plan &p,
                    device const bf16_t *x, device const uint *w, device const bf16_t *scales,
                    device const bf16_t *biases, threadgroup MMA_T *As, threadgroup MMA_T *Bs, threadgroup MMA_T *Bl,
                    uint aLane, uint bLane, int wm, int wn, int nrows, int o0, int k0, int In, int Out, int bits,
                    int gs, bool exact, int tid, int lane) {
  qg_put(gx, gw, p, As, Bs, Bl, w, scales, biases, o0, k0, In, Out, bits, gs, exact, tid);
  BARRIER();
  if (k0 + QG_BK < In) qg_fetch_x(gx, p, x, k0 + QG_BK, In);
  if (k0 + 2 * QG_BK < In) qg_fetch_w(gw, p, w, scales, biases, k0 + 2 * QG_BK, In, bits, gs);
  int width = imin(QG_BK, In - k0);  // a multiple of 32
  if (wm < nrows) {  // a SIMD-group whose rows are all past the tile's end skips (uniform)
#if defined(MMA_WARP_NATIVE)
    // The lo tile lies QG_BN rows (2·QG_BN·QG_LD bytes) after the hi tile.
    if (exact) {
      UNROLL for (int kk = 0; kk < QG_BK; kk += 16) {
        if (kk < width)
          mma_warp_at_split(acc, aLane + (uint)(2 * kk), bLane + (uint)(2 * kk),
                            bLane + (uint)(2 * kk + 2 * QG_BN * QG_LD), QG_LD, QG_LD);
      }
    } else {
      UNROLL for (int kk = 0; kk < QG_BK; kk += 16) {
        if (kk < width) mma_warp_at(acc, aLane + (uint)(2 * kk), bLane + (uint)(2 * kk), QG_LD, QG_LD);
      }
    }
#else
    for (int kk = 0; kk < width; kk += 16) {
      mma_warp_32x32x16(acc, As + wm * QG_LD + kk, QG_LD, Bs + wn * QG_LD + kk, QG_LD, lane);
      if (QG_SPLIT && exact) mma_warp_32x32x16(acc, As + wm * QG_LD + kk, QG_LD, Bl + wn * QG_LD + kk, QG_LD, lane);
    }
#endif
  }
  BARRIER();
}

// qgemm_tile_of: out[orow[r], o0 + n] = bf16(Σ_j x[arow[r], j]·W[o0 + n, j])
// for r < nrows, o0 + n < Out. Every thread of the threadgroup calls it. In is a
// multiple of 32; where it is not one of QG_BK the last step is staged with
// zeros past the row's end and multiplies only up to it.
INLINE void qgemm_tile_of(device const bf16_t *x, device const uint *w, device const bf16_t *scales,
                          device const bf16_t *biases, device bf16_t *out, threadgroup const int *arow,
                          threadgroup const int *orow, int nrows, int o0, int In, int Out, int bits, int gs,
                          bool exact, threadgroup float *smem, int tid, int lane, int simd) {
  threadgroup MMA_T *As = (threadgroup MMA_T *)smem;
  threadgroup MMA_T *Bs = As + QG_BM * QG_LD;
  threadgroup MMA_T *Bl = Bs + QG_SPLIT * QG_BN * QG_LD;  // the lo tile (Bs itself where there is none)
  int wm = (simd >> 1) * 32, wn = (simd & 1) * 32;
  mma_warp acc;
  UNROLL for (int i = 0; i < 4; i++) mma_zero(acc.c[i]);
  qg_plan p = qg_make_plan(arow, nrows, o0, In, Out, bits, gs, tid);
#if defined(MMA_WARP_NATIVE)
  uint aLane = mma_lane_a(As + wm * QG_LD, QG_LD, lane), bLane = mma_lane_b(Bs + wn * QG_LD, QG_LD, lane);
#else
  uint aLane = 0, bLane = 0;  // (the native path's)
#endif
  qg_xregs gx;
  qg_wregs g0, g1;  // the weights of even and odd steps, each fetched two steps ahead
  qg_fetch_x(gx, p, x, 0, In);
  qg_fetch_w(g0, p, w, scales, biases, 0, In, bits, gs);
  qg_fetch_w(g1, p, w, scales, biases, QG_BK, In, bits, gs);
  for (int k0 = 0; k0 < In; k0 += 2 * QG_BK) {
    qg_step(acc, gx, g0, p, x, w, scales, biases, As, Bs, Bl, aLane, bLane, wm, wn, nrows, o0, k0, In, Out, bits, gs,
            exact, tid, lane);
    if (k0 + QG_BK < In)
      qg_step(acc, gx, g1, p, x, w, scales, biases, As, Bs, Bl, aLane, bLane, wm, wn, nrows, o0, k0 + QG_BK, In, Out,
              bits, gs, exact, tid, lane);
  }
  // The result leaves through threadgroup memory half a tile at a time (the
  // whole tile in f32 would not fit Metal's 32 KB).
  for (int h0 = 0; h0 < QG_BM; h0 += QG_BM / 2) {
    if (wm >= h0 && wm < h0 + QG_BM / 2) {
      UNROLL for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
          mma_store(acc.c[2 * i + j], smem + (wm - h0 + 16 * i) * QG_LDC + wn + 16 * j, QG_LDC, lane);
    }
    BARRIER();
    for (int i = tid; i < QG_BM / 2 * QG_BN; i += QG_THREADS) {
      int r = h0 + i / QG_BN, n = i % QG_BN;
      if (r < nrows && o0 + n < Out)
        out[(ulong)orow[r] * (ulong)Out + (ulong)(o0 + n)] = f32_to_bf16(smem[(r - h0) * QG_LDC + n]);
    }
    BARRIER();
  }
}

// qgemm_tile is qgemm_tile_of with the 4-bit case compiled apart (bits a
// constant there: no branches on the width in the step's loop).
INLINE void qgemm_tile(device const bf16_t *x, device const uint *w, device const bf16_t *scales,
                       device const bf16_t *biases, device bf16_t *out, threadgroup const int *arow,
                       threadgroup const int *orow, int nrows, int o0, int In, int Out, int bits, int gs,
                       bool exact, threadgroup float *smem, int tid, int lane, int simd) {
  if (bits == 4)
    qgemm_tile_of(x, w, scales, biases, out, arow, orow, nrows, o0, In, Out, 4, gs, exact, smem, tid, lane, simd);
  else
    qgemm_tile_of(x, w, scales, biases, out, arow, orow, nrows, o0, In, Out, bits, gs, exact, smem, tid, lane, simd);
}

// qgemm_bf16: out[t, o] = bf16(Σ_j x[t, j]·W[o, j]) (W as exact says), the prefill form of
// qmatmul_bf16. Token tiles vary fastest in the grid, so the threadgroups that
// share a weight tile run together.
// launch: grid(ceil(T, QG_BM) * ceil(Out, QG_BN)) group(QG_THREADS)
KERNEL(qgemm_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const uint, w, 1),
       BUFFER(const bf16_t, scales, 2),
       BUFFER(const bf16_t, biases, 3),
       BUFFER(bf16_t, out, 4),
       PARAM(int, T, 5),
       PARAM(int, In, 6),
       PARAM(int, Out, 7),
       PARAM(int, bits, 8),
       PARAM(int, gs, 9),
       PARAM(int, exact, 10)) {
  GRID_WAIT_COMPUTE();
  TG_MEM_ALIGNED16(float, smem, QG_SMEM);  // ldmatrix reads 16-byte rows
  TG_MEM(int, rows, QG_BM);
  int mtiles = (T + QG_BM - 1) / QG_BM;
  int m0 = (TGID_X % mtiles) * QG_BM, o0 = (TGID_X / mtiles) * QG_BN;
  for (int r = TID_X; r < QG_BM; r += TG_SIZE_X) rows[r] = m0 + r;
  BARRIER();
  qgemm_tile(x, w, scales, biases, out, rows, rows, imin(QG_BM, T - m0), o0, In, Out, bits, gs, exact != 0, smem,
             TID_X, LANE, SIMD_ID);
}

// qgemm_multi_bf16: qgemm_bf16 for up to four matrices over the same x [T, In]
// (matrix I: OutI rows, 0 for unused, its own bits and group size) in one
// dispatch, so that a prompt's small projections (the shared expert's gate and
// up, the attention's k and v) fill the GPU together instead of in turn.
// Token tiles vary fastest, then each matrix's row tiles in order.
// launch: grid(ceil(T, QG_BM) * (ceil(Out0, QG_BN) + ceil(Out1, QG_BN) + ceil(Out2, QG_BN) + ceil(Out3, QG_BN))) group(QG_THREADS)
KERNEL(qgemm_multi_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const uint, w0, 1),
       BUFFER(const bf16_t, scales0, 2),
       BUFFER(const bf16_t, biases0, 3),
       BUFFER(bf16_t, out0, 4),
       BUFFER(const uint, w1, 5),
       BUFFER(const bf16_t, scales1, 6),
       BUFFER(const bf16_t, biases1, 7),
       BUFFER(bf16_t, out1, 8),
       BUFFER(const uint, w2, 9),
       BUFFER(const bf16_t, scales2, 10),
       BUFFER(const bf16_t, biases2, 11),
       BUFFER(bf16_t, out2, 12),
       BUFFER(const uint, w3, 13),
       BUFFER(const bf16_t, scales3, 14),
       BUFFER(const bf16_t, biases3, 15),
       BUFFER(bf16_t, out3, 16),
       PARAM(int, T, 17),
       PARAM(int, In, 18),
       PARAM(int, Out0, 19),
       PARAM(int, Out1, 20),
       PARAM(int, Out2, 21),
       PARAM(int, Out3, 22),
       PARAM(int, fmt0, 23),
       PARAM(int, fmt1, 24),
       PARAM(int, fmt2, 25),
       PARAM(int, fmt3, 26),
       PARAM(int, exact, 27)) {
  GRID_WAIT_COMPUTE();
  TG_MEM_ALIGNED16(float, smem, QG_SMEM);  // ldmatrix reads 16-byte rows
  TG_MEM(int, rows, QG_BM);
  int mtiles = (T + QG_BM - 1) / QG_BM;
  int local = 0;
  qslot q = qslot_of(TGID_X / mtiles, (Out0 + QG_BN - 1) / QG_BN, (Out1 + QG_BN - 1) / QG_BN, (Out2 + QG_BN - 1) / QG_BN,
                     w0, scales0, biases0, out0, w1, scales1, biases1, out1, w2, scales2, biases2, out2, w3, scales3,
                     biases3, out3, Out0, Out1, Out2, Out3, fmt0, fmt1, fmt2, fmt3, &local);
  int m0 = (TGID_X % mtiles) * QG_BM, o0 = local * QG_BN;
  if (o0 >= q.Out) return;  // uniform across the threadgroup (past the last matrix's tiles)
  for (int r = TID_X; r < QG_BM; r += TG_SIZE_X) rows[r] = m0 + r;
  BARRIER();
  qgemm_tile(x, q.w, q.scales, q.biases, q.out, rows, rows, imin(QG_BM, T - m0), o0, In, q.Out, q.bits, q.gs,
             exact != 0, smem, TID_X, LANE, SIMD_ID);
}

// MOE_SORT_THREADS is at most MOE_SORT_MAX_EXPERTS: count holds E·S entries.
#define MOE_SORT_THREADS 1024
#define MOE_SORT_MAX_EXPERTS 1024
#define MOE_SORT_CHUNK 4096
#define MOE_SORT_ILP 8
// The warp-match form of moe_sort_i32 (CUDA): MOE_SORT_MATCH_WARPS SIMD-groups
// count and place the pairs, their per-expert counts in the chunk buffer
// (MOE_SORT_MATCH_WARPS · MOE_SORT_MATCH_EXPERTS = MOE_SORT_CHUNK ints). The
// slice scans took 186 µs a launch at T·K = 16384 (H200, a prompt chunk of
// 2048 tokens, 256 experts: 9% of the prompt's GPU time).
#define MOE_SORT_MATCH_WARPS 16
#define MOE_SORT_MATCH_EXPERTS 256

// moe_sort_count counts expert e's pairs among chunk[lo, hi).
INLINE int moe_sort_count(threadgroup const int *chunk, int lo, int hi, int e) {
  int c = 0, i = lo;
  // MOE_SORT_ILP reads in flight at a time: one at a time, each compare
  // waited out a threadgroup-memory latency (98 us a launch at T·K = 4096).
  for (; i + MOE_SORT_ILP <= hi; i += MOE_SORT_ILP) {
    UNROLL for (int u = 0; u < MOE_SORT_ILP; u++) c += chunk[i + u] == e ? 1 : 0;
  }
  for (; i < hi; i++) c += chunk[i] == e ? 1 : 0;
  return c;
}

// moe_sort_i32 groups the T·K (token, slot) pairs p = t·K + s by expert for
// qgemm_gather_bf16: perm lists the pairs expert by expert (by p within an
// expert), and tiles[b] = (expert, first index into perm, pairs) for the b-th
// tile of at most QG_BM pairs, tiles in expert order; the entries past the last
// tile (the table holds ceil(T·K, QG_BM) + E, enough for any routing) have
// expert −1. Ids outside [0, E) belong to no tile. One threadgroup: the ids
// pass through threadgroup memory MOE_SORT_CHUNK at a time. Each expert has
// S = MOE_SORT_THREADS / E threads (at least one; fewer experts, more), and
// thread q·E + e counts and then collects expert e's pairs in the q-th of S
// equal slices of the chunk, placing them after those of the slices before
// it: the result is deterministic. Experts vary fastest across the threads,
// so a SIMD-group's lanes read the same chunk entry at once (one broadcast;
// slices fastest put four slices on one bank). One thread an expert, walking
// the whole chunk twice with 8 SIMD-groups, took 93 µs a launch at 256
// experts and T·K = 4096.
// launch: grid(1) group(MOE_SORT_THREADS)
// requires: E <= MOE_SORT_MAX_EXPERTS
KERNEL(moe_sort_i32,
       BUFFER(const int, ids, 0),
       BUFFER(int, perm, 1),
       BUFFER(int, tiles, 2),
       PARAM(int, T, 3),
       PARAM(int, K, 4),
       PARAM(int, E, 5)) {
  GRID_WAIT();
  TG_MEM(int, first, MOE_SORT_MAX_EXPERTS + 1);      // first[e]: expert e's first index into perm
  TG_MEM(int, firstTile, MOE_SORT_MAX_EXPERTS + 1);  // firstTile[e]: its first tile
  TG_MEM(int, count, MOE_SORT_MAX_EXPERTS);         // count[q·E + e]: slice q's pairs of expert e (E·S ≤ max(E, threads))
  TG_MEM(int, chunk, MOE_SORT_CHUNK);
  int n = T * K;
  int S = imax(1, TG_SIZE_X / E);  // threads per expert; E·S <= MOE_SORT_THREADS
  bool one = n <= MOE_SORT_CHUNK;  // one chunk: the counts of the first pass place it
  for (int e = TID_X; e < E; e += TG_SIZE_X) first[e + 1] = 0;
  bool match = false;  // the warp-match form (CUDA sm_80+, at most MOE_SORT_MATCH_EXPERTS)
#if defined(MMA_WARP_NATIVE)
  match = E <= MOE_SORT_MATCH_EXPERTS;
  threadgroup int *cnt = chunk;  // [MOE_SORT_MATCH_WARPS][MOE_SORT_MATCH_EXPERTS]
  int mw = SIMD_ID, mper = (n + MOE_SORT_MATCH_WARPS - 1) / MOE_SORT_MATCH_WARPS;
  int mlo = mw * mper, mhi = imin(n, mlo + mper);  // the SIMD-group's pairs
  if (match) {
    for (int i = TID_X; i < MOE_SORT_CHUNK; i += TG_SIZE_X) cnt[i] = 0;
    BARRIER();
    if (mw < MOE_SORT_MATCH_WARPS) {
      for (int p0 = mlo; p0 < mhi; p0 += 32) {
        int p = p0 + LANE, e = p < mhi ? ids[p] : -1;
        bool ok = e >= 0 && e < E;
        uint same = __match_any_sync(0xffffffffu, ok ? e : -1);
        if (ok && LANE == __ffs(same) - 1) cnt[mw * MOE_SORT_MATCH_EXPERTS + e] += __popc(same);
      }
    }
    BARRIER();
    // Per expert: its pairs, and each SIMD-group's count as the sum of those before it.
    for (int e = TID_X; e < E; e += TG_SIZE_X) {
      int c = 0;
      for (int q = 0; q < MOE_SORT_MATCH_WARPS; q++) {
        int v = cnt[q * MOE_SORT_MATCH_EXPERTS + e];
        cnt[q * MOE_SORT_MATCH_EXPERTS + e] = c;
        c += v;
      }
      first[e + 1] = c;
    }
  }
#endif
  for (int c0 = 0; c0 < n && !match; c0 += MOE_SORT_CHUNK) {
    int len = imin(MOE_SORT_CHUNK, n - c0), per = (len + S - 1) / S;
    BARRIER();
    for (int i = TID_X; i < len; i += TG_SIZE_X) chunk[i] = ids[c0 + i];
    BARRIER();
    for (int u = TID_X; u < E * S; u += TG_SIZE_X) {
      int e = u % E, q = u / E;
      count[u] = moe_sort_count(chunk, q * per, imin(len, (q + 1) * per), e);
    }
    BARRIER();
    for (int e = TID_X; e < E; e += TG_SIZE_X) {
      int c = 0;
      for (int q = 0; q < S; q++) c += count[q * E + e];
      first[e + 1] += c;
    }
  }
  BARRIER();
  if (TID_X == 0) {
    first[0] = 0;
    firstTile[0] = 0;
    for (int e = 0; e < E; e++) {
      int c = first[e + 1];
      first[e + 1] = first[e] + c;
      firstTile[e + 1] = firstTile[e] + (c + QG_BM - 1) / QG_BM;
    }
  }
  BARRIER();
  for (int e = TID_X; e < E; e += TG_SIZE_X) {
    int c = first[e + 1] - first[e];
    for (int j = 0; j * QG_BM < c; j++) {
      int b = firstTile[e] + j;
      tiles[3 * b] = e;
      tiles[3 * b + 1] = first[e] + j * QG_BM;
      tiles[3 * b + 2] = imin(QG_BM, c - j * QG_BM);
    }
  }
  int ntiles = (n + QG_BM - 1) / QG_BM + E;
  for (int b = firstTile[E] + TID_X; b < ntiles; b += TG_SIZE_X) {
    tiles[3 * b] = -1;
    tiles[3 * b + 1] = 0;
    tiles[3 * b + 2] = 0;
  }
#if defined(MMA_WARP_NATIVE)
  // Each SIMD-group places its pairs in order: expert e's k-th pair of the
  // group's share goes to first[e] + (the groups before it) + k; a round's
  // lanes of one expert find their rank among themselves by the match.
  if (match && mw < MOE_SORT_MATCH_WARPS) {
    for (int p0 = mlo; p0 < mhi; p0 += 32) {
      int p = p0 + LANE, e = p < mhi ? ids[p] : -1;
      bool ok = e >= 0 && e < E;
      uint same = __match_any_sync(0xffffffffu, ok ? e : -1);
      int leader = __ffs(same) - 1;
      int at = ok && LANE == leader ? cnt[mw * MOE_SORT_MATCH_EXPERTS + e] : 0;
      at = __shfl_sync(0xffffffffu, at, leader);
      if (ok) perm[first[e] + at + __popc(same & ((1u << LANE) - 1u))] = p;
      if (ok && LANE == leader) cnt[mw * MOE_SORT_MATCH_EXPERTS + e] = at + __popc(same);
    }
  }
#endif
  // first[e] becomes the next free index of expert e as each chunk's pairs
  // are placed; slice q of a chunk starts after slices 0..q-1's pairs.
  for (int c0 = 0; c0 < n && !match; c0 += MOE_SORT_CHUNK) {
    int len = imin(MOE_SORT_CHUNK, n - c0), per = (len + S - 1) / S;
    if (!one) {
      BARRIER();
      for (int i = TID_X; i < len; i += TG_SIZE_X) chunk[i] = ids[c0 + i];
      BARRIER();
      for (int u = TID_X; u < E * S; u += TG_SIZE_X)
        count[u] = moe_sort_count(chunk, (u / E) * per, imin(len, (u / E + 1) * per), u % E);
    }
    BARRIER();
    for (int u = TID_X; u < E * S; u += TG_SIZE_X) {
      int e = u % E, q = u / E;
      int at = first[e];
      for (int r = 0; r < q; r++) at += count[r * E + e];
      int lo = q * per, hi = imin(len, (q + 1) * per), i = lo;
      for (; i + MOE_SORT_ILP <= hi; i += MOE_SORT_ILP) {
        int v[MOE_SORT_ILP];
        UNROLL for (int k = 0; k < MOE_SORT_ILP; k++) v[k] = chunk[i + k];
        UNROLL for (int k = 0; k < MOE_SORT_ILP; k++) {
          if (v[k] == e) perm[at++] = c0 + i + k;
        }
      }
      for (; i < hi; i++)
        if (chunk[i] == e) perm[at++] = c0 + i;
    }
    BARRIER();
    for (int e = TID_X; e < E; e += TG_SIZE_X) {
      int c = 0;
      for (int q = 0; q < S; q++) c += count[q * E + e];
      first[e] += c;
    }
  }
}

// qgemm_gather_bf16: the grouped expert GEMM. For every tile of moe_sort_i32
// and every pair p = t·K + s in it, with e its expert:
// out[p, o] = bf16(Σ_j xrow[j]·W[e, o, j]), xrow = x[t, :] (xPerSlot 0)
// or x[p, :] (xPerSlot 1): what qmatmul_gather_bf16 computes, each expert's
// weights read once per tile of up to QG_BM pairs instead of once per pair.
// Tiles vary fastest in the grid; empty table entries return at once.
// launch: grid((ceil(T * K, QG_BM) + E) * ceil(Out, QG_BN)) group(QG_THREADS)
KERNEL(qgemm_gather_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const int, perm, 1),
       BUFFER(const int, tiles, 2),
       BUFFER(const uint, w, 3),
       BUFFER(const bf16_t, scales, 4),
       BUFFER(const bf16_t, biases, 5),
       BUFFER(bf16_t, out, 6),
       PARAM(int, T, 7),
       PARAM(int, K, 8),
       PARAM(int, E, 9),
       PARAM(int, In, 10),
       PARAM(int, Out, 11),
       PARAM(int, bits, 12),
       PARAM(int, gs, 13),
       PARAM(int, xPerSlot, 14),
       PARAM(int, exact, 15)) {
  GRID_WAIT_COMPUTE();
  TG_MEM_ALIGNED16(float, smem, QG_SMEM);  // ldmatrix reads 16-byte rows
  TG_MEM(int, arow, QG_BM);
  TG_MEM(int, orow, QG_BM);
  int ntiles = (T * K + QG_BM - 1) / QG_BM + E;
  int b = TGID_X % ntiles, o0 = (TGID_X / ntiles) * QG_BN;
  int e = tiles[3 * b];
  if (e < 0) return;  // uniform across the threadgroup
  int start = tiles[3 * b + 1], count = tiles[3 * b + 2];
  for (int r = TID_X; r < QG_BM; r += TG_SIZE_X) {
    int p = r < count ? perm[start + r] : 0;
    arow[r] = xPerSlot != 0 ? p : p / K;
    orow[r] = p;
  }
  BARRIER();
  ulong wrow = (ulong)e * (ulong)Out;
  qgemm_tile(x, w + wrow * (ulong)(In / 32 * bits), scales + wrow * (ulong)(In / gs), biases + wrow * (ulong)(In / gs),
             out, arow, orow, count, o0, In, Out, bits, gs, exact != 0, smem, TID_X, LANE, SIMD_ID);
}
