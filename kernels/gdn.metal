// Gated DeltaNet pieces: the causal depthwise conv with its carried state, the
// per-head gates, and the delta-rule recurrence.

#define CONV_MAX_K 8
#define CONV_TOKENS 16

// conv1d_silu_bf16: x [T, C], state [K−1, C] (in/out), w [C, K], out [T, C].
// ci = concat(state, x) by rows; out[t, c] = bf16(silu(Σ_k ci[t+k, c]·w[c, k]));
// afterwards state = the last K−1 rows of ci. A thread takes one channel and
// CONV_TOKENS tokens with the window in registers, so a prompt spreads over
// ceil(T, CONV_TOKENS) times as many threads as a decode step. The thread of
// the first tokens (the only one that reads the state) writes the new state
// after reading the old. 1 ≤ K ≤ CONV_MAX_K ≤ CONV_TOKENS + 1.
// launch: grid(ceil(C, 256) * ceil(T, CONV_TOKENS)) group(256)
// requires: K <= CONV_MAX_K
KERNEL(conv1d_silu_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(bf16_t, state, 1),
       BUFFER(const bf16_t, w, 2),
       BUFFER(bf16_t, out, 3),
       PARAM(int, T, 4),
       PARAM(int, C, 5),
       PARAM(int, K, 6)) {
  int cblocks = (C + TG_SIZE_X - 1) / TG_SIZE_X;
  int c = (TGID_X % cblocks) * TG_SIZE_X + TID_X;
  int t0 = (TGID_X / cblocks) * CONV_TOKENS;
  if (c >= C || t0 >= T) return;
  int t1 = imin(T, t0 + CONV_TOKENS);
  // The K weights and the window sit at the top of CONV_MAX_K registers (the
  // newest input at CONV_MAX_K − 1), so every index is a constant once the
  // loops unroll; the products run in the order k = 0 .. K−1 as before.
  int lead = CONV_MAX_K - K;
  float wa[CONV_MAX_K];
  float win[CONV_MAX_K];
  UNROLL for (int i = 0; i < CONV_MAX_K; i++) {
    int k = i - lead;
    wa[i] = k >= 0 ? bf16_to_f32(w[(ulong)c * (ulong)K + (ulong)k]) : 0.0f;
    win[i] = 0.0f;
    if (k >= 0 && k < K - 1) {
      int r = t0 + k;  // a ci row: the state's below K−1, x's from there
      win[i] = bf16_to_f32(r < K - 1 ? state[(ulong)r * (ulong)C + (ulong)c] : x[(ulong)(r - (K - 1)) * (ulong)C + (ulong)c]);
    }
  }
  for (int t = t0; t < t1; t++) {
    win[CONV_MAX_K - 1] = bf16_to_f32(x[(ulong)t * (ulong)C + (ulong)c]);
    float acc = 0.0f;
    UNROLL for (int i = 0; i < CONV_MAX_K; i++) {
      if (i >= lead) acc += win[i] * wa[i];
    }
    out[(ulong)t * (ulong)C + (ulong)c] = f32_to_bf16(siluf(acc));
    UNROLL for (int i = 0; i < CONV_MAX_K - 1; i++) win[i] = win[i + 1];
  }
  if (t0 != 0) return;
  // The new state is ci's last K−1 rows. Row j reads ci row T + j > j, which
  // no earlier step of this loop has overwritten.
  for (int j = 0; j < K - 1; j++) {
    int r = T + j;
    state[(ulong)j * (ulong)C + (ulong)c] =
        r < K - 1 ? state[(ulong)r * (ulong)C + (ulong)c] : x[(ulong)(r - (K - 1)) * (ulong)C + (ulong)c];
  }
}

// log1p_f is log(1+x) for x ≥ 0 without losing small x (Goldberg's correction).
INLINE float log1p_f(float x) {
  float u = 1.0f + x;
  if (u == 1.0f) return x;
  return logf(u) * (x / (u - 1.0f));
}

// softplus_f is log(1+e^x) as MLX's logaddexp(x, 0): max(x,0) + log1p(e^−|x|).
INLINE float softplus_f(float x) { return fmaxf(x, 0.0f) + log1p_f(expf(-fabsf(x))); }

