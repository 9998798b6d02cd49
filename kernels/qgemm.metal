// Prefill GEMMs on the matrix units: out = x · Wᵀ for many tokens at once, with
// W in the MLX affine layout of quant.metal read in place (no repacking). The
// decode GEMVs (quant.metal) read every weight once per token; here a weight
// tile is dequantized once into threadgroup memory and serves QG_BM tokens.
//
// Numerics (the contract the CPU reference follows): each weight is
// dequantized in f32 and rounded to bf16 before the product, as MLX's quantized
// GEMM (qmm) stages it; x·w products are exact in f32 and accumulate in f32 in
// an order of the matrix unit's choosing; the result is rounded once to bf16.
// So a GEMM output differs from the GEMV's (unrounded weights) by bf16 noise:
// the engine uses these kernels only for prompts of many tokens, never for a
// decode step or a speculative verify, which keep the GEMV's bits.

// ---- The matrix unit, per backend ------------------------------------------
// A SIMD-group multiplies 16×16 tiles held in threadgroup memory:
//   MMA_T                     the element type of the staged tiles
//   mma_elem(f)               f rounded to bf16, stored as MMA_T
//   mma_elem_bf16(v)          the bf16 bits v as MMA_T
//   mma_acc                   a 16×16 f32 accumulator spread over the lanes
//   mma_zero(acc)
//   mma_16x16x16(acc, A, lda, B, ldb, lane)
//                             acc += A·Bᵀ; A is [16 m][16 k] and B [16 n][16 k],
//                             row-major with leading dimensions lda, ldb
//   mma_store(acc, C, ldc, lane)
//                             C[m·ldc + n] = acc, C threadgroup f32
// Metal: simdgroup_float8x8 (every Apple GPU with SIMD-group matrices); the
// tiles are f32 holding bf16-rounded values. CUDA: mma.sync m16n8k16 with bf16
// inputs (sm_80 and newer); older targets (the embedded compute_75 PTX) take a
// plain loop with the same accumulator layout.
#if defined(__METAL_VERSION__)

typedef float MMA_T;
#define QG_LD 36  // QG_BK + 4 floats: staggers the rows across banks
INLINE MMA_T mma_elem(float f) { return round_bf16(f); }
INLINE MMA_T mma_elem_bf16(bf16_t v) { return bf16_to_f32(v); }

struct mma_acc {
  simdgroup_float8x8 c[2][2];
};

INLINE void mma_zero(thread mma_acc &acc) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) acc.c[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
}

INLINE void mma_16x16x16(thread mma_acc &acc, threadgroup const MMA_T *A, int lda, threadgroup const MMA_T *B,
                         int ldb, int lane) {
  for (int kk = 0; kk < 16; kk += 8) {
    simdgroup_float8x8 a[2], b[2];
    for (int i = 0; i < 2; i++) simdgroup_load(a[i], A + i * 8 * lda + kk, (ulong)lda);
    // B rows are output columns: load them transposed, [k][n].
    for (int j = 0; j < 2; j++) simdgroup_load(b[j], B + j * 8 * ldb + kk, (ulong)ldb, ulong2(0), true);
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) simdgroup_multiply_accumulate(acc.c[i][j], a[i], b[j], acc.c[i][j]);
  }
}

INLINE void mma_store(thread mma_acc &acc, threadgroup float *C, int ldc, int lane) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) simdgroup_store(acc.c[i][j], C + i * 8 * ldc + j * 8, (ulong)ldc);
}

#else  // CUDA

typedef bf16_t MMA_T;
#define QG_LD 40  // QG_BK + 8 bf16: the fragment loads of a warp hit 32 distinct banks
INLINE MMA_T mma_elem(float f) { return f32_to_bf16(f); }
INLINE MMA_T mma_elem_bf16(bf16_t v) { return v; }

// The m16n8k16 accumulator layout, for both 8-column halves h of the 16×16
// tile: lane = 4g + q/2 holds c[4h + i] at row g + 8·(i/2), column 8h + q + i%2.
struct mma_acc {
  float c[8];
};

INLINE void mma_zero(thread mma_acc &acc) {
  for (int i = 0; i < 8; i++) acc.c[i] = 0.0f;
}

INLINE uint mma_pair(const MMA_T *p) { return *(const uint *)p; }

