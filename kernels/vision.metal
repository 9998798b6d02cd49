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
// last step, the f32 result tile (LIN_BM rows of QG_LDC): 18 432 bytes. On
// the matrix units of CUDA sm_80+ the tiles are double-buffered (two stages
// of both: 36 864 bytes).
#if defined(MMA_WARP_NATIVE)
#define LIN_SMEM 9216
#else
#define LIN_SMEM 4608
#endif

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

#if defined(MMA_WARP_NATIVE)
// lin_copy issues the 16-byte copies of rows [r0, r0 + 64) of m ([n, In]
// bf16, In a multiple of 8) from column k0 into dst ([64][QG_LD]), zeros
// past n and In (cp_async16, tiled_attention.metal).
INLINE void lin_copy(threadgroup bf16_t *dst, device const bf16_t *m, int r0, int n, int k0, int In, int tid) {
  for (int i = tid; i < LIN_BM * (QG_BK / 8); i += LIN_THREADS) {
    int r = i / (QG_BK / 8), c = (i % (QG_BK / 8)) * 8;
    int row = r0 + r, k = k0 + c;
    bool ok = row < n && k < In;
    cp_async16(dst + r * QG_LD + c, m + (ok ? (ulong)row * (ulong)In + (ulong)k : 0), ok);
  }
}

// lin_tiles_async is linear_bf16's product for In a multiple of 8: both
// tiles copied 16 bytes at a time without passing through registers, the
// next step's copies in flight during this step's products (two stages).
// The products are those of the element-wise staging in the same order, so
// the sums are the same bits. It leaves the SIMD-group's share in acc.
INLINE void lin_tiles_async(thread mma_warp &acc, threadgroup MMA_T *tiles, device const bf16_t *x,
                            device const bf16_t *w, int T, int In, int Out, int m0, int o0, int wm, int wn,
                            int tid, int lane) {
  const int stage = (LIN_BM + LIN_BN) * QG_LD;
  int steps = (In + QG_BK - 1) / QG_BK;
  bool on = m0 + wm < T && o0 + wn < Out;  // uniform across the SIMD-group
  lin_copy(tiles, x, m0, T, 0, In, tid);
  lin_copy(tiles + LIN_BM * QG_LD, w, o0, Out, 0, In, tid);
  cp_async_commit();
  for (int s = 0; s < steps; s++) {
    threadgroup MMA_T *A = tiles + (s & 1) * stage, *B = A + LIN_BM * QG_LD;
    if (s + 1 < steps) {  // the other stage, free since the last step's closing barrier
      threadgroup MMA_T *nA = tiles + ((s + 1) & 1) * stage;
      lin_copy(nA, x, m0, T, (s + 1) * QG_BK, In, tid);
      lin_copy(nA + LIN_BM * QG_LD, w, o0, Out, (s + 1) * QG_BK, In, tid);
    }
    cp_async_commit();  // (empty at the end: the waits count groups)
    cp_async_wait_older();
    BARRIER();
    if (on) {
      uint a = mma_lane_a(A + wm * QG_LD, QG_LD, lane), b = mma_lane_b(B + wn * QG_LD, QG_LD, lane);
      UNROLL for (int kk = 0; kk < QG_BK; kk += 16) mma_warp_at(acc, a + (uint)(2 * kk), b + (uint)(2 * kk), QG_LD, QG_LD);
    }
    BARRIER();
  }
  cp_async_wait_all();
}
#endif

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
#if defined(MMA_WARP_NATIVE)
  if (In % 8 == 0) {  // uniform: every row of x and w starts on 16 bytes
    lin_tiles_async(acc, As, x, w, T, In, Out, m0, o0, wm, wn, tid, lane);
  } else
