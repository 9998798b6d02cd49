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
    bi = imin(bi, E - 1);  // no candidate left (NaN logits): any valid expert, never one past the end
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

// moe_route sets sel[0..K) to the experts of the token whose E logits are at
// row, in router_topk_bf16's order, and returns sel[s]: SIMD-group 0 computes
// p as router_topk_bf16 does (the same loops, so the same bits), then every
// thread ranks its experts among all E (ties to the lower index), which is the
// order of router_topk_bf16's K rounds without their K dependent shuffles. sel
// starts at expert 0, so logits with NaNs (which rank nowhere) still give
// valid ids. With write, thread 0 also writes the token's ids and weights as
// router_topk_bf16 does. p holds E floats and sel K ints, threadgroup memory.
INLINE int moe_route(device const bf16_t *row, int E, int K, int s, int norm, bool write, device int *ids,
                     device bf16_t *weights, threadgroup float *p, threadgroup int *sel, int tid, int nthreads,
                     int lane, int simd) {
  if (simd == 0) {
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
  }
  for (int i = tid; i < K; i += nthreads) sel[i] = 0;
  BARRIER();
  for (int e = tid; e < E; e += nthreads) {
    float pe = p[e];
    int rank = 0;
    for (int j = 0; j < E; j++) {
      float pj = p[j];
      rank += pj > pe || (pj == pe && j < e) ? 1 : 0;
    }
    if (rank < K) sel[rank] = e;
  }
  BARRIER();
  if (write && tid == 0) {
    float total = 0.0f;
    for (int i = 0; i < K; i++) total += p[sel[i]];  // selection order, as router_topk_bf16
    if (norm != 0) total = round_bf16(total);
    for (int i = 0; i < K; i++) {
      float w = p[sel[i]];
      ids[i] = sel[i];
      weights[i] = f32_to_bf16(norm != 0 ? w / total : w);
    }
  }
  return sel[s];
}

// moe_route_up_bf16: router_topk_bf16 and moe_up_bf16 in one launch. Every
// threadgroup of a routed slot ts = t·K + s routes token t from its router
// logits [T, E] itself (moe_route: the ids and weights router_topk_bf16
// gives) and takes slot s's expert; the first threadgroup of each token's
// first slot writes ids i32 [T, K] and weights bf16 [T, K] for
// moe_down_bf16. The shared expert's threadgroups do not route. Other
// buffers and the grid as moe_up_bf16.
// launch: grid(ceil(Out, QMV_ROWS) * T * K + ceil(Is, QMV_ROWS) * T) group(min(QMV_SPLIT, max(1, In * bits / 4096)) * 32)
// requires: E <= ROUTER_MAX_E
KERNEL(moe_route_up_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const bf16_t, logits, 1),
       BUFFER(int, ids, 2),
       BUFFER(bf16_t, weights, 3),
       BUFFER(const uint, gate_w, 4),
       BUFFER(const bf16_t, gate_scales, 5),
       BUFFER(const bf16_t, gate_biases, 6),
       BUFFER(const uint, up_w, 7),
       BUFFER(const bf16_t, up_scales, 8),
       BUFFER(const bf16_t, up_biases, 9),
       BUFFER(bf16_t, out, 10),
       BUFFER(const uint, shared_gate_w, 11),
       BUFFER(const bf16_t, shared_gate_scales, 12),
       BUFFER(const bf16_t, shared_gate_biases, 13),
       BUFFER(const uint, shared_up_w, 14),
       BUFFER(const bf16_t, shared_up_scales, 15),
       BUFFER(const bf16_t, shared_up_biases, 16),
       BUFFER(bf16_t, hs, 17),
       PARAM(int, T, 18),
       PARAM(int, K, 19),
       PARAM(int, E, 20),
       PARAM(int, norm, 21),
       PARAM(int, In, 22),
       PARAM(int, Out, 23),
       PARAM(int, Is, 24),
       PARAM(int, bits, 25),
       PARAM(int, gs, 26)) {
  GRID_WAIT();
  TG_MEM(float, partial, 2 * QMV_SPLIT * QMV_ROWS);
  TG_MEM(float, p, ROUTER_MAX_E);
  TG_MEM(int, sel, ROUTER_MAX_E);
  int blocks = (Out + QMV_ROWS - 1) / QMV_ROWS;
  int e = 0;
  if (TGID_X < blocks * T * K) {  // uniform across the threadgroup
    int ts = TGID_X / blocks, t = ts / K, s = ts % K;
    bool first = TGID_X % blocks == 0 && s == 0;
    e = moe_route(logits + (ulong)t * (ulong)E, E, K, s, norm, first, ids + (ulong)t * (ulong)K,
                  weights + (ulong)t * (ulong)K, p, sel, TID_X, TG_SIZE_X, LANE, SIMD_ID);
  }
  moe_up_group(TGID_X, e, x, gate_w, gate_scales, gate_biases, up_w, up_scales, up_biases, out, shared_gate_w,
               shared_gate_scales, shared_gate_biases, shared_up_w, shared_up_scales, shared_up_biases, hs, T, K, In,
               Out, Is, bits, gs, partial, LANE, SIMD_ID, SIMD_COUNT);
}
