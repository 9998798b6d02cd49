// The vision tower's kernels (Qwen3.5 reuses Qwen3-VL's ViT): dense bf16
// linears with a bias and an activation, LayerNorm with a bias, the 2-D
// rotary with the q/k/v split, and attention in which every patch of an
// image sees every other. Its weights are bf16 as mlx-vlm keeps them (the
// quantized kernels of quant.metal and qgemm.metal do not take them).

// ---- Activations -------------------------------------------------------------
// LINEAR_ACT_* are linear_bf16's act: none, GELU's tanh form (the blocks'
// gelu_pytorch_tanh) and the exact one (the merger's nn.GELU()).
#define LINEAR_ACT_NONE 0
#define LINEAR_ACT_GELU_TANH 1
#define LINEAR_ACT_GELU 2

// erf_f32 is erf in f32 (Metal's library has none): Abramowitz and Stegun
// 7.1.26, |error| ≤ 1.5e-7, far below a bf16 output's step.
INLINE float erf_f32(float x) {
  float a = fabsf(x), t = 1.0f / (1.0f + 0.3275911f * a);
  float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  float y = 1.0f - poly * expf(-a * a);
  return x < 0.0f ? -y : y;
}

// linear_act applies act to v (f32).
INLINE float linear_act(float v, int act) {
  if (act == LINEAR_ACT_GELU_TANH) return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  if (act == LINEAR_ACT_GELU) return 0.5f * v * (1.0f + erf_f32(v * 0.7071067812f));
  return v;
}

// ---- linear_bf16 -------------------------------------------------------------
// A tile of LIN_BM token rows × LIN_BN output rows, four SIMD-groups of 32×32
// on the matrix units (qgemm.metal's mma_warp_32x32x16: CUDA sm_80+ bf16,
// Metal's f32 SIMD-group matrices, a plain loop elsewhere), stepping over the
// input QG_BK at a time; both tiles staged element by element with zeros past
// the ends (any In, any alignment). The result leaves through threadgroup
// memory in f32, where the bias and the activation are applied.
#define LIN_BM 64
#define LIN_BN 64
#define LIN_THREADS 128
// The two tiles ((LIN_BM + LIN_BN)·QG_LD elements of MMA_T) or, after the
// last step, the f32 result tile (LIN_BM rows of QG_LDC): 18 432 bytes.
#define LIN_SMEM 4608

// lin_stage stages rows [r0, r0 + rows) of m ([n, In] bf16) from column k0
// into the tile dst ([rows][QG_LD]), zeros past n and In.
INLINE void lin_stage(threadgroup MMA_T *dst, device const bf16_t *m, int r0, int rows, int n, int k0, int In,
                      int tid) {
  for (int i = tid; i < rows * QG_BK; i += LIN_THREADS) {
    int r = i / QG_BK, j = i % QG_BK;
    int row = r0 + r, k = k0 + j;
    bf16_t v = row < n && k < In ? m[(ulong)row * (ulong)In + (ulong)k] : (bf16_t)0;
#if defined(__METAL_VERSION__)
    dst[r * QG_LD + j] = bf16_to_f32(v);
#else
    dst[r * QG_LD + j] = v;
#endif
  }
}