#endif
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
// each H heads of D) into q [T, H, Dp], k and v [H, T, Dp], q and k rotated by
// the 2-D rotary: with half = D/2 and quarter = D/4, dim d < half turns with
// (d + half) by the angle pos[t, 0]·theta^(−2j/half) for j = d < quarter (the
// patch's row) and pos[t, 1]·theta^(−2j/half) for j = d − quarter otherwise
// (its column); in f32, rounded once. Dims D..Dp−1 are zeros: heads padded to
// the matrix units' 16 (the released tower's 72 to 80) for attention_full_bf16.
// One thread per (t, h, d < half).
// launch: elements(T * H * (D / 2))
// requires: D <= Dp
KERNEL(vision_attn_prep_bf16,
       BUFFER(const bf16_t, qkv, 0),
       BUFFER(const int, pos, 1),
       BUFFER(bf16_t, q, 2),
       BUFFER(bf16_t, k, 3),
       BUFFER(bf16_t, v, 4),
       PARAM(int, T, 5),
       PARAM(int, H, 6),
       PARAM(int, D, 7),
       PARAM(int, Dp, 8),
       PARAM(float, theta, 9)) {
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
  ulong qo = th * (ulong)Dp, ko = ((ulong)h * (ulong)T + (ulong)t) * (ulong)Dp;
  ulong part = (ulong)H * (ulong)D;
  float q1 = bf16_to_f32(qkv[row + d]), q2 = bf16_to_f32(qkv[row + d + hd2]);
  q[qo + d] = f32_to_bf16(q1 * c - q2 * s);
  q[qo + d + hd2] = f32_to_bf16(q2 * c + q1 * s);
  float k1 = bf16_to_f32(qkv[row + part + d]), k2 = bf16_to_f32(qkv[row + part + d + hd2]);
  k[ko + d] = f32_to_bf16(k1 * c - k2 * s);
  k[ko + d + hd2] = f32_to_bf16(k2 * c + k1 * s);
  v[ko + d] = qkv[row + 2 * part + d];
  v[ko + d + hd2] = qkv[row + 2 * part + d + hd2];
  for (int e = D + d; e < Dp; e += hd2) {  // the padding
    q[qo + e] = (bf16_t)0;
    k[ko + e] = (bf16_t)0;
    v[ko + e] = (bf16_t)0;
  }
}

// attention_full_bf16's tiles: four SIMD-groups of 16 queries each (VA_BQ
// a threadgroup of VA_THREADS), keys VA_BK at a time, heads of up to
// VA_MAX_D (rows of VA_LD bf16 in threadgroup memory at most).
#define VA_THREADS 128
#define VA_BQ 64
#define VA_BK 64
#define VA_MAX_D 128
#define VA_LD 136

// attn_full_plain is attention_full_bf16 without the matrix units: SIMD-group
// simd of nsg takes rows simd, simd + nsg, ... of the tile, its lanes
// splitting the head's Dp values, the keys walked in order.
INLINE void attn_full_plain(device const bf16_t *q, device const bf16_t *k, device const bf16_t *v,
                            device bf16_t *out, int T, int H, int D, int Dp, float scale, int t0, int h, int lane,
                            int simd, int nsg) {
  for (int r = simd; r < VA_BQ && t0 + r < T; r += nsg) {
    int t = t0 + r;
    device const bf16_t *qr = q + ((ulong)t * (ulong)H + (ulong)h) * (ulong)Dp;
    float qv[FA_MAX_D / 32], ov[FA_MAX_D / 32];
    UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
      int d = lane + 32 * i;
      qv[i] = d < Dp ? bf16_to_f32(qr[d]) : 0.0f;
      ov[i] = 0.0f;
    }
    float m = -1e30f, l = 0.0f;
    for (int j = 0; j < T; j++) {
      ulong row = ((ulong)h * (ulong)T + (ulong)j) * (ulong)Dp;
      float s = 0.0f;
      UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
        int d = lane + 32 * i;
        if (d < Dp) s += qv[i] * bf16_to_f32(k[row + (ulong)d]);
      }
      s = scale * simd_sum(s);
      float mNew = fmaxf(m, s), corr = expf(m - mNew), p = expf(s - mNew);
      l = l * corr + p;
      UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
        int d = lane + 32 * i;
        ov[i] = ov[i] * corr + (d < Dp ? p * bf16_to_f32(v[row + (ulong)d]) : 0.0f);
      }
      m = mNew;
    }
    device bf16_t *dst = out + ((ulong)t * (ulong)H + (ulong)h) * (ulong)D;
    UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
      int d = lane + 32 * i;
      if (d < D) dst[d] = f32_to_bf16(ov[i] / l);
    }
  }
}