INLINE void mma_16x16x16(thread mma_acc &acc, threadgroup const MMA_T *A, int lda, threadgroup const MMA_T *B,
                         int ldb, int lane) {
  int g = lane >> 2, q = (lane & 3) * 2;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint a0 = mma_pair(A + g * lda + q), a1 = mma_pair(A + (g + 8) * lda + q);
  uint a2 = mma_pair(A + g * lda + q + 8), a3 = mma_pair(A + (g + 8) * lda + q + 8);
  for (int h = 0; h < 2; h++) {
    const MMA_T *bn = B + (h * 8 + g) * ldb;
    uint b0 = mma_pair(bn + q), b1 = mma_pair(bn + q + 8);
    float *c = acc.c + 4 * h;
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
#else
  for (int i = 0; i < 8; i++) {
    int m = g + 8 * ((i & 3) >> 1), n = 8 * (i >> 2) + q + (i & 1);
    float s = 0.0f;
    for (int k = 0; k < 16; k++) s += bf16_to_f32(A[m * lda + k]) * bf16_to_f32(B[n * ldb + k]);
    acc.c[i] += s;
  }
#endif
}

INLINE void mma_store(thread mma_acc &acc, threadgroup float *C, int ldc, int lane) {
  int g = lane >> 2, q = (lane & 3) * 2;
  for (int i = 0; i < 8; i++) {
    int m = g + 8 * ((i & 3) >> 1), n = 8 * (i >> 2) + q + (i & 1);
    C[m * ldc + n] = acc.c[i];
  }
}

#endif

// ---- The tile ----------------------------------------------------------------
// A threadgroup of QG_THREADS (4 SIMD-groups, 2×2, each 32×32) computes a tile
// of QG_BM token rows × QG_BN output rows, stepping over the input width QG_BK
// at a time. x rows and output rows go through the tile's row maps arow / orow,
// so the same tile serves the dense GEMM (row r of the tile is token m0 + r) and
// the grouped expert GEMM (row r is a (token, slot) pair of one expert).
#define QG_BM 64
#define QG_BN 64
#define QG_BK 32
#define QG_THREADS 128
#define QG_LDC 68
// Threadgroup floats: the two staged tiles, or the f32 result for the store.
#define QG_SMEM 4608

// qg_stage_w dequantizes W rows o0..o0+QG_BN, inputs k0..k0+QG_BK, into Bs
// [QG_BN][QG_LD]; rows past Out are zeros. A step of QG_BK = 32 inputs lies in
// one quantization group (gs ≥ 32).
INLINE void qg_stage_w(device const uint *w, device const bf16_t *scales, device const bf16_t *biases,
                       threadgroup MMA_T *Bs, int o0, int k0, int In, int Out, int bits, int gs, int tid) {
  ulong wstride = (ulong)(In / 32 * bits), sstride = (ulong)(In / gs);
  int g = k0 / gs;
  if (bits == 4 || bits == 8) {
    int per = 32 / bits, words = QG_BK / per;  // codes per word, words per row step
    uint mask = (1u << bits) - 1u;
    for (int i = tid; i < QG_BN * words; i += QG_THREADS) {
      int r = i / words, wi = i % words, o = o0 + r;
      threadgroup MMA_T *dst = Bs + r * QG_LD + wi * per;
      if (o >= Out) {
        for (int j = 0; j < per; j++) dst[j] = mma_elem(0.0f);
        continue;
      }
      uint q = w[(ulong)o * wstride + (ulong)(k0 / per + wi)];
      float s = bf16_to_f32(scales[(ulong)o * sstride + (ulong)g]);
      float b = bf16_to_f32(biases[(ulong)o * sstride + (ulong)g]);
      for (int j = 0; j < per; j++) dst[j] = mma_elem(s * code_f(q, (uint)(bits * j), mask) + b);
    }
    return;
  }
  for (int i = tid; i < QG_BN * QG_BK; i += QG_THREADS) {
    int r = i / QG_BK, j = i % QG_BK, o = o0 + r;
    float v = 0.0f;
    if (o < Out) {
      float s = bf16_to_f32(scales[(ulong)o * sstride + (ulong)g]);
      float b = bf16_to_f32(biases[(ulong)o * sstride + (ulong)g]);
      v = s * (float)qcode(w + (ulong)o * wstride, k0 + j, bits) + b;
    }
    Bs[r * QG_LD + j] = mma_elem(v);
  }
}

// qgemm_tile: out[orow[r], o0 + n] = bf16(Σ_j x[arow[r], j]·bf16(W[o0 + n, j]))
// for r < nrows, o0 + n < Out. Every thread of the threadgroup calls it.
INLINE void qgemm_tile(device const bf16_t *x, device const uint *w, device const bf16_t *scales,
                       device const bf16_t *biases, device bf16_t *out, threadgroup const int *arow,
                       threadgroup const int *orow, int nrows, int o0, int In, int Out, int bits, int gs,
                       threadgroup float *smem, int tid, int lane, int simd) {
  threadgroup MMA_T *As = (threadgroup MMA_T *)smem;
  threadgroup MMA_T *Bs = As + QG_BM * QG_LD;
  int wm = (simd >> 1) * 32, wn = (simd & 1) * 32;
  mma_acc acc[2][2];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) mma_zero(acc[i][j]);
  for (int k0 = 0; k0 < In; k0 += QG_BK) {
    // x rows, two bf16 per 4-byte load (In is a multiple of 32, x 4-byte aligned).
    for (int i = tid; i < QG_BM * QG_BK / 2; i += QG_THREADS) {
      int r = i / (QG_BK / 2), c = (i % (QG_BK / 2)) * 2;
      uint v = 0u;
      if (r < nrows) v = *(device const uint *)(x + (ulong)arow[r] * (ulong)In + (ulong)(k0 + c));
      As[r * QG_LD + c] = mma_elem_bf16((bf16_t)(v & 0xffffu));
      As[r * QG_LD + c + 1] = mma_elem_bf16((bf16_t)(v >> 16));
    }
    qg_stage_w(w, scales, biases, Bs, o0, k0, In, Out, bits, gs, tid);
    BARRIER();
    for (int kk = 0; kk < QG_BK; kk += 16)
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
          mma_16x16x16(acc[i][j], As + (wm + 16 * i) * QG_LD + kk, QG_LD, Bs + (wn + 16 * j) * QG_LD + kk, QG_LD,
                       lane);
    BARRIER();
  }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) mma_store(acc[i][j], smem + (wm + 16 * i) * QG_LDC + wn + 16 * j, QG_LDC, lane);
  BARRIER();
  for (int i = tid; i < QG_BM * QG_BN; i += QG_THREADS) {
    int r = i / QG_BN, n = i % QG_BN;
    if (r < nrows && o0 + n < Out) out[(ulong)orow[r] * (ulong)Out + (ulong)(o0 + n)] = f32_to_bf16(smem[r * QG_LDC + n]);
  }
}

