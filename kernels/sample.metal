// Sampling on the device: the host reads back a token id (greedy: the top 1)
// or the top k candidates instead of the logits.

// argmax_better tells whether (v, i) beats (bv, bi): larger, or equal at a lower
// index. NaN never beats anything, and nothing beats a NaN already held only
// because a NaN is never taken in the first place.
INLINE bool argmax_better(float v, int i, float bv, int bi) { return v > bv || (v == bv && i < bi); }

// TOPK_MAX bounds K of the top-k kernels: the app's top-k (20 by default) and more.
#define TOPK_MAX 256
// Top-k in two launches: topk_partial_f32 takes each row's chunks of
// TOPK_CHUNK logits in parallel (one threadgroup each, TOPK_PER values per
// thread held in registers), topk_merge_f32 merges the chunks' candidates and
// log-sum-exp terms. One threadgroup walking a 248320-wide row K times was
// most of a sampled step's sampling time.
#define TOPK_CHUNK 4096
#define TOPK_PART_THREADS 256
#define TOPK_PER 16
#define TOPK_THREADS 1024

// topk_best reduces (bv, bi) over the threadgroup through sgVal/sgIdx (one
// entry per SIMD-group) and returns the best in every thread.
INLINE void topk_best(thread float *bv, thread int *bi, threadgroup float *sgVal, threadgroup int *sgIdx, int lane,
                      int simd, int nsimd, float ninf, int none) {
  for (int off = 16; off > 0; off >>= 1) {
    float ov = simd_shuffle_xor(*bv, (uint)off);
    int oi = simd_shuffle_xor(*bi, (uint)off);
    if (argmax_better(ov, oi, *bv, *bi)) {
      *bv = ov;
      *bi = oi;
    }
  }
  BARRIER();  // the previous round's readers of sgVal/sgIdx are done
  if (lane == 0) {
    sgVal[simd] = *bv;
    sgIdx[simd] = *bi;
  }
  BARRIER();
  *bv = ninf;
  *bi = none;
  for (int g = 0; g < nsimd; g++) {
    if (argmax_better(sgVal[g], sgIdx[g], *bv, *bi)) {
      *bv = sgVal[g];
      *bi = sgIdx[g];
    }
  }
}