#if defined(MMA_WARP_NATIVE)
// va_load issues the copies of keys (or values) j0..j0+VA_BK of a head
// (rows from head, D bf16 each) into dst [VA_BK][D + 8]; rows past T zeros.
template <int D>
INLINE void va_load(threadgroup bf16_t *dst, device const bf16_t *src, ulong head, int j0, int T, int tid) {
  const int per = D / 8;  // 16-byte pieces a row
  for (int i = tid; i < VA_BK * per; i += VA_THREADS) {
    int r = i / per, c = (i % per) * 8;
    bool ok = j0 + r < T;
    cp_async16(dst + r * (D + 8) + c, src + (head + (ulong)(ok ? j0 + r : 0)) * (ulong)D + (ulong)c, ok);
  }
}

// va_tiled is attention_full_bf16 on the matrix units for heads of D
// (padded, a multiple of 16, known when compiled: the fragments' arrays are
// exactly the head's, which keeps the registers to about 130 a lane and
// three threadgroups on a multiprocessor). Each SIMD-group owns 16 queries
// and all D of their output, so no two compute the same scores (the prompt
// kernel's fa_core splits a head's output over a pair, for D up to 256).
// S = Q·Kᵀ and O += P·V as mma.sync m16n8k16 products, the online softmax
// in f32 in log2 units between them, P rounded to bf16 for the second
// product; keys and values staged by cp.async, the next block's keys in
// flight during the softmax and its values during the next scores.
template <int D>
INLINE void va_tiled(device const bf16_t *q, device const bf16_t *k, device const bf16_t *v, device bf16_t *out,
                     threadgroup bf16_t *Ks, threadgroup bf16_t *Vs, int T, int H, int Dout, float scale, int t0,
                     int h, int tid, int lane, int simd) {
  const int NB = D / 16, LD = D + 8;
  int g = lane >> 2, qd = lane & 3, mi = lane >> 3, r8 = lane & 7;
  int w0 = t0 + 16 * simd;  // the SIMD-group's first query
  bool live = w0 < T;
  uint qa[NB][4];  // A fragments: rows g, g + 8 at columns 2qd.., then 2qd + 8..
  UNROLL for (int kb = 0; kb < NB; kb++)
    for (int i = 0; i < 4; i++) {
      int t = w0 + g + 8 * (i & 1), col = 16 * kb + 2 * qd + 8 * (i >> 1);
      qa[kb][i] = t < T ? *(device const uint *)(q + ((ulong)t * (ulong)H + (ulong)h) * (ulong)D + col) : 0u;
    }
  float o[2 * NB][4];
  UNROLL for (int nb = 0; nb < 2 * NB; nb++)
    for (int i = 0; i < 4; i++) o[nb][i] = 0.0f;
  float m[2] = {-1e30f, -1e30f}, l[2] = {0.0f, 0.0f};
  float sl = scale * FA_LOG2E;
  ulong head = (ulong)h * (ulong)T;
  uint kLane = smem_u32(Ks + ((mi >> 1) * 8 + r8) * LD + (mi & 1) * 8);
  uint vLane = smem_u32(Vs + ((mi & 1) * 8 + r8) * LD + (mi >> 1) * 8);
  va_load<D>(Ks, k, head, 0, T, tid);
  cp_async_commit();
  va_load<D>(Vs, v, head, 0, T, tid);
  cp_async_commit();
  for (int j0 = 0; j0 < T; j0 += VA_BK) {
    cp_async_wait_older();  // the keys
    BARRIER();
    float s[VA_BK / 8][4];
    UNROLL for (int nb = 0; nb < VA_BK / 8; nb++)
      for (int i = 0; i < 4; i++) s[nb][i] = 0.0f;
    if (live) {
      UNROLL for (int kb = 0; kb < NB; kb++)
        for (int j = 0; j < VA_BK / 16; j++) {
          uint b[4];
          ldsm_x4_at(kLane + (uint)(2 * (16 * j * LD + 16 * kb)), b);
          fa_mma(s[2 * j], qa[kb], b[0], b[1]);
          fa_mma(s[2 * j + 1], qa[kb], b[2], b[3]);
        }
    }
    BARRIER();  // every SIMD-group is done with the keys
    if (j0 + VA_BK < T) va_load<D>(Ks, k, head, j0 + VA_BK, T, tid);
    cp_async_commit();  // (empty at the end: the waits count groups)
    uint pa[VA_BK / 16][4];
    if (live) {
      float mx[2] = {m[0], m[1]};
      bool tail = j0 + VA_BK > T;  // uniform: only the last block has keys past T
      UNROLL for (int nb = 0; nb < VA_BK / 8; nb++)
        for (int i = 0; i < 4; i++) {
          float x = s[nb][i] * sl;
          if (tail && j0 + 8 * nb + 2 * qd + (i & 1) >= T) x = -3.0e38f;
          s[nb][i] = x;
          mx[i >> 1] = fmaxf(mx[i >> 1], x);
        }
      float corr[2], sum[2] = {0.0f, 0.0f};
      UNROLL for (int row = 0; row < 2; row++) {
        mx[row] = fmaxf(mx[row], simd_shuffle_xor(mx[row], 1));
        mx[row] = fmaxf(mx[row], simd_shuffle_xor(mx[row], 2));
        corr[row] = exp2f(m[row] - mx[row]);
        m[row] = mx[row];
      }
      UNROLL for (int nb = 0; nb < VA_BK / 8; nb++)
        for (int i = 0; i < 4; i++) {
          float p = exp2f(s[nb][i] - mx[i >> 1]);
          s[nb][i] = p;
          sum[i >> 1] += p;
        }
      UNROLL for (int row = 0; row < 2; row++) l[row] = l[row] * corr[row] + sum[row];  // a lane's share
      UNROLL for (int nb = 0; nb < 2 * NB; nb++)
        for (int i = 0; i < 4; i++) o[nb][i] *= corr[i >> 1];
      UNROLL for (int kb = 0; kb < VA_BK / 16; kb++) {  // P as A fragments
        pa[kb][0] = fa_pack2(s[2 * kb][0], s[2 * kb][1]);
        pa[kb][1] = fa_pack2(s[2 * kb][2], s[2 * kb][3]);
        pa[kb][2] = fa_pack2(s[2 * kb + 1][0], s[2 * kb + 1][1]);
        pa[kb][3] = fa_pack2(s[2 * kb + 1][2], s[2 * kb + 1][3]);
      }
    }
    cp_async_wait_older();  // the values
    BARRIER();
    if (live) {
      UNROLL for (int kb = 0; kb < VA_BK / 16; kb++)
        for (int db = 0; db < NB; db++) {
          uint b[4];
          ldsm_x4_trans_at(vLane + (uint)(2 * (16 * kb * LD + 16 * db)), b);
          fa_mma(o[2 * db], pa[kb], b[0], b[1]);
          fa_mma(o[2 * db + 1], pa[kb], b[2], b[3]);
        }
    }
    BARRIER();  // every SIMD-group is done with the values
    if (j0 + VA_BK < T) va_load<D>(Vs, v, head, j0 + VA_BK, T, tid);
    cp_async_commit();
  }
  cp_async_wait_all();  // no copy outlives the threadgroup
  UNROLL for (int row = 0; row < 2; row++) {
    l[row] += simd_shuffle_xor(l[row], 1);
    l[row] += simd_shuffle_xor(l[row], 2);
    int t = w0 + g + 8 * row;
    if (t >= T) continue;
    float inv = 1.0f / l[row];
    device bf16_t *dst = out + ((ulong)t * (ulong)H + (ulong)h) * (ulong)Dout;
    UNROLL for (int nb = 0; nb < 2 * NB; nb++) {
      int d = 8 * nb + 2 * qd;
      if (d < Dout) *(device uint *)(dst + d) = fa_pack2(o[nb][2 * row] * inv, o[nb][2 * row + 1] * inv);
    }
  }
}