// linear_bf16: out[t, o] = bf16(act(bf16(Σ_j x[t, j]·w[o, j] + bias[o]))), the
// sum in f32 in the matrix unit's order; with act none the inner rounding is
// the outer one. x [T, In], w [Out, In], bias [Out], out [T, Out], all bf16.
// Token tiles vary fastest in the grid, so the threadgroups that share a
// weight tile run together.
// launch: grid(ceil(T, LIN_BM) * ceil(Out, LIN_BN)) group(LIN_THREADS)
KERNEL(linear_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const bf16_t, w, 1),
       BUFFER(const bf16_t, bias, 2),
       BUFFER(bf16_t, out, 3),
       PARAM(int, T, 4),
       PARAM(int, In, 5),
       PARAM(int, Out, 6),
       PARAM(int, act, 7)) {
  GRID_WAIT_COMPUTE();
  TG_MEM_ALIGNED16(float, smem, LIN_SMEM);  // ldmatrix reads 16-byte rows
  int mtiles = (T + LIN_BM - 1) / LIN_BM;
  int m0 = (TGID_X % mtiles) * LIN_BM, o0 = (TGID_X / mtiles) * LIN_BN;
  int tid = TID_X, lane = LANE, simd = SIMD_ID;
  threadgroup MMA_T *As = (threadgroup MMA_T *)smem;
  threadgroup MMA_T *Bs = As + LIN_BM * QG_LD;
  int wm = (simd >> 1) * 32, wn = (simd & 1) * 32;
  mma_warp acc;
  UNROLL for (int i = 0; i < 4; i++) mma_zero(acc.c[i]);
  for (int k0 = 0; k0 < In; k0 += QG_BK) {
    lin_stage(As, x, m0, LIN_BM, T, k0, In, tid);
    lin_stage(Bs, w, o0, LIN_BN, Out, k0, In, tid);
    BARRIER();
    if (m0 + wm < T && o0 + wn < Out) {  // uniform across the SIMD-group
      for (int kk = 0; kk < QG_BK; kk += 16)
        mma_warp_32x32x16(acc, As + wm * QG_LD + kk, QG_LD, Bs + wn * QG_LD + kk, QG_LD, lane);
    }
    BARRIER();
  }
  UNROLL for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) mma_store(acc.c[2 * i + j], smem + (wm + 16 * i) * QG_LDC + wn + 16 * j, QG_LDC, lane);
  BARRIER();
  for (int i = tid; i < LIN_BM * LIN_BN; i += LIN_THREADS) {
    int r = i / LIN_BN, n = i % LIN_BN, t = m0 + r, o = o0 + n;
    if (t < T && o < Out) {
      float v = round_bf16(smem[r * QG_LDC + n] + bf16_to_f32(bias[o]));
      out[(ulong)t * (ulong)Out + (ulong)o] = f32_to_bf16(linear_act(v, act));
    }
  }
}

// ---- layer_norm_bf16 ---------------------------------------------------------
// layer_norm_bf16: out = bf16((x − μ)·rsqrt(σ² + eps)·w + b) per row of x [R, N]
// (μ and the biased σ² in f32, as PyTorch's LayerNorm takes a bf16 input),
// w and b [N]. One threadgroup per row; out may alias x (each thread writes
// only the elements it read, after both sums).
// launch: grid(R) group(min(256, max(32, ceil(N, 32) * 32)))
KERNEL(layer_norm_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const bf16_t, w, 1),
       BUFFER(const bf16_t, b, 2),
       BUFFER(bf16_t, out, 3),
       PARAM(int, R, 4),
       PARAM(int, N, 5),
       PARAM(float, eps, 6)) {
  GRID_WAIT();
  TG_MEM(float, partial, 32);
  if (TGID_X >= R) return;  // uniform across the threadgroup
  ulong base = (ulong)TGID_X * (ulong)N;
  float s = 0.0f;
  for (int i = TID_X; i < N; i += TG_SIZE_X) s += bf16_to_f32(x[base + i]);
  float mean = tg_sum(s, partial, LANE, SIMD_ID, SIMD_COUNT) / (float)N;
  float ss = 0.0f;
  for (int i = TID_X; i < N; i += TG_SIZE_X) {
    float d = bf16_to_f32(x[base + i]) - mean;
    ss += d * d;
  }
  float inv = rsqrtf(tg_sum(ss, partial, LANE, SIMD_ID, SIMD_COUNT) / (float)N + eps);
  for (int i = TID_X; i < N; i += TG_SIZE_X) {
    float d = bf16_to_f32(x[base + i]) - mean;
    out[base + i] = f32_to_bf16(d * inv * bf16_to_f32(w[i]) + bf16_to_f32(b[i]));
  }
}