// topk_partial_f32: for row r of x [R, N] and its chunk c (elements
// [c·TOPK_CHUNK, (c+1)·TOPK_CHUNK) ∩ [0, N)), with C = ceil(N, TOPK_CHUNK):
// cand_ids i32, cand_vals f32 [R, C, K] = the chunk's K largest values in
// descending order (ties: the lower index first; NaNs passed over; padded
// with id −1, value −∞), ids indexing the row; stats f32 [R, C, 2] = (m, s),
// m the chunk's largest number (−∞ if none), s = Σ exp(x − m) over its numbers;
// m is NaN (and s 0) when the chunk holds a NaN or an infinity (the merge's
// lse reports it).
// launch: grid(R * ceil(N, TOPK_CHUNK)) group(TOPK_PART_THREADS)
// requires: K <= TOPK_MAX
KERNEL(topk_partial_f32,
       BUFFER(const float, x, 0),
       BUFFER(int, cand_ids, 1),
       BUFFER(float, cand_vals, 2),
       BUFFER(float, stats, 3),
       PARAM(int, R, 4),
       PARAM(int, N, 5),
       PARAM(int, K, 6)) {
  GRID_WAIT();
  TG_MEM(float, sgVal, 32);
  TG_MEM(float, sgSum, 32);
  TG_MEM(int, sgIdx, 32);
  int chunks = (N + TOPK_CHUNK - 1) / TOPK_CHUNK;
  int r = TGID_X / chunks, c = TGID_X % chunks;
  if (r >= R) return;  // uniform across the threadgroup
  device const float *row = x + (ulong)r * (ulong)N;
  float ninf = as_float(0xff800000u);
  int base = c * TOPK_CHUNK;
  float v[TOPK_PER];
  float m = ninf, s = 0.0f;
  bool bad = false;  // a NaN or an infinity
  UNROLL for (int j = 0; j < TOPK_PER; j++) {
    int i = base + j * TOPK_PART_THREADS + TID_X;
    v[j] = i < N ? row[i] : 0.0f;
    bad = bad || v[j] - v[j] != 0.0f;
    if (i >= N) v[j] = ninf;
    if (!(v[j] > ninf)) {
      v[j] = ninf;  // NaN and −∞ rank last and add nothing
      continue;
    }
    if (v[j] > m) {
      s = s * expf(m - v[j]) + 1.0f;
      m = v[j];
    } else {
      s += expf(v[j] - m);
    }
  }
  for (int off = 16; off > 0; off >>= 1) {
    float om = simd_shuffle_xor(m, (uint)off), os = simd_shuffle_xor(s, (uint)off);
    float nm = fmaxf(m, om);
    s = (m > ninf ? s * expf(m - nm) : 0.0f) + (om > ninf ? os * expf(om - nm) : 0.0f);
    m = nm;
  }
  bool anyBad = simd_sum(bad ? 1.0f : 0.0f) > 0.0f;
  if (LANE == 0) {
    sgVal[SIMD_ID] = m;
    sgSum[SIMD_ID] = s;
    sgIdx[SIMD_ID] = anyBad ? 1 : 0;
  }
  BARRIER();
  ulong rc = (ulong)r * (ulong)chunks + (ulong)c;
  if (TID_X == 0) {
    float M = ninf, S = 0.0f;
    int nbad = 0;
    for (int g = 0; g < SIMD_COUNT; g++) {
      M = fmaxf(M, sgVal[g]);
      nbad += sgIdx[g];
    }
    for (int g = 0; g < SIMD_COUNT; g++)
      if (sgVal[g] > ninf) S += sgSum[g] * expf(sgVal[g] - M);
    stats[2 * rc] = nbad > 0 ? as_float(0x7fc00000u) : M;  // NaN: not finite
    stats[2 * rc + 1] = nbad > 0 ? 0.0f : S;
  }
  // K rounds of "the best after the previous pick" over the values in registers.
  float pv = as_float(0x7f800000u);  // +∞: everything ranks after it
  int pi = -1;
  for (int k = 0; k < K; k++) {
    float bv = ninf;
    int bi = N;
    UNROLL for (int j = 0; j < TOPK_PER; j++) {
      int i = base + j * TOPK_PART_THREADS + TID_X;
      bool after = v[j] < pv || (v[j] == pv && i > pi);
      if (after && v[j] > bv) {  // j ascending: a later j is a higher index
        bv = v[j];
        bi = i;
      }
    }
    topk_best(&bv, &bi, sgVal, sgIdx, LANE, SIMD_ID, SIMD_COUNT, ninf, N);
    if (TID_X == 0) {
      cand_ids[rc * (ulong)K + (ulong)k] = bi < N ? bi : -1;
      cand_vals[rc * (ulong)K + (ulong)k] = bi < N ? bv : ninf;
    }
    pv = bv;
    pi = bi;
  }
}

