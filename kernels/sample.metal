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
