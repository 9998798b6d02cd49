// Sampling on the device: the host reads back a token id instead of the logits.

// ARGMAX_THREADS is the threadgroup of argmax_f32: one threadgroup per row.
#define ARGMAX_THREADS 1024

// argmax_better tells whether (v, i) beats (bv, bi): larger, or equal at a lower
// index. NaN never beats anything, and nothing beats a NaN already held only
// because a NaN is never taken in the first place.
INLINE bool argmax_better(float v, int i, float bv, int bi) { return v > bv || (v == bv && i < bi); }

// argmax_f32: out[r] = the index of the largest x[r, :], the lowest index among
// equals; NaNs are passed over, and a row with no number above −∞ gives 0.
// Each thread scans a strided slice, then the SIMD-groups and the threadgroup
// reduce (value, index) pairs.
// launch: grid(R) group(ARGMAX_THREADS)
KERNEL(argmax_f32,
       BUFFER(const float, x, 0),
       BUFFER(int, out, 1),
       PARAM(int, R, 2),
       PARAM(int, N, 3)) {
  GRID_WAIT();
  TG_MEM(float, sgVal, 32);
  TG_MEM(int, sgIdx, 32);
  if (TGID_X >= R) return;  // uniform across the threadgroup
  device const float *row = x + (ulong)TGID_X * (ulong)N;
  float bv = as_float(0xff800000u);  // −∞
  int bi = N;
  for (int i = TID_X; i < N; i += TG_SIZE_X) {
    float v = row[i];
    if (v > bv) {  // strided scan: a later i of this thread is a higher index
      bv = v;
      bi = i;
    }
  }
  for (int off = 16; off > 0; off >>= 1) {
    float ov = simd_shuffle_xor(bv, (uint)off);
    int oi = simd_shuffle_xor(bi, (uint)off);
    if (argmax_better(ov, oi, bv, bi)) {
      bv = ov;
      bi = oi;
    }
  }
  if (LANE == 0) {
    sgVal[SIMD_ID] = bv;
    sgIdx[SIMD_ID] = bi;
  }
  BARRIER();
  if (SIMD_ID != 0) return;
  bv = LANE < SIMD_COUNT ? sgVal[LANE] : as_float(0xff800000u);
  bi = LANE < SIMD_COUNT ? sgIdx[LANE] : N;
  for (int off = 16; off > 0; off >>= 1) {
    float ov = simd_shuffle_xor(bv, (uint)off);
    int oi = simd_shuffle_xor(bi, (uint)off);
    if (argmax_better(ov, oi, bv, bi)) {
      bv = ov;
      bi = oi;
    }
  }
  if (LANE == 0) out[TGID_X] = bi < N ? bi : 0;
}

// TOPK_MAX bounds K of topk_f32: the app's top-k (20 by default) and more.
#define TOPK_MAX 256
#define TOPK_THREADS 1024