// topk_merge_f32: per row, from topk_partial_f32's candidates and stats (C =
// ceil(N, TOPK_CHUNK) chunks): ids i32 [R, K], vals f32 [R, K] = the row's K
// largest values in descending order (ties: the lower index first; padded with
// id −1, value −∞), and lse f32 [R] = M + log Σ_c s_c·exp(m_c − M), M = max m_c
// (−∞ for a row without numbers): the log Σ exp of the row's numbers; NaN when
// a chunk's m is (the row holds a NaN or an infinity).
// launch: grid(R) group(TOPK_THREADS)
// requires: K <= TOPK_MAX
KERNEL(topk_merge_f32,
       BUFFER(const int, cand_ids, 0),
       BUFFER(const float, cand_vals, 1),
       BUFFER(const float, stats, 2),
       BUFFER(int, ids, 3),
       BUFFER(float, vals, 4),
       BUFFER(float, lse, 5),
       PARAM(int, R, 6),
       PARAM(int, N, 7),
       PARAM(int, K, 8)) {
  GRID_WAIT();
  TG_MEM(float, sgVal, 32);
  TG_MEM(int, sgIdx, 32);
  int r = TGID_X;
  if (r >= R) return;  // uniform across the threadgroup
  int chunks = (N + TOPK_CHUNK - 1) / TOPK_CHUNK;
  int n = chunks * K;
  device const int *ci = cand_ids + (ulong)r * (ulong)n;
  device const float *cv = cand_vals + (ulong)r * (ulong)n;
  float ninf = as_float(0xff800000u);
  if (TID_X == 0) {
    device const float *st = stats + (ulong)r * (ulong)(2 * chunks);
    float M = ninf, S = 0.0f;
    bool bad = false;
    for (int c = 0; c < chunks; c++) {
      M = fmaxf(M, st[2 * c]);
      bad = bad || !(st[2 * c] == st[2 * c]);
    }
    for (int c = 0; c < chunks; c++)
      if (st[2 * c] > ninf) S += st[2 * c + 1] * expf(st[2 * c] - M);
    lse[r] = bad ? as_float(0x7fc00000u) : M > ninf ? M + logf(S) : ninf;
  }
  float pv = as_float(0x7f800000u);
  int pi = -1;
  for (int k = 0; k < K; k++) {
    float bv = ninf;
    int bi = N;
    for (int j = TID_X; j < n; j += TG_SIZE_X) {
      int i = ci[j];
      float v = cv[j];
      bool after = v < pv || (v == pv && i > pi);
      if (i >= 0 && after && argmax_better(v, i, bv, bi)) {
        bv = v;
        bi = i;
      }
    }
    topk_best(&bv, &bi, sgVal, sgIdx, LANE, SIMD_ID, SIMD_COUNT, ninf, N);
    if (TID_X == 0) {
      ids[(ulong)r * (ulong)K + (ulong)k] = bi < N ? bi : -1;
      vals[(ulong)r * (ulong)K + (ulong)k] = bi < N ? bv : ninf;
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

// sample_top_f32: draws a token from the K candidates of topk_merge_f32 for
// one row (ids i32 [K], vals f32 [K] best first, ids −1 past the row's
// numbers; lse f32 [1], the whole row's log Σ exp) as the host's sampler does
// (engine/sampler.go: distribution, pick), in f32: top-p keeps the shortest
// prefix whose probability reaches top_p (0 or 1: off), min-p the prefix
// within log(min_p) of the best (0: off), then a categorical at the
// temperature over the kept ones picks with the uniform u in [0, 1), which
// the host draws from the reply's seeded generator (it does not depend on the
// token, so a step may be launched before the last token is known). out i32
// [1] = the token, or −1 when the row's log-sum-exp is not finite (a NaN or
// an infinity among the logits) or it has no candidate. One thread: K is
// small.
// launch: grid(1) group(32)
// requires: K <= TOPK_MAX
KERNEL(sample_top_f32,
       BUFFER(const int, ids, 0),
       BUFFER(const float, vals, 1),
       BUFFER(const float, lse, 2),
       BUFFER(int, out, 3),
       PARAM(int, K, 4),
       PARAM(float, temperature, 5),
       PARAM(float, top_p, 6),
       PARAM(float, min_p, 7),
       PARAM(float, u, 8)) {
  GRID_WAIT();
  if (TID_X != 0) return;
  float z = lse[0];
  int n = 0;
  while (n < K && ids[n] >= 0) n++;
  if (!(z - z == 0.0f) || n == 0) {  // NaN or ±∞
    out[0] = -1;
    return;
  }
  int keep = n;
  if (top_p > 0.0f && top_p < 1.0f) {
    float cum = 0.0f;
    for (int i = 0; i < keep; i++) {
      cum += expf(vals[i] - z);
      if (cum >= top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (min_p > 0.0f) {
    float limit = (vals[0] - z) + logf(min_p);
    int m = 1;
    while (m < keep && vals[m] - z >= limit) m++;
    keep = m;
  }
  float inv = 1.0f / temperature;
  float best = as_float(0xff800000u);
  for (int i = 0; i < keep; i++) best = fmaxf(best, (vals[i] - z) * inv);
  float total = 0.0f;
  for (int i = 0; i < keep; i++) total += expf((vals[i] - z) * inv - best);
  float left = u * total;
  int pick = keep - 1;
  for (int i = 0; i < keep; i++) {
    left -= expf((vals[i] - z) * inv - best);
    if (left < 0.0f) {
      pick = i;
      break;
    }
  }
  out[0] = ids[pick];
}