// va_tiled_at runs va_tiled for the head width Dp (a multiple of 16 up to
// VA_MAX_D); it says false, having done nothing, for another.
INLINE bool va_tiled_at(int Dp, device const bf16_t *q, device const bf16_t *k, device const bf16_t *v,
                        device bf16_t *out, threadgroup bf16_t *Ks, threadgroup bf16_t *Vs, int T, int H, int D,
                        float scale, int t0, int h, int tid, int lane, int simd) {
  switch (Dp) {
    case 16: va_tiled<16>(q, k, v, out, Ks, Vs, T, H, D, scale, t0, h, tid, lane, simd); return true;
    case 32: va_tiled<32>(q, k, v, out, Ks, Vs, T, H, D, scale, t0, h, tid, lane, simd); return true;
    case 48: va_tiled<48>(q, k, v, out, Ks, Vs, T, H, D, scale, t0, h, tid, lane, simd); return true;
    case 64: va_tiled<64>(q, k, v, out, Ks, Vs, T, H, D, scale, t0, h, tid, lane, simd); return true;
    case 80: va_tiled<80>(q, k, v, out, Ks, Vs, T, H, D, scale, t0, h, tid, lane, simd); return true;
    case 96: va_tiled<96>(q, k, v, out, Ks, Vs, T, H, D, scale, t0, h, tid, lane, simd); return true;
    case 112: va_tiled<112>(q, k, v, out, Ks, Vs, T, H, D, scale, t0, h, tid, lane, simd); return true;
    case 128: va_tiled<128>(q, k, v, out, Ks, Vs, T, H, D, scale, t0, h, tid, lane, simd); return true;
  }
  return false;
}
#endif