// gdn_gates_bf16: a, b [T, Hv]; aLog f32 [Hv]; dtBias [Hv]; g, beta f32 [T, Hv].
// beta = bf16(σ(b)); g = exp(−exp(aLog)·bf16(softplus(bf16(a+dtBias)))).
// launch: elements(T * Hv)
KERNEL(gdn_gates_bf16,
       BUFFER(const bf16_t, a, 0),
       BUFFER(const bf16_t, b, 1),
       BUFFER(const float, aLog, 2),
       BUFFER(const bf16_t, dtBias, 3),
       BUFFER(float, g, 4),
       BUFFER(float, beta, 5),
       PARAM(int, T, 6),
       PARAM(int, Hv, 7)) {
  int i = TGID_X * TG_SIZE_X + TID_X;
  if (i >= T * Hv) return;
  int h = i % Hv;
  beta[i] = round_bf16(sigmoidf(bf16_to_f32(b[i])));
  float sp = round_bf16(softplus_f(round_bf16(bf16_to_f32(a[i]) + bf16_to_f32(dtBias[h]))));
  g[i] = expf(-expf(aLog[h]) * sp);
}

// The recurrence holds a state row of up to GDN_MAX_DK values, GDN_PER_LANE per lane.
#define GDN_MAX_DK 256
#define GDN_PER_LANE 8
// State rows (one SIMD-group each) per threadgroup of the recurrence.
#define GDN_ROWS_PER_GROUP 4

// gdn_qk_norm_bf16: conv [T, 2·Hk·Dk + Hv·Dv] laid out [q | k | v], in place:
// every q and k head of every token normalised and scaled exactly as
// gdn_recurrence_bf16 does it (q = bf16(bf16(q̂)·(1/Dk)), k = bf16(bf16(k̂)·Dk^−½),
// rms eps 1e-6); v unchanged. Run before the recurrence with normed = 1 over a
// prompt, so that each head is normalised once per token instead of once per
// state row (Dv times). One SIMD-group per (token, head of q or k).
// launch: grid(ceil(T * 2 * Hk, 4)) group(128)
// requires: Dk <= GDN_MAX_DK
KERNEL(gdn_qk_norm_bf16,
       BUFFER(bf16_t, conv, 0),
       PARAM(int, T, 1),
       PARAM(int, Hk, 2),
       PARAM(int, Hv, 3),
       PARAM(int, Dk, 4),
       PARAM(int, Dv, 5)) {
  int row = TGID_X * SIMD_COUNT + SIMD_ID;
  if (row >= T * 2 * Hk) return;  // uniform across the SIMD-group
  int t = row / (2 * Hk), j = row % (2 * Hk);  // j < Hk: q head j; else k head j − Hk
  int lane = LANE;
  device bf16_t *p = conv + (ulong)t * (ulong)(2 * Hk * Dk + Hv * Dv) + (ulong)(j * Dk);
  float v[GDN_PER_LANE];
  float ss = 0.0f;
  UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
    int d = lane + 32 * i;
    v[i] = d < Dk ? bf16_to_f32(p[d]) : 0.0f;
    ss += v[i] * v[i];
  }
  float inv = rsqrtf(simd_sum(ss) / (float)Dk + 1e-6f);
  float scale = j < Hk ? 1.0f / (float)Dk : 1.0f / sqrtf((float)Dk);
  UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
    int d = lane + 32 * i;
    if (d < Dk) p[d] = f32_to_bf16(round_bf16(v[i] * inv) * scale);
  }
}

