// MoE router: softmax over experts and top-K selection.

// ROUTER_MAX_E bounds E: the probabilities of one token live in threadgroup memory.
#define ROUTER_MAX_E 1024

// router_topk_bf16: logits [T, E] → ids i32 [T, K], weights [T, K].
// p = bf16(softmax_f32(logits)) (the sum's reciprocal times each exponential);
// ids are the K largest p in descending order, ties to the lower index; w = p[ids],
// and when norm ≠ 0, w = bf16(w / bf16(Σw)) with Σw summed in selection order.
//
// One SIMD-group per token. Lane l owns experts l, l+32, ...; each of the K
// rounds is a lane-local scan and a butterfly argmax, after which the owner marks
// the winner taken (p = −1). Only the owning lane ever touches p[e].
// launch: grid(T) group(32)
// requires: E <= ROUTER_MAX_E
KERNEL(router_topk_bf16,
       BUFFER(const bf16_t, logits, 0),
       BUFFER(int, ids, 1),
       BUFFER(bf16_t, weights, 2),
       PARAM(int, T, 3),
       PARAM(int, E, 4),
       PARAM(int, K, 5),
       PARAM(int, norm, 6)) {
  GRID_WAIT();
  TG_MEM(float, p, ROUTER_MAX_E);
  int t = TGID_X;
  if (t >= T) return;
  int lane = LANE;
  device const bf16_t *row = logits + (ulong)t * (ulong)E;
  float m = -3.0e38f;
  for (int e = lane; e < E; e += 32) m = fmaxf(m, bf16_to_f32(row[e]));
  m = simd_max(m);
  float sum = 0.0f;
  for (int e = lane; e < E; e += 32) {
    float ex = expf(bf16_to_f32(row[e]) - m);
    p[e] = ex;
    sum += ex;
  }
  float inv = 1.0f / simd_sum(sum);
  for (int e = lane; e < E; e += 32) p[e] = round_bf16(p[e] * inv);

  // Lane s keeps the s-th weight, so the normalisation reads no memory back
  // (a lane-0 loop over the written weights was a chain of K global loads).
  float total = 0.0f, mine = 0.0f;
  int mineId = 0;
  for (int s = 0; s < K; s++) {
    float bv = -2.0f;
    int bi = E;
    for (int e = lane; e < E; e += 32) {
      if (p[e] > bv) {
        bv = p[e];
        bi = e;
      }
    }
    for (int off = 16; off > 0; off >>= 1) {
      float ov = simd_shuffle_xor(bv, (uint)off);
      int oi = simd_shuffle_xor(bi, (uint)off);
      if (ov > bv || (ov == bv && oi < bi)) {
        bv = ov;
        bi = oi;
      }
    }
    if (bi % 32 == lane) p[bi] = -1.0f;
    total += bv;  // every lane holds the same bv: the butterfly ends agreed
    if (lane == s) {
      mine = bv;
      mineId = bi;
    }
    if (s >= 32 && lane == 0) {  // K > 32: the rest unnormalised, fixed below
      ids[t * K + s] = bi;
      weights[t * K + s] = f32_to_bf16(bv);
    }
  }
  if (norm != 0) total = round_bf16(total);
  if (lane < K) {
    ids[t * K + lane] = mineId;
    weights[t * K + lane] = f32_to_bf16(norm != 0 ? mine / total : mine);
  }
  if (norm != 0 && K > 32 && lane == 0) {
    for (int s = 32; s < K; s++) {
      ulong i = (ulong)t * (ulong)K + (ulong)s;
      weights[i] = f32_to_bf16(bf16_to_f32(weights[i]) / total);
    }
  }
}