#define KERNEL_BOUNDS_attention_full_bf16 BOUNDS(VA_THREADS, 3)
// attention_full_bf16: q [T, H, Dp], k and v [H, T, Dp] (vision_attn_prep_bf16's:
// heads of D padded with zeros to Dp), out [T, H, D]: every query sees all T
// keys of its head (one image's patches, no mask); scores scale·(q·k) and the
// softmax in f32. On CUDA sm_80+ with Dp a multiple of 16 up to VA_MAX_D the
// products run on the matrix units (va_tiled; P rounded to bf16 for P·V: bf16
// noise against the reference, as attention_flash_bf16); elsewhere one row a
// SIMD-group. Threadgroups take VA_BQ queries of a head.
// launch: grid(ceil(T, VA_BQ) * H) group(VA_THREADS)
// requires: Dp <= FA_MAX_D
// requires: D <= Dp
KERNEL(attention_full_bf16,
       BUFFER(const bf16_t, q, 0),
       BUFFER(const bf16_t, k, 1),
       BUFFER(const bf16_t, v, 2),
       BUFFER(bf16_t, out, 3),
       PARAM(int, T, 4),
       PARAM(int, H, 5),
       PARAM(int, D, 6),
       PARAM(int, Dp, 7),
       PARAM(float, scale, 8)) {
  GRID_WAIT_COMPUTE();
  int h = TGID_X % H, t0 = (TGID_X / H) * VA_BQ;
#if defined(MMA_WARP_NATIVE)
  TG_MEM_ALIGNED16(bf16_t, Ks, VA_BK * VA_LD);
  TG_MEM_ALIGNED16(bf16_t, Vs, VA_BK * VA_LD);
  if (D % 2 == 0 && va_tiled_at(Dp, q, k, v, out, Ks, Vs, T, H, D, scale, t0, h, TID_X, LANE, SIMD_ID)) return;
#endif
  attn_full_plain(q, k, v, out, T, H, D, Dp, scale, t0, h, LANE, SIMD_ID, SIMD_COUNT);
}