// topk_f32: per row of x [R, N], the K largest values in descending order
// (ties: the lower index first; NaNs passed over) into ids i32 [R, K] and vals
// f32 [R, K] (a row with fewer than K numbers above −∞ pads with id −1, value
// −∞), and lse[r] = log Σ exp(x[r, :]) over its numbers, for sampling on the
// host from K candidates instead of N logits.
//
// One threadgroup per row. The first pass keeps an online (max, Σexp) per
// thread and merges them; then each of the K rounds is a strided scan for the
// best element ranked after the previous pick (smaller, or equal at a higher
// index) and a (value, index) reduction: K passes over a row that stays in the
// cache, with no memory of which elements were taken.
// launch: grid(R) group(TOPK_THREADS)
// requires: K <= TOPK_MAX
KERNEL(topk_f32,
       BUFFER(const float, x, 0),
       BUFFER(int, ids, 1),
       BUFFER(float, vals, 2),
       BUFFER(float, lse, 3),
       PARAM(int, R, 4),
       PARAM(int, N, 5),
       PARAM(int, K, 6)) {
  GRID_WAIT();
  TG_MEM(float, sgVal, 32);
  TG_MEM(float, sgSum, 32);
  TG_MEM(int, sgIdx, 32);
  if (TGID_X >= R) return;  // uniform across the threadgroup
  device const float *row = x + (ulong)TGID_X * (ulong)N;
  float ninf = as_float(0xff800000u);

  // log Σ exp: each thread's running max m and Σ exp(x − m), merged pairwise.
  float m = ninf, s = 0.0f;
  for (int i = TID_X; i < N; i += TG_SIZE_X) {
    float v = row[i];
    if (!(v > ninf)) continue;  // NaN and −∞ add nothing
    if (v > m) {
      s = s * expf(m - v) + 1.0f;
      m = v;
    } else {
      s += expf(v - m);
    }
  }
  for (int off = 16; off > 0; off >>= 1) {
    float om = simd_shuffle_xor(m, (uint)off), os = simd_shuffle_xor(s, (uint)off);
    float nm = fmaxf(m, om);
    s = (m > ninf ? s * expf(m - nm) : 0.0f) + (om > ninf ? os * expf(om - nm) : 0.0f);
    m = nm;
  }
  if (LANE == 0) {
    sgVal[SIMD_ID] = m;
    sgSum[SIMD_ID] = s;
  }
  BARRIER();
  if (TID_X == 0) {
    float M = ninf, S = 0.0f;
    for (int g = 0; g < SIMD_COUNT; g++) M = fmaxf(M, sgVal[g]);
    for (int g = 0; g < SIMD_COUNT; g++)
      if (sgVal[g] > ninf) S += sgSum[g] * expf(sgVal[g] - M);
    lse[TGID_X] = M > ninf ? M + logf(S) : ninf;
  }

  // K rounds of "the best after the previous pick".
  float pv = as_float(0x7f800000u);  // +∞: everything ranks after it
  int pi = -1;
  for (int k = 0; k < K; k++) {
    float bv = ninf;
    int bi = N;
    for (int i = TID_X; i < N; i += TG_SIZE_X) {
      float v = row[i];
      bool after = v < pv || (v == pv && i > pi);
      if (after && v > bv) {  // strided scan: a later i of this thread is a higher index
        bv = v;
        bi = i;
      }
    }
    for (int off = 16; off > 0; off >>= 1) {
      float ov = simd_shuffle_xor(bv, (uint)off);
      int oi = simd_shuffle_xor(bi, (uint)off);
      if (argmax_better(ov, oi, bv, bi)) {
        bv = ov;
        bi = oi;
      }
    }
    BARRIER();  // the previous round's readers of sgVal/sgIdx are done
    if (LANE == 0) {
      sgVal[SIMD_ID] = bv;
      sgIdx[SIMD_ID] = bi;
    }
    BARRIER();
    bv = ninf;
    bi = N;
    for (int g = 0; g < SIMD_COUNT; g++) {
      if (argmax_better(sgVal[g], sgIdx[g], bv, bi)) {
        bv = sgVal[g];
        bi = sgIdx[g];
      }
    }
    if (TID_X == 0) {
      ulong o = (ulong)TGID_X * (ulong)K + (ulong)k;
      ids[o] = bi < N ? bi : -1;
      vals[o] = bi < N ? bv : ninf;
    }
    pv = bv;
    pi = bi;
  }
}

// repetition_penalty_f32: for each id of ids [M] (distinct) inside x [N]:
// x[id] = x[id]·penalty when negative, x[id]/penalty otherwise (mlx-lm's
// repetition penalty, applied to the logits before sampling).
// launch: elements(M)
KERNEL(repetition_penalty_f32,
       BUFFER(float, x, 0),
       BUFFER(const int, ids, 1),
       PARAM(int, N, 2),
       PARAM(int, M, 3),
       PARAM(float, penalty, 4)) {
  GRID_WAIT();
  int j = TGID_X * TG_SIZE_X + TID_X;
  if (j >= M) return;
  int id = ids[j];
  if (id < 0 || id >= N) return;
  float v = x[id];
  x[id] = v < 0.0f ? v * penalty : v / penalty;
}