// qgemm_bf16: out[t, o] = bf16(Σ_j x[t, j]·bf16(W[o, j])), the prefill form of
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
       PARAM(int, gs, 9)) {
  TG_MEM(float, smem, QG_SMEM);
  TG_MEM(int, rows, QG_BM);
  int mtiles = (T + QG_BM - 1) / QG_BM;
  int m0 = (TGID_X % mtiles) * QG_BM, o0 = (TGID_X / mtiles) * QG_BN;
  for (int r = TID_X; r < QG_BM; r += TG_SIZE_X) rows[r] = m0 + r;
  BARRIER();
  qgemm_tile(x, w, scales, biases, out, rows, rows, imin(QG_BM, T - m0), o0, In, Out, bits, gs, smem, TID_X, LANE,
             SIMD_ID);
}

#define MOE_SORT_THREADS 256
#define MOE_SORT_MAX_EXPERTS 1024

// moe_sort_i32 groups the T·K (token, slot) pairs p = t·K + s by expert for
// qgemm_gather_bf16: perm lists the pairs expert by expert (by p within an
// expert), and tiles[b] = (expert, first index into perm, pairs) for the b-th
// tile of at most QG_BM pairs, tiles in expert order; the entries past the last
// tile (the table holds ceil(T·K, QG_BM) + E, enough for any routing) have
// expert −1. Ids outside [0, E) belong to no tile. One threadgroup: thread e
// counts and collects expert e's pairs in order, so the result is
// deterministic.
// launch: grid(1) group(MOE_SORT_THREADS)
// requires: E <= MOE_SORT_MAX_EXPERTS
KERNEL(moe_sort_i32,
       BUFFER(const int, ids, 0),
       BUFFER(int, perm, 1),
       BUFFER(int, tiles, 2),
       PARAM(int, T, 3),
       PARAM(int, K, 4),
       PARAM(int, E, 5)) {
  TG_MEM(int, first, MOE_SORT_MAX_EXPERTS + 1);      // first[e]: expert e's first index into perm
  TG_MEM(int, firstTile, MOE_SORT_MAX_EXPERTS + 1);  // firstTile[e]: its first tile
  int n = T * K;
  for (int e = TID_X; e < E; e += TG_SIZE_X) {
    int c = 0;
    for (int p = 0; p < n; p++) c += ids[p] == e ? 1 : 0;
    first[e + 1] = c;
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
    int at = first[e];
    for (int p = 0; p < n; p++)
      if (ids[p] == e) perm[at++] = p;
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
}

// qgemm_gather_bf16: the grouped expert GEMM. For every tile of moe_sort_i32
// and every pair p = t·K + s in it, with e its expert:
// out[p, o] = bf16(Σ_j xrow[j]·bf16(W[e, o, j])), xrow = x[t, :] (xPerSlot 0)
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
       PARAM(int, xPerSlot, 14)) {
  TG_MEM(float, smem, QG_SMEM);
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
             out, arow, orow, count, o0, In, Out, bits, gs, smem, TID_X, LANE, SIMD_ID);
}
