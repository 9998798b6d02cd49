// MoE router: softmax over experts and top-K selection.

// ROUTER_MAX_E bounds E and ROUTER_MAX_K bounds K: the probabilities of one
// token and its picks live in threadgroup memory.
#define ROUTER_MAX_E 1024
#define ROUTER_MAX_K 64

// router_pick_tg fills sel[0..K) with the K largest p among the token's E logits
// at row, ties to the lower index, and picked[0..K) with their p, where
// p = bf16(softmax_f32(logits)) (the sum's reciprocal times each exponential),
// and returns the picks' sum in selection order. One SIMD-group runs it: lane
// l owns experts l, l+32, ... of p; each of the K rounds is a lane-local scan
// and a butterfly argmax, after which the owner marks the winner taken
// (p = −1). With NaN logits no expert wins a round and it picks the last
// one, a valid id. p holds E floats, sel and picked K each, threadgroup memory;
// lane 0 writes sel and picked, visible to the SIMD-group after SIMD_BARRIER.
INLINE float router_pick_tg(device const bf16_t *row, int E, int K, threadgroup float *p, threadgroup int *sel,
                            threadgroup float *picked, int lane) {
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
  // Each round's argmax runs on one word a candidate: a p is a bf16 value
  // ≥ 0, whose float bits order as the values do and end in 16 zero bits,
  // which take 0xffff − e, so that the largest word is the largest p and
  // among equal ones the lowest expert: one shuffle a butterfly step instead
  // of two. A taken expert (p = −1) or a NaN is the word 0, which nothing
  // loses to.
  float total = 0.0f;
  for (int s = 0; s < K; s++) {
    uint best = 0u;
    for (int e = lane; e < E; e += 32) {
      float v = p[e];
      uint key = v >= 0.0f ? (as_uint(v) & 0xffff0000u) | (0xffffu - (uint)e) : 0u;
      best = key > best ? key : best;
    }
    for (int off = 16; off > 0; off >>= 1) {
      uint other = simd_shuffle_xor(best, (uint)off);
      best = other > best ? other : best;
    }
    // No candidate left (NaN logits): the last expert, a valid one, with p −2
    // as the scan without words gave.
    int bi = best != 0u ? (int)(0xffffu - (best & 0xffffu)) : E - 1;
    float bv = best != 0u ? as_float(best & 0xffff0000u) : -2.0f;
    if (bi % 32 == lane) p[bi] = -1.0f;
    total += bv;  // every lane holds the same word: the butterfly ends agreed
    if (lane == 0) {
      sel[s] = bi;
      picked[s] = bv;
    }
  }
  SIMD_BARRIER();
  return total;
}

// ROUTER_REGS is the experts a lane of router_pick_regs holds: up to 256
// experts a token are picked in registers.
#define ROUTER_REGS 8

// router_pick_regs is router_pick_tg for E ≤ 32·ROUTER_REGS with each lane's
// experts in registers: the logits read once, and each round's scan and the
// winner's removal (its word set to 0: a word names its expert, so only the
// winner's equals the round's best) are register operations. The same p, the
// same words, the same rounds: the same picks and sum. One decode step's
// router_topk_bf16 took 5.5 µs with threadgroup memory (H200, 256 experts),
// a serial chain of some 1,400 instructions.
INLINE float router_pick_regs(device const bf16_t *row, int E, int K, threadgroup int *sel, threadgroup float *picked,
                              int lane) {
  float x[ROUTER_REGS];
  float m = -3.0e38f;
  UNROLL for (int i = 0; i < ROUTER_REGS; i++) {
    int e = lane + 32 * i;
    x[i] = e < E ? bf16_to_f32(row[e]) : 0.0f;
    if (e < E) m = fmaxf(m, x[i]);
  }
  m = simd_max(m);
  float sum = 0.0f;
  UNROLL for (int i = 0; i < ROUTER_REGS; i++) {
    if (lane + 32 * i < E) {
      x[i] = expf(x[i] - m);
      sum += x[i];
    }
  }
  float inv = 1.0f / simd_sum(sum);
  uint key[ROUTER_REGS];
  UNROLL for (int i = 0; i < ROUTER_REGS; i++) {
    int e = lane + 32 * i;
    float v = round_bf16(x[i] * inv);
    key[i] = e < E && v >= 0.0f ? (as_uint(v) & 0xffff0000u) | (0xffffu - (uint)e) : 0u;
  }
  float total = 0.0f;
  for (int s = 0; s < K; s++) {
    uint best = 0u;
    UNROLL for (int i = 0; i < ROUTER_REGS; i++) best = key[i] > best ? key[i] : best;
    for (int off = 16; off > 0; off >>= 1) {
      uint other = simd_shuffle_xor(best, (uint)off);
      best = other > best ? other : best;
    }
    int bi = best != 0u ? (int)(0xffffu - (best & 0xffffu)) : E - 1;
    float bv = best != 0u ? as_float(best & 0xffff0000u) : -2.0f;
    UNROLL for (int i = 0; i < ROUTER_REGS; i++) key[i] = key[i] == best ? 0u : key[i];
    total += bv;
    if (lane == 0) {
      sel[s] = bi;
      picked[s] = bv;
    }
  }
  SIMD_BARRIER();
  return total;
}

// router_pick is router_pick_tg, in registers where the experts fit
// (router_pick_regs).
INLINE float router_pick(device const bf16_t *row, int E, int K, threadgroup float *p, threadgroup int *sel,
                         threadgroup float *picked, int lane) {
  if (E <= 32 * ROUTER_REGS) return router_pick_regs(row, E, K, sel, picked, lane);
  return router_pick_tg(row, E, K, p, sel, picked, lane);
}

// router_write writes a token's ids and weights from router_pick's sel and
// picked: w = picked, or bf16(w / bf16(total)) when norm ≠ 0. Lanes of one
// SIMD-group share the K slots.
INLINE void router_write(threadgroup const int *sel, threadgroup const float *picked, float total, int K, int norm,
                         device int *ids, device bf16_t *weights, int lane) {
  if (norm != 0) total = round_bf16(total);
  for (int s = lane; s < K; s += 32) {
    ids[s] = sel[s];
    weights[s] = f32_to_bf16(norm != 0 ? picked[s] / total : picked[s]);
  }
}

// router_topk_bf16: logits [T, E] → ids i32 [T, K], weights [T, K]: the K
// largest p of each token (router_pick), weighted as router_write says.
// One SIMD-group per token.
// launch: grid(T) group(32)
// requires: E <= ROUTER_MAX_E
// requires: K <= ROUTER_MAX_K
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
  TG_MEM(int, sel, ROUTER_MAX_K);
  TG_MEM(float, picked, ROUTER_MAX_K);
  int t = TGID_X;
  if (t >= T) return;
  float total = router_pick(logits + (ulong)t * (ulong)E, E, K, p, sel, picked, LANE);
  router_write(sel, picked, total, K, norm, ids + (ulong)t * (ulong)K, weights + (ulong)t * (ulong)K, LANE);
}