// ---- The vision attention ----------------------------------------------------
// vision_attn_prep_bf16: qkv [T, 3, H, D] (the qkv linear's output: q, k, v,
// each H heads of D) into q [T, H, D], k and v [H, T, D], q and k rotated by
// the 2-D rotary: with half = D/2 and quarter = D/4, dim d < half turns with
// (d + half) by the angle pos[t, 0]·theta^(−2j/half) for j = d < quarter (the
// patch's row) and pos[t, 1]·theta^(−2j/half) for j = d − quarter otherwise
// (its column); in f32, rounded once. One thread per (t, h, d < half).
// launch: elements(T * H * (D / 2))
KERNEL(vision_attn_prep_bf16,
       BUFFER(const bf16_t, qkv, 0),
       BUFFER(const int, pos, 1),
       BUFFER(bf16_t, q, 2),
       BUFFER(bf16_t, k, 3),
       BUFFER(bf16_t, v, 4),
       PARAM(int, T, 5),
       PARAM(int, H, 6),
       PARAM(int, D, 7),
       PARAM(float, theta, 8)) {
  GRID_WAIT();
  int hd2 = D / 2, hd4 = D / 4;
  ulong idx = (ulong)TGID_X * (ulong)TG_SIZE_X + (ulong)TID_X;
  if (idx >= (ulong)T * (ulong)H * (ulong)hd2) return;
  int d = (int)(idx % (ulong)hd2);
  ulong th = idx / (ulong)hd2;  // t·H + h
  int t = (int)(th / (ulong)H), h = (int)(th % (ulong)H);
  int j = d < hd4 ? d : d - hd4;
  float a = (float)pos[2 * t + (d < hd4 ? 0 : 1)] * powf(theta, -(float)(2 * j) / (float)hd2);
  float c = cosf(a), s = sinf(a);
  ulong row = (ulong)t * (ulong)(3 * H * D) + (ulong)h * (ulong)D;
  ulong qo = th * (ulong)D, ko = ((ulong)h * (ulong)T + (ulong)t) * (ulong)D;
  ulong part = (ulong)H * (ulong)D;
  float q1 = bf16_to_f32(qkv[row + d]), q2 = bf16_to_f32(qkv[row + d + hd2]);
  q[qo + d] = f32_to_bf16(q1 * c - q2 * s);
  q[qo + d + hd2] = f32_to_bf16(q2 * c + q1 * s);
  float k1 = bf16_to_f32(qkv[row + part + d]), k2 = bf16_to_f32(qkv[row + part + d + hd2]);
  k[ko + d] = f32_to_bf16(k1 * c - k2 * s);
  k[ko + d + hd2] = f32_to_bf16(k2 * c + k1 * s);
  v[ko + d] = qkv[row + 2 * part + d];
  v[ko + d + hd2] = qkv[row + 2 * part + d + hd2];
}

// attention_full_bf16: q [T, H, D], k and v [H, T, D], out [T, H, D]: every
// query sees all T keys of its head (one image's patches, no mask); scores
// scale·(q·k) and the softmax in f32. attention_bf16's walk: one threadgroup
// per (t, h), its SIMD-groups taking the keys round-robin.
// launch: grid(T * H) group(ATTN_SIMDGROUPS * 32)
// requires: D <= ATTN_MAX_D
KERNEL(attention_full_bf16,
       BUFFER(const bf16_t, q, 0),
       BUFFER(const bf16_t, k, 1),
       BUFFER(const bf16_t, v, 2),
       BUFFER(bf16_t, out, 3),
       PARAM(int, T, 4),
       PARAM(int, H, 5),
       PARAM(int, D, 6),
       PARAM(float, scale, 7)) {
  GRID_WAIT_COMPUTE();
  TG_MEM(float, sgMax, ATTN_SIMDGROUPS);
  TG_MEM(float, sgSum, ATTN_SIMDGROUPS);
  TG_MEM(float, sgOut, ATTN_SIMDGROUPS * ATTN_MAX_D);
  int item = TGID_X;  // t·H + h
  int h = item % H;
  int lane = LANE, sg = SIMD_ID, nsg = SIMD_COUNT;
  float qv[ATTN_PER_LANE];
  float o[ATTN_PER_LANE];
  attn_row8(q + (ulong)item * (ulong)D, D, lane, qv);
  UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) o[i] = 0.0f;
  float m = ATTN_NEG_BIG, l = 0.0f;
  attn_walk(qv, k, v, (ulong)h * (ulong)T, sg, T, nsg, D, scale, lane, &m, &l, o);
  float mAll, lAll;
  attn_share(m, l, o, sgMax, sgSum, sgOut, D, lane, sg, nsg, &mAll, &lAll);
  for (int d = TID_X; d < D; d += TG_SIZE_X) {
    float acc = 0.0f;
    for (int s = 0; s < nsg; s++) acc += sgOut[s * ATTN_MAX_D + d] * expf(sgMax[s] - mAll);
    out[(ulong)item * (ulong)D + (ulong)d] = f32_to_bf16(acc / lAll);
  }
}