// gdn_recurrence_bf16: conv [T, 2·Hk·Dk + Hv·Dv] laid out [q | k | v], g and beta
// f32 [T, Hv], state f32 [Hv, Dv, Dk] (in/out), out [T, Hv, Dv].
// Per token: q and k of k-head hk are rms-normalised (eps 1e-6) and scaled,
// q = bf16(bf16(q̂)·(1/Dk)), k = bf16(bf16(k̂)·Dk^−½); per v-head h (hk = h/(Hv/Hk)):
// S ← g·S; u = S·k; δ = beta·(v−u); S ← S + δ⊗k; out = bf16(S·q). With normed ≠ 0
// the q and k in conv are already normalised and scaled (gdn_qk_norm_bf16) and
// are used as they are.
//
// One SIMD-group owns one state row S[h, dv, :] (lane holds dk = lane+32i) for
// all T tokens: the row is read once and written once. Unless normed, every
// SIMD-group normalises q and k itself (two simd_sums per token), so no
// threadgroup memory or barrier is needed. Grid: Hv·ceil(Dv/SIMD_COUNT).
// launch: grid(Hv * ceil(Dv, GDN_ROWS_PER_GROUP)) group(GDN_ROWS_PER_GROUP * 32)
// requires: Dk <= GDN_MAX_DK
KERNEL(gdn_recurrence_bf16,
       BUFFER(const bf16_t, conv, 0),
       BUFFER(const float, g, 1),
       BUFFER(const float, beta, 2),
       BUFFER(float, state, 3),
       BUFFER(bf16_t, out, 4),
       PARAM(int, T, 5),
       PARAM(int, Hk, 6),
       PARAM(int, Hv, 7),
       PARAM(int, Dk, 8),
       PARAM(int, Dv, 9),
       PARAM(int, normed, 10)) {
  int blocks = (Dv + SIMD_COUNT - 1) / SIMD_COUNT;
  int h = TGID_X / blocks;
  int dv = (TGID_X % blocks) * SIMD_COUNT + SIMD_ID;
  if (h >= Hv || dv >= Dv) return;  // uniform across the SIMD-group
  int lane = LANE;
  int hk = h / (Hv / Hk);
  int width = 2 * Hk * Dk + Hv * Dv;
  float qScale = 1.0f / (float)Dk;
  float kScale = 1.0f / sqrtf((float)Dk);

  device float *srow = state + ((ulong)h * (ulong)Dv + (ulong)dv) * (ulong)Dk;
  float S[GDN_PER_LANE];
  UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
    int d = lane + 32 * i;
    S[i] = d < Dk ? srow[d] : 0.0f;
  }
  int live = (Dk + 31) / 32;  // the register slots that hold a dk (uniform)
  for (int t = 0; t < T; t++) {
    device const bf16_t *row = conv + (ulong)t * (ulong)width;
    float qv[GDN_PER_LANE], kv[GDN_PER_LANE];
    UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
      int d = lane + 32 * i;
      qv[i] = i < live && d < Dk ? bf16_to_f32(row[hk * Dk + d]) : 0.0f;
      kv[i] = i < live && d < Dk ? bf16_to_f32(row[(Hk + hk) * Dk + d]) : 0.0f;
    }
    if (normed == 0) {
      float qss = 0.0f, kss = 0.0f;
      UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
        qss += qv[i] * qv[i];
        kss += kv[i] * kv[i];
      }
      float qInv = rsqrtf(simd_sum(qss) / (float)Dk + 1e-6f);
      float kInv = rsqrtf(simd_sum(kss) / (float)Dk + 1e-6f);
      UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
        qv[i] = round_bf16(round_bf16(qv[i] * qInv) * qScale);
        kv[i] = round_bf16(round_bf16(kv[i] * kInv) * kScale);
      }
    }
    float gt = g[t * Hv + h], bt = beta[t * Hv + h];
    float vt = bf16_to_f32(row[2 * Hk * Dk + h * Dv + dv]);
    float u = 0.0f;
    UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
      if (i < live) {
        S[i] *= gt;
        u += S[i] * kv[i];
      }
    }
    float delta = bt * (vt - simd_sum(u));
    float o = 0.0f;
    UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
      if (i < live) {
        S[i] += delta * kv[i];
        o += S[i] * qv[i];
      }
    }
    o = simd_sum(o);
    if (lane == 0) out[((ulong)t * (ulong)Hv + (ulong)h) * (ulong)Dv + (ulong)dv] = f32_to_bf16(o);
  }
  UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
    int d = lane + 32 * i;
    if (d < Dk) srow[d] = S[i];
  }
}
