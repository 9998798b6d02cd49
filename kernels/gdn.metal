// Gated DeltaNet pieces: the causal depthwise conv with its carried state, the
// per-head gates, and the delta-rule recurrence.

#define CONV_MAX_K 8
#define CONV_TOKENS 16

// conv_silu_tokens is conv1d_silu_bf16's work for channel c and tokens t0 ..
// min(T, t0 + CONV_TOKENS) of one sequence (x [T, C], its window state
// [K−1, C], out [T, C]): the thread of the first tokens (the only one that
// reads the state) writes the new state after reading the old.
INLINE void conv_silu_tokens(device const bf16_t *x, device bf16_t *state, device const bf16_t *w,
                             device bf16_t *out, int T, int C, int K, int c, int t0) {
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

// conv1d_silu_bf16: x [T, C], state [K−1, C] (in/out), w [C, K], out [T, C].
// ci = concat(state, x) by rows; out[t, c] = bf16(silu(Σ_k ci[t+k, c]·w[c, k]));
// afterwards state = the last K−1 rows of ci. A thread takes one channel and
// CONV_TOKENS tokens with the window in registers (conv_silu_tokens), so a
// prompt spreads over ceil(T, CONV_TOKENS) times as many threads as a decode
// step. 1 ≤ K ≤ CONV_MAX_K ≤ CONV_TOKENS + 1.
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
  GRID_WAIT();
  int cblocks = (C + TG_SIZE_X - 1) / TG_SIZE_X;
  int c = (TGID_X % cblocks) * TG_SIZE_X + TID_X;
  int t0 = (TGID_X / cblocks) * CONV_TOKENS;
  if (c >= C || t0 >= T) return;
  conv_silu_tokens(x, state, w, out, T, C, K, c, t0);
}

// conv1d_silu_batch_bf16: conv1d_silu_bf16 for each of S sequences of a
// batched step: sequence s's runs[s, 2] tokens (1 to CONV_TOKENS), rows
// runs[s, 1].. of x [R, C], go through the window of slot runs[s, 0] (runs
// i32 [S, 3]; the slots' windows [K−1, C] lie stride elements apart from
// states, slot 0's) into the same rows of out [R, C]: a thread a channel
// and sequence, as a launch of that sequence alone computes them (a decode
// step's one token, a verify's few). No two sequences share a slot.
// launch: grid(ceil(C, 256) * S) group(256)
// requires: K <= CONV_MAX_K
KERNEL(conv1d_silu_batch_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(bf16_t, states, 1),
       BUFFER(const int, runs, 2),
       BUFFER(const bf16_t, w, 3),
       BUFFER(bf16_t, out, 4),
       PARAM(int, S, 5),
       PARAM(int, C, 6),
       PARAM(int, K, 7),
       PARAM(int, stride, 8)) {
  GRID_WAIT();
  int cblocks = (C + TG_SIZE_X - 1) / TG_SIZE_X;
  int c = (TGID_X % cblocks) * TG_SIZE_X + TID_X;
  int s = TGID_X / cblocks;
  if (c >= C || s >= S) return;
  device bf16_t *state = states + (ulong)runs[3 * s] * (ulong)stride;
  ulong row0 = (ulong)runs[3 * s + 1] * (ulong)C;
  conv_silu_tokens(x + row0, state, w, out + row0, runs[3 * s + 2], C, K, c, 0);
}

// conv1d_silu_tree_bf16: conv1d_silu_bf16 over a draft tree of T nodes
// (parents first; parent i32 [T], −1 for the root, whose predecessor is the
// cache's last input): node t's window is the inputs of its path's last K
// nodes, then the state's newest rows, and the state is read only (the
// accepted path is replayed into it). One thread per (channel, node) walks the
// node's parents; the products run in conv1d_silu_bf16's order.
// launch: grid(ceil(C, 256) * T) group(256)
// requires: K <= CONV_MAX_K
KERNEL(conv1d_silu_tree_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const bf16_t, state, 1),
       BUFFER(const bf16_t, w, 2),
       BUFFER(const int, parent, 3),
       BUFFER(bf16_t, out, 4),
       PARAM(int, T, 5),
       PARAM(int, C, 6),
       PARAM(int, K, 7)) {
  GRID_WAIT();
  int cblocks = (C + TG_SIZE_X - 1) / TG_SIZE_X;
  int c = (TGID_X % cblocks) * TG_SIZE_X + TID_X;
  int t = TGID_X / cblocks;
  if (c >= C || t >= T) return;
  int lead = CONV_MAX_K - K;
  int n = t, s = K - 2;  // the next node up the path; then the next state row, newest first
  float win[CONV_MAX_K];
  UNROLL for (int i = CONV_MAX_K - 1; i >= 0; i--) {
    win[i] = 0.0f;
    if (i < lead) continue;
    if (n >= 0) {
      win[i] = bf16_to_f32(x[(ulong)n * (ulong)C + (ulong)c]);
      n = parent[n];
    } else {
      win[i] = bf16_to_f32(state[(ulong)s * (ulong)C + (ulong)c]);
      s--;
    }
  }
  float acc = 0.0f;
  UNROLL for (int i = 0; i < CONV_MAX_K; i++) {
    if (i >= lead) acc += win[i] * bf16_to_f32(w[(ulong)c * (ulong)K + (ulong)(i - lead)]);
  }
  out[(ulong)t * (ulong)C + (ulong)c] = f32_to_bf16(siluf(acc));
}

// log1p_f is log(1+x) for x ≥ 0 without losing small x (Goldberg's correction).
INLINE float log1p_f(float x) {
  float u = 1.0f + x;
  if (u == 1.0f) return x;
  return logf(u) * (x / (u - 1.0f));
}

// softplus_f is log(1+e^x) as MLX's logaddexp(x, 0): max(x,0) + log1p(e^−|x|).
INLINE float softplus_f(float x) { return fmaxf(x, 0.0f) + log1p_f(expf(-fabsf(x))); }

// gdn_gate sets *g and *beta of entry i (head h) of the gate logits a, b
// [T, Hv] as gdn_gates_bf16 computes them.
INLINE void gdn_gate_of(float av, float bv, float aLogh, float dtBiash, thread float *g, thread float *beta) {
  *beta = round_bf16(sigmoidf(bv));
  float sp = round_bf16(softplus_f(round_bf16(av + dtBiash)));
  *g = expf(-expf(aLogh) * sp);
}

INLINE void gdn_gate(device const bf16_t *a, device const bf16_t *b, device const float *aLog,
                     device const bf16_t *dtBias, int i, int h, thread float *g, thread float *beta) {
  gdn_gate_of(bf16_to_f32(a[i]), bf16_to_f32(b[i]), aLog[h], bf16_to_f32(dtBias[h]), g, beta);
}

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
  GRID_WAIT();
  int i = TGID_X * TG_SIZE_X + TID_X;
  if (i >= T * Hv) return;
  float gi, bi;
  gdn_gate(a, b, aLog, dtBias, i, i % Hv, &gi, &bi);
  g[i] = gi;
  beta[i] = bi;
}

// The recurrence holds a state row of up to GDN_MAX_DK values, GDN_PER_LANE per lane.
#define GDN_MAX_DK 256
#define GDN_PER_LANE 8
// SIMD-groups per threadgroup of the recurrence.
#ifndef GDN_ROWS_PER_GROUP
#define GDN_ROWS_PER_GROUP 4
#endif
// GDN_REC_ROWS is the state rows each SIMD-group of gdn_recurrence_bf16 owns.
#ifndef GDN_REC_ROWS
#define GDN_REC_ROWS 2
#endif
// GDN_REC_BATCH_ROWS is GDN_REC_ROWS for gdn_recurrence_batch_bf16: a
// batched step of 8 replies is 4,096 threadgroups of a few rows each at 2,
// two waves of short ones on an H100; at 8 a quarter of them, each row's
// loads in flight together (8 replies all decoding 2,380 against 2,293 tok/s,
// H100, thirty-first session's sweep). A row's sums do not depend on how
// many rows its SIMD-group holds, so a batched token's bits stay its lone
// step's.
#ifndef GDN_REC_BATCH_ROWS
#define GDN_REC_BATCH_ROWS 8
#endif

// gdn_rec_load reads a SIMD-group's R state rows (dv0.. of head h) into S,
// lane holding dk = lane + 32i; zeros past Dv and Dk.
template <int R>
INLINE void gdn_rec_load(device const float *state, int h, int dv0, int Dk, int Dv, int lane,
                         thread float (*S)[GDN_PER_LANE]) {
  UNROLL for (int j = 0; j < R; j++) {
    device const float *srow = state + ((ulong)h * (ulong)Dv + (ulong)(dv0 + j)) * (ulong)Dk;
    UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
      int d = lane + 32 * i;
      S[j][i] = dv0 + j < Dv && d < Dk ? srow[d] : 0.0f;
    }
  }
}

// gdn_rec_write writes the R rows' outputs o to orow (a token's [Dv] of
// head h): lane j writes row j's (a constant index for each j).
template <int R>
INLINE void gdn_rec_write(thread const float *o, device bf16_t *orow, int dv0, int Dv, int lane) {
  if (lane >= R) return;
  float oj = o[0];
  UNROLL for (int j = 1; j < R; j++) oj = lane == j ? o[j] : oj;
  if (dv0 + lane < Dv) orow[dv0 + lane] = f32_to_bf16(oj);
}

// gdn_rec_in is one token's inputs to a SIMD-group's R state rows, as
// loaded: q and k (lane holds dk = lane + 32i; not yet normalised) and the
// rows' v.
template <int R>
struct gdn_rec_in {
  float q[GDN_PER_LANE], k[GDN_PER_LANE], v[R];
};

// gdn_rec_fetch loads a token's inputs (its conv row) for rows dv0.. of
// v-head h, k-head hk. Loads only: gdn_recurrence_bf16 fetches the next token
// while the rule runs on this one, so a token's memory latency is not paid
// between tokens.
template <int R>
INLINE void gdn_rec_fetch(thread gdn_rec_in<R> &inputs, device const bf16_t *row, int h, int hk, int Hk, int Dk, int Dv,
                          int dv0, int live, int lane) {
  UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
    int d = lane + 32 * i;
    inputs.q[i] = i < live && d < Dk ? bf16_to_f32(row[hk * Dk + d]) : 0.0f;
    inputs.k[i] = i < live && d < Dk ? bf16_to_f32(row[(Hk + hk) * Dk + d]) : 0.0f;
  }
  UNROLL for (int j = 0; j < R; j++) {
    inputs.v[j] = dv0 + j < Dv ? bf16_to_f32(row[2 * Hk * Dk + h * Dv + dv0 + j]) : 0.0f;
  }
}

// gdn_rec_sumsq is a lane's part of a head's sum of squares (v as fetched).
INLINE float gdn_rec_sumsq(thread const float *v) {
  float ss = 0.0f;
  UNROLL for (int i = 0; i < GDN_PER_LANE; i++) ss += v[i] * v[i];
  return ss;
}

// gdn_rec_inv is a head's inverse rms norm (eps 1e-6) from its lanes' sums
// of squares.
INLINE float gdn_rec_inv(float ss, int Dk) { return rsqrtf(simd_sum(ss) / (float)Dk + 1e-6f); }

// gdn_rec_scaled is a q or k value v normalised (inverse norm inv) and scaled
// as the rule takes it: bf16(bf16(v·inv)·scale).
INLINE float gdn_rec_scaled(float v, float inv, float scale) { return round_bf16(round_bf16(v * inv) * scale); }

// gdn_rec_rule advances a SIMD-group's R state rows S (lane holds
// dk = lane + 32i) by one token: its fetched inputs (q and k normalised here
// with the inverse norms qInv, kInv unless normed), its gates gt and bt; o
// gets the rows' outputs, every lane holding them all.
template <int R>
INLINE void gdn_rec_rule(thread const gdn_rec_in<R> &inputs, float qInv, float kInv, float gt, float bt, int Dk,
                         int normed, int live, thread float (*S)[GDN_PER_LANE], thread float *o) {
  float qScale = 1.0f / (float)Dk;
  float kScale = 1.0f / sqrtf((float)Dk);
  float qv[GDN_PER_LANE], kv[GDN_PER_LANE];
  UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
    qv[i] = normed == 0 ? gdn_rec_scaled(inputs.q[i], qInv, qScale) : inputs.q[i];
    kv[i] = normed == 0 ? gdn_rec_scaled(inputs.k[i], kInv, kScale) : inputs.k[i];
  }
  // The rows' sums side by side: their shuffles overlap.
  float u[R];
  UNROLL for (int j = 0; j < R; j++) {
    u[j] = 0.0f;
    UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
      if (i < live) {
        S[j][i] *= gt;
        u[j] += S[j][i] * kv[i];
      }
    }
  }
  UNROLL for (int j = 0; j < R; j++) u[j] = simd_sum(u[j]);
  UNROLL for (int j = 0; j < R; j++) {
    float delta = bt * (inputs.v[j] - u[j]);
    o[j] = 0.0f;
    UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
      if (i < live) {
        S[j][i] += delta * kv[i];
        o[j] += S[j][i] * qv[i];
      }
    }
  }
  UNROLL for (int j = 0; j < R; j++) o[j] = simd_sum(o[j]);
}

// GDN_REC_SHARED is the tokens whose normalised q and k a threadgroup of
// gdn_recurrence_bf16 keeps in threadgroup memory at once (2 · 8 · 256 floats).
#define GDN_REC_SHARED 8

// gdn_rec_rows is gdn_recurrence_bf16's work for one SIMD-group of a
// threadgroup whose SIMD-groups all hold rows of v-head h (k-head hk): its
// R rows dv0.. (none past Dv: it still shares the loads and barriers) over all
// T tokens, live register slots of GDN_PER_LANE holding a dk (a constant
// where the kernel knows Dk, so that the slots past it vanish). Per block of
// up to GDN_REC_SHARED tokens the head's q and k are normalised once for the
// threadgroup (SIMD-group s takes tokens s, s + nsimd, ...) into qs and ks
// (threadgroup memory, GDN_REC_SHARED · GDN_MAX_DK floats each), where each
// SIMD-group had normalised every token itself (64 SIMD-groups a head at
// 35B-A3B), and the tokens' gates are worked out side by side (lane j,
// token j's); then the rule runs token after token, each token's v fetched
// during the one before. The normalised values are those gdn_rec_rule
// computes (gdn_rec_scaled): the same bits.
template <int R>
INLINE void gdn_rec_rows(device const bf16_t *conv, device const bf16_t *a, device const bf16_t *b,
                         device const float *aLog, device const bf16_t *dtBias, device float *state,
                         device bf16_t *out, int T, int Hk, int Hv, int Dk, int Dv, int normed, int h, int dv0,
                         int live, int lane, int simd, int nsimd, threadgroup float *qs, threadgroup float *ks) {
  int hk = h / (Hv / Hk);
  int width = 2 * Hk * Dk + Hv * Dv;
  bool rows = dv0 < Dv;
  float qScale = 1.0f / (float)Dk;
  float kScale = 1.0f / sqrtf((float)Dk);
  float S[R][GDN_PER_LANE];
  gdn_rec_load<R>(state, h, dv0, Dk, Dv, lane, S);
  float aLogh = aLog[h], dtBiash = bf16_to_f32(dtBias[h]);
  GRID_WAIT();
  for (int c0 = 0; c0 < T; c0 += GDN_REC_SHARED) {
    int n = imin(GDN_REC_SHARED, T - c0);
    device const bf16_t *block = conv + (ulong)c0 * (ulong)width;
    float gl = 1.0f, bl = 0.0f;  // lane j: token c0 + j's g and beta
    if (lane < n) {
      int gi = (c0 + lane) * Hv + h;
      gdn_gate_of(bf16_to_f32(a[gi]), bf16_to_f32(b[gi]), aLogh, dtBiash, &gl, &bl);
    }
    for (int j = simd; j < n; j += nsimd) {
      gdn_rec_in<R> x;
      gdn_rec_fetch(x, block + (ulong)j * (ulong)width, 0, hk, Hk, Dk, 0, 0, live, lane);
      float qInv = 1.0f, kInv = 1.0f;
      if (normed == 0) {
        qInv = gdn_rec_inv(gdn_rec_sumsq(x.q), Dk);
        kInv = gdn_rec_inv(gdn_rec_sumsq(x.k), Dk);
      }
      UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
        int d = lane + 32 * i;
        if (i < live && d < Dk) {
          qs[j * GDN_MAX_DK + d] = normed == 0 ? gdn_rec_scaled(x.q[i], qInv, qScale) : x.q[i];
          ks[j * GDN_MAX_DK + d] = normed == 0 ? gdn_rec_scaled(x.k[i], kInv, kScale) : x.k[i];
        }
      }
    }
    BARRIER();  // the block's q and k are in qs and ks
    if (rows) {
      float vnext[R];
      UNROLL for (int r = 0; r < R; r++) {
        vnext[r] = dv0 + r < Dv ? bf16_to_f32(block[2 * Hk * Dk + h * Dv + dv0 + r]) : 0.0f;
      }
      for (int j = 0; j < n; j++) {
        gdn_rec_in<R> cur;
        UNROLL for (int r = 0; r < R; r++) cur.v[r] = vnext[r];
        if (j + 1 < n) {
          device const bf16_t *next = block + (ulong)(j + 1) * (ulong)width;
          UNROLL for (int r = 0; r < R; r++) {
            vnext[r] = dv0 + r < Dv ? bf16_to_f32(next[2 * Hk * Dk + h * Dv + dv0 + r]) : 0.0f;
          }
        }
        UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
          int d = lane + 32 * i;
          cur.q[i] = i < live && d < Dk ? qs[j * GDN_MAX_DK + d] : 0.0f;
          cur.k[i] = i < live && d < Dk ? ks[j * GDN_MAX_DK + d] : 0.0f;
        }
        float o[R];
        gdn_rec_rule(cur, 1.0f, 1.0f, simd_shuffle(gl, (ushort)j), simd_shuffle(bl, (ushort)j), Dk, 1, live, S, o);
        gdn_rec_write<R>(o, out + ((ulong)(c0 + j) * (ulong)Hv + (ulong)h) * (ulong)Dv, dv0, Dv, lane);
      }
    }
    BARRIER();  // every SIMD-group has read qs and ks before the next block writes them
  }
  if (!rows) return;
  UNROLL for (int j = 0; j < R; j++) {
    if (dv0 + j >= Dv) continue;
    device float *srow = state + ((ulong)h * (ulong)Dv + (ulong)(dv0 + j)) * (ulong)Dk;
    UNROLL for (int i = 0; i < GDN_PER_LANE; i++) {
      int d = lane + 32 * i;
      if (d < Dk) srow[d] = S[j][i];
    }
  }
}

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
  GRID_WAIT();
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

// gdn_recurrence_bf16: conv [T, 2·Hk·Dk + Hv·Dv] laid out [q | k | v], the gate
// logits a, b [T, Hv] with aLog f32 [Hv] and dtBias [Hv], state f32 [Hv, Dv, Dk]
// (in/out), out [T, Hv, Dv]. Each SIMD-group computes its head's g and beta as
// gdn_gates_bf16 does (gdn_gate): a decode step has one launch fewer per layer.
// Per token: q and k of k-head hk are rms-normalised (eps 1e-6) and scaled,
// q = bf16(bf16(q̂)·(1/Dk)), k = bf16(bf16(k̂)·Dk^−½); per v-head h (hk = h/(Hv/Hk)):
// S ← g·S; u = S·k; δ = beta·(v−u); S ← S + δ⊗k; out = bf16(S·q). With normed ≠ 0
// the q and k in conv are already normalised and scaled (gdn_qk_norm_bf16) and
// are used as they are.
//
// One SIMD-group owns GDN_REC_ROWS state rows S[h, dv, :] (lane holds dk =
// lane+32i) for all T tokens: each row is read once and written once, and
// the rows share the SIMD-group's gates; a threadgroup's SIMD-groups hold rows
// of one head and share its q and k, normalised once for them (unless
// normed) into threadgroup memory. The gates and norms do not depend on the
// state, so they are worked out for a block of tokens before the rule runs
// token after token (gdn_rec_rows): a verify's tokens pay the rule's latency
// alone, and each token's bits are those of a launch of it alone. The rows are read before GRID_WAIT: the state
// is written only by this layer's rule (gdn_recurrence_bf16, gdn_chunk_bf16)
// and by the cache's copies, never by the launch just before this one
// (prelude_cuda.h), so they load while that launch finishes.
// launch: grid(Hv * ceil(Dv, GDN_ROWS_PER_GROUP * GDN_REC_ROWS)) group(GDN_ROWS_PER_GROUP * 32)
// requires: Dk <= GDN_MAX_DK
KERNEL(gdn_recurrence_bf16,
       BUFFER(const bf16_t, conv, 0),
       BUFFER(const bf16_t, a, 1),
       BUFFER(const bf16_t, b, 2),
       BUFFER(const float, aLog, 3),
       BUFFER(const bf16_t, dtBias, 4),
       BUFFER(float, state, 5),
       BUFFER(bf16_t, out, 6),
       PARAM(int, T, 7),
       PARAM(int, Hk, 8),
       PARAM(int, Hv, 9),
       PARAM(int, Dk, 10),
       PARAM(int, Dv, 11),
       PARAM(int, normed, 12)) {
  TG_MEM(float, qs, GDN_REC_SHARED * GDN_MAX_DK);
  TG_MEM(float, ks, GDN_REC_SHARED * GDN_MAX_DK);
  int per_group = SIMD_COUNT * GDN_REC_ROWS;
  int blocks = (Dv + per_group - 1) / per_group;
  int h = TGID_X / blocks;
  int dv0 = (TGID_X % blocks) * per_group + SIMD_ID * GDN_REC_ROWS;
  if (h >= Hv) return;  // uniform across the threadgroup (its SIMD-groups share the barriers)
  if (Dk == 128) {  // Qwen3.5's heads: four register slots, known here
    gdn_rec_rows<GDN_REC_ROWS>(conv, a, b, aLog, dtBias, state, out, T, Hk, Hv, 128, Dv, normed, h, dv0, 4, LANE, SIMD_ID,
                 SIMD_COUNT, qs, ks);
  } else {
    gdn_rec_rows<GDN_REC_ROWS>(conv, a, b, aLog, dtBias, state, out, T, Hk, Hv, Dk, Dv, normed, h, dv0, (Dk + 31) / 32, LANE,
                 SIMD_ID, SIMD_COUNT, qs, ks);
  }
}

// gdn_recurrence_batch_bf16: gdn_recurrence_bf16 (normed 0) for each of S
// sequences of a batched step: sequence s's runs[s, 2] tokens, rows
// runs[s, 1].. of conv [R, 2·Hk·Dk + Hv·Dv] and of a and b [R, Hv], advance
// the state of slot runs[s, 0] (runs i32 [S, 3]; the slots' states f32
// [Hv, Dv, Dk] lie stride floats apart from states, slot 0's) into the same
// rows of out [R, Hv, Dv]. A sequence's threadgroups are those of a launch
// of it alone (gdn_rec_rows over its tokens: a decode step's one, a
// verify's few) but with GDN_REC_BATCH_ROWS rows a SIMD-group, which sums
// each row as it is summed at GDN_REC_ROWS: its bits are that launch's, and
// each token's those of a step of it alone. No two sequences share a slot. The state rows are
// read before GRID_WAIT as gdn_recurrence_bf16 reads them; runs is written
// by the host before the step's first launch.
// launch: grid(S * Hv * ceil(Dv, GDN_ROWS_PER_GROUP * GDN_REC_BATCH_ROWS)) group(GDN_ROWS_PER_GROUP * 32)
// requires: Dk <= GDN_MAX_DK
KERNEL(gdn_recurrence_batch_bf16,
       BUFFER(const bf16_t, conv, 0),
       BUFFER(const bf16_t, a, 1),
       BUFFER(const bf16_t, b, 2),
       BUFFER(const float, aLog, 3),
       BUFFER(const bf16_t, dtBias, 4),
       BUFFER(float, states, 5),
       BUFFER(const int, runs, 6),
       BUFFER(bf16_t, out, 7),
       PARAM(int, S, 8),
       PARAM(int, Hk, 9),
       PARAM(int, Hv, 10),
       PARAM(int, Dk, 11),
       PARAM(int, Dv, 12),
       PARAM(int, stride, 13)) {
  TG_MEM(float, qs, GDN_REC_SHARED * GDN_MAX_DK);
  TG_MEM(float, ks, GDN_REC_SHARED * GDN_MAX_DK);
  int per_group = SIMD_COUNT * GDN_REC_BATCH_ROWS;
  int blocks = (Dv + per_group - 1) / per_group;
  int s = TGID_X / (Hv * blocks);
  int g = TGID_X % (Hv * blocks);
  int h = g / blocks;
  int dv0 = (g % blocks) * per_group + SIMD_ID * GDN_REC_BATCH_ROWS;
  if (s >= S) return;  // uniform across the threadgroup
  int width = 2 * Hk * Dk + Hv * Dv;
  ulong row0 = (ulong)runs[3 * s + 1];
  int T = runs[3 * s + 2];
  device const bf16_t *crow = conv + row0 * (ulong)width;
  device const bf16_t *arow = a + row0 * (ulong)Hv;
  device const bf16_t *brow = b + row0 * (ulong)Hv;
  device float *state = states + (ulong)runs[3 * s] * (ulong)stride;
  device bf16_t *orow = out + row0 * (ulong)(Hv * Dv);
  if (Dk == 128 && T == 1) {  // a decode step's token: the rule's one-token body, as main's kernel had it
    gdn_rec_rows<GDN_REC_BATCH_ROWS>(crow, arow, brow, aLog, dtBias, state, orow, 1, Hk, Hv, 128, Dv, 0, h, dv0, 4, LANE, SIMD_ID,
                 SIMD_COUNT, qs, ks);
  } else if (Dk == 128) {  // as gdn_recurrence_bf16
    gdn_rec_rows<GDN_REC_BATCH_ROWS>(crow, arow, brow, aLog, dtBias, state, orow, T, Hk, Hv, 128, Dv, 0, h, dv0, 4, LANE, SIMD_ID,
                 SIMD_COUNT, qs, ks);
  } else {
    gdn_rec_rows<GDN_REC_BATCH_ROWS>(crow, arow, brow, aLog, dtBias, state, orow, T, Hk, Hv, Dk, Dv, 0, h, dv0, (Dk + 31) / 32, LANE,
                 SIMD_ID, SIMD_COUNT, qs, ks);
  }
}

// GDN_TREE_MAX bounds a draft tree's nodes (and so a path's length).
#define GDN_TREE_MAX 32

// gdn_recurrence_tree_bf16: gdn_recurrence_bf16 (normed 0) over a draft tree
// of T nodes (parents first; parent i32 [T], −1 for the root): node t's
// output is the rule's over its path from state, which is read only (the
// accepted path is replayed into it). A SIMD-group walks each node's path from
// its rows as they were, Σ depth steps in all (a tree of 16 guesses four deep
// is some 40), the rows in registers as in the linear kernel.
// launch: grid(Hv * ceil(Dv, GDN_ROWS_PER_GROUP * GDN_REC_ROWS)) group(GDN_ROWS_PER_GROUP * 32)
// requires: Dk <= GDN_MAX_DK
// requires: T <= GDN_TREE_MAX
KERNEL(gdn_recurrence_tree_bf16,
       BUFFER(const bf16_t, conv, 0),
       BUFFER(const bf16_t, a, 1),
       BUFFER(const bf16_t, b, 2),
       BUFFER(const float, aLog, 3),
       BUFFER(const bf16_t, dtBias, 4),
       BUFFER(const float, state, 5),
       BUFFER(const int, parent, 6),
       BUFFER(bf16_t, out, 7),
       PARAM(int, T, 8),
       PARAM(int, Hk, 9),
       PARAM(int, Hv, 10),
       PARAM(int, Dk, 11),
       PARAM(int, Dv, 12)) {
  int per_group = SIMD_COUNT * GDN_REC_ROWS;
  int blocks = (Dv + per_group - 1) / per_group;
  int h = TGID_X / blocks;
  int dv0 = (TGID_X % blocks) * per_group + SIMD_ID * GDN_REC_ROWS;
  if (h >= Hv || dv0 >= Dv) return;  // uniform across the SIMD-group
  int lane = LANE;
  int hk = h / (Hv / Hk);
  int width = 2 * Hk * Dk + Hv * Dv;
  int live = (Dk + 31) / 32;
  float S0[GDN_REC_ROWS][GDN_PER_LANE];
  gdn_rec_load<GDN_REC_ROWS>(state, h, dv0, Dk, Dv, lane, S0);
  GRID_WAIT();
  for (int t = 0; t < T; t++) {
    int path[GDN_TREE_MAX];  // t's path, t first
    int n = 0;
    for (int p = t; p >= 0 && n < GDN_TREE_MAX; p = parent[p]) path[n++] = p;
    float S[GDN_REC_ROWS][GDN_PER_LANE];
    UNROLL for (int j = 0; j < GDN_REC_ROWS; j++) {
      UNROLL for (int i = 0; i < GDN_PER_LANE; i++) S[j][i] = S0[j][i];
    }
    float o[GDN_REC_ROWS];
    for (int i = n - 1; i >= 0; i--) {
      int node = path[i];
      gdn_rec_in<GDN_REC_ROWS> inputs;
      gdn_rec_fetch(inputs, conv + (ulong)node * (ulong)width, h, hk, Hk, Dk, Dv, dv0, live, lane);
      float gt, bt;
      gdn_gate(a, b, aLog, dtBias, node * Hv + h, h, &gt, &bt);
      float qInv = gdn_rec_inv(gdn_rec_sumsq(inputs.q), Dk);
      float kInv = gdn_rec_inv(gdn_rec_sumsq(inputs.k), Dk);
      gdn_rec_rule(inputs, qInv, kInv, gt, bt, Dk, 0, live, S, o);
    }
    gdn_rec_write<GDN_REC_ROWS>(o, out + ((ulong)t * (ulong)Hv + (ulong)h) * (ulong)Dv, dv0, Dv, lane);
  }
}

// The chunked form of the recurrence for prompts. Within a chunk of C tokens,
// with γ_t = Π_{i≤t} g_i (from the chunk's start), S_0 the state before it and
// δ_t = β_t·(v_t − g_t·S_{t−1}·k_t) the update of token t:
//   (I + A)·δ = rhs,  A[t, j] = β_t (γ_t/γ_j)(k_t·k_j) for j < t,
//                     rhs_t = β_t·(v_t − γ_t·S_0·k_t)
//   o_t = γ_t·S_0·q_t + Σ_{j≤t} (γ_t/γ_j)(q_t·k_j)·δ_j
//   S_C = γ_C·S_0 + Σ_j (γ_C/γ_j)·δ_j·k_jᵀ
// which is the sequential rule in exact arithmetic, regrouped. Everything but
// S_0 depends on the chunk's own q, k, g and beta, so gdn_chunk_prep_f32 works
// it out for every chunk at once (W = (I + A)⁻¹ and the (γ_t/γ_j)(q_t·k_j)
// table M), and gdn_chunk_bf16 walks the chunks in order with small products.
// γ_t/γ_j is exp(L_t − L_j), L the running sum of log g (log g ≥ −1e4, so a g
// that underflowed to 0 stays a decay to 0, not a NaN).
#define GDN_CHUNK 32
#define GDN_CHUNK_DV 16
#define GDN_CHUNK_MAX_DK 128
#define GDN_CHUNK_THREADS 256
// GDN_CHUNK_PER state values a thread: eight, one 16-byte piece of bf16 k or q
#define GDN_CHUNK_PER (GDN_CHUNK_MAX_DK / 16)
#define GDN_CHUNK_ILP 4
// Floats of one (chunk, v-head) entry of the prep table: W, M, L.
#define GDN_PREP (2 * GDN_CHUNK * GDN_CHUNK + GDN_CHUNK)

// gdn_chunk_load stages chunk c0's q and k rows of k-head hk, every one of
// the tile's GDN_CHUNK_MAX_DK columns (zeros past T and past Dk: gdn_chunk_bf16
// reads whole 16-byte pieces).
INLINE void gdn_chunk_load(device const bf16_t *conv, threadgroup bf16_t *Qc, threadgroup bf16_t *Kc, int c0, int n,
                           int width, int hk, int Hk, int Dk, int tid) {
  for (int i = tid; i < GDN_CHUNK * GDN_CHUNK_MAX_DK; i += GDN_CHUNK_THREADS) {
    int t = i / GDN_CHUNK_MAX_DK, d = i % GDN_CHUNK_MAX_DK;
    bool ok = t < n && d < Dk;
    device const bf16_t *row = conv + (ulong)(c0 + (ok ? t : 0)) * (ulong)width;
    Qc[i] = ok ? row[hk * Dk + d] : (bf16_t)0;
    Kc[i] = ok ? row[(Hk + hk) * Dk + d] : (bf16_t)0;
  }
}

// gdn_chunk_prep_f32: for chunk c of 32 tokens and v-head h, prep[c, h] =
// [W (C×C) | M (C×C) | L (C)] as above; conv's q and k normalised
// (gdn_qk_norm_bf16). One threadgroup per (chunk, head); W by forward
// substitution, one column per thread.
// launch: grid(ceil(T, GDN_CHUNK) * Hv) group(GDN_CHUNK_THREADS)
// requires: Dk <= GDN_CHUNK_MAX_DK
KERNEL(gdn_chunk_prep_f32,
       BUFFER(const bf16_t, conv, 0),
       BUFFER(const float, g, 1),
       BUFFER(const float, beta, 2),
       BUFFER(float, prep, 3),
       PARAM(int, T, 4),
       PARAM(int, Hk, 5),
       PARAM(int, Hv, 6),
       PARAM(int, Dk, 7),
       PARAM(int, Dv, 8)) {
  GRID_WAIT_COMPUTE();
  TG_MEM_ALIGNED16(bf16_t, Kc, GDN_CHUNK * GDN_CHUNK_MAX_DK);
  TG_MEM_ALIGNED16(bf16_t, Qc, GDN_CHUNK * GDN_CHUNK_MAX_DK);
  TG_MEM(float, A, GDN_CHUNK * GDN_CHUNK);
  TG_MEM(float, W, GDN_CHUNK * GDN_CHUNK);
  TG_MEM(float, L, GDN_CHUNK);
  TG_MEM(float, B, GDN_CHUNK);
  int chunk = TGID_X / Hv, h = TGID_X % Hv;
  int c0 = chunk * GDN_CHUNK;
  if (c0 >= T) return;
  int n = imin(GDN_CHUNK, T - c0), tid = TID_X;
  int hk = h / (Hv / Hk), width = 2 * Hk * Dk + Hv * Dv;
  gdn_chunk_load(conv, Qc, Kc, c0, n, width, hk, Hk, Dk, tid);
  if (tid < GDN_CHUNK) {
    B[tid] = tid < n ? beta[(c0 + tid) * Hv + h] : 0.0f;
    L[tid] = tid < n ? fmaxf(logf(g[(c0 + tid) * Hv + h]), -1e4f) : 0.0f;  // log g, summed below
  }
  BARRIER();
  if (tid == 0) {
    float acc = 0.0f;
    for (int t = 0; t < GDN_CHUNK; t++) {
      acc += L[t];
      L[t] = acc;
    }
  }
  BARRIER();
  device float *out = prep + (ulong)TGID_X * (ulong)GDN_PREP;
  // A and M, one (t, j) pair at a time, over 16-byte pieces of the rows (the
  // tiles are zero past Dk); the walk over the pieces starts at j so that the
  // lanes of a SIMD-group read different banks.
  threadgroup const u32x4 *K4 = (threadgroup const u32x4 *)Kc, *Q4 = (threadgroup const u32x4 *)Qc;
  for (int p = tid; p < GDN_CHUNK * GDN_CHUNK; p += GDN_CHUNK_THREADS) {
    int t = p / GDN_CHUNK, j = p % GDN_CHUNK;
    float a = 0.0f, m = 0.0f;
    if (t < n && j <= t) {
      float kk = 0.0f, qk = 0.0f;
      for (int c = 0; c < GDN_CHUNK_MAX_DK / 8; c++) {
        int cc = (c + j) % (GDN_CHUNK_MAX_DK / 8);
        float kj[8], kt[8], qt[8];
        attn_unpack8(K4[j * (GDN_CHUNK_MAX_DK / 8) + cc], kj);
        attn_unpack8(K4[t * (GDN_CHUNK_MAX_DK / 8) + cc], kt);
        attn_unpack8(Q4[t * (GDN_CHUNK_MAX_DK / 8) + cc], qt);
        UNROLL for (int i = 0; i < 8; i++) {
          kk += kt[i] * kj[i];
          qk += qt[i] * kj[i];
        }
      }
      float ratio = expf(L[t] - L[j]);
      a = j < t ? B[t] * ratio * kk : 0.0f;
      m = ratio * qk;
    }
    A[p] = a;
    out[GDN_CHUNK * GDN_CHUNK + p] = m;
  }
  BARRIER();
  // W = (I + A)⁻¹, unit lower triangular: column j by forward substitution.
  if (tid < GDN_CHUNK) {
    int j = tid;
    for (int t = 0; t < GDN_CHUNK; t++) {
      float w = t == j ? 1.0f : 0.0f;
      if (t > j) {
        for (int i = j; i < t; i++) w -= A[t * GDN_CHUNK + i] * W[i * GDN_CHUNK + j];
      }
      W[t * GDN_CHUNK + j] = w;
    }
  }
  BARRIER();
  for (int p = tid; p < GDN_CHUNK * GDN_CHUNK; p += GDN_CHUNK_THREADS) out[p] = W[p];
  if (tid < GDN_CHUNK) out[2 * GDN_CHUNK * GDN_CHUNK + tid] = L[tid];
}

// gdn_piece: eight bf16 from src, the first m of them (0 to 8; zeros after),
// as one 16-byte piece (one load where src is aligned and m is 8).
INLINE u32x4 gdn_piece(device const bf16_t *src, int m) {
  if (m >= 8 && ALIGNED16(src)) return *(device const u32x4 *)src;
  uint w[4];
  UNROLL for (int i = 0; i < 4; i++) {
    uint lo = 2 * i < m ? (uint)src[2 * i] : 0u;
    uint hi = 2 * i + 1 < m ? (uint)src[2 * i + 1] : 0u;
    w[i] = lo | (hi << 16);
  }
  return u32x4_make(w[0], w[1], w[2], w[3]);
}

// gdn_chunk_regs is one thread's share of a chunk's inputs, loaded while the
// chunk before it computes (staged in threadgroup memory first, each chunk
// put a memory latency before its work: 64 chunks a launch at 2048 tokens):
// q and k as 16-byte pieces of the tiles, W and M, L and β (threads below
// GDN_CHUNK), v of the block's rows.
#define GDN_CHUNK_QK (GDN_CHUNK * GDN_CHUNK_MAX_DK / 8 / GDN_CHUNK_THREADS)
#define GDN_CHUNK_WM (GDN_CHUNK * GDN_CHUNK / GDN_CHUNK_THREADS)
#define GDN_CHUNK_VR (GDN_CHUNK * GDN_CHUNK_DV / GDN_CHUNK_THREADS)
struct gdn_chunk_regs {
  u32x4 q[GDN_CHUNK_QK], k[GDN_CHUNK_QK];
  float w[GDN_CHUNK_WM], m[GDN_CHUNK_WM], v[GDN_CHUNK_VR];
  float l, b;
};

// gdn_chunk_fetch loads chunk c0's inputs for value rows dv0.. of v-head h.
INLINE void gdn_chunk_fetch(thread gdn_chunk_regs &g, device const bf16_t *conv, device const float *beta,
                            device const float *prep, int c0, int T, int width, int hk, int Hk, int h, int Hv,
                            int Dk, int Dv, int dv0, int tid) {
  int n = imin(GDN_CHUNK, T - c0);
  UNROLL for (int j = 0; j < GDN_CHUNK_QK; j++) {
    int p = tid + j * GDN_CHUNK_THREADS, t = p / (GDN_CHUNK_MAX_DK / 8), d0 = (p % (GDN_CHUNK_MAX_DK / 8)) * 8;
    int m = t < n ? imax(0, imin(8, Dk - d0)) : 0;
    device const bf16_t *row = conv + (ulong)(c0 + (m > 0 ? t : 0)) * (ulong)width;
    g.q[j] = m > 0 ? gdn_piece(row + hk * Dk + d0, m) : u32x4_zero();
    g.k[j] = m > 0 ? gdn_piece(row + (Hk + hk) * Dk + d0, m) : u32x4_zero();
  }
  device const float *pp = prep + ((ulong)(c0 / GDN_CHUNK) * (ulong)Hv + (ulong)h) * (ulong)GDN_PREP;
  UNROLL for (int j = 0; j < GDN_CHUNK_WM; j++) {
    int p = tid + j * GDN_CHUNK_THREADS;
    g.w[j] = pp[p];
    g.m[j] = pp[GDN_CHUNK * GDN_CHUNK + p];
  }
  g.l = tid < GDN_CHUNK ? pp[2 * GDN_CHUNK * GDN_CHUNK + tid] : 0.0f;
  g.b = tid < n ? beta[(c0 + tid) * Hv + h] : 0.0f;
  UNROLL for (int j = 0; j < GDN_CHUNK_VR; j++) {
    int p = tid + j * GDN_CHUNK_THREADS, t = p / GDN_CHUNK_DV, rr = p % GDN_CHUNK_DV;
    g.v[j] = t < n && dv0 + rr < Dv
                 ? bf16_to_f32(conv[(ulong)(c0 + t) * (ulong)width + (ulong)(2 * Hk * Dk + h * Dv + dv0 + rr)])
                 : 0.0f;
  }
}

// gdn_chunk_put stages fetched inputs in the chunk's tiles.
INLINE void gdn_chunk_put(thread gdn_chunk_regs &g, threadgroup bf16_t *Qc, threadgroup bf16_t *Kc,
                          threadgroup float *W, threadgroup float *M, threadgroup float *L, threadgroup float *Bt,
                          threadgroup float *R, int tid) {
  UNROLL for (int j = 0; j < GDN_CHUNK_QK; j++) {
    int p = tid + j * GDN_CHUNK_THREADS;
    ((threadgroup u32x4 *)Qc)[p] = g.q[j];
    ((threadgroup u32x4 *)Kc)[p] = g.k[j];
  }
  UNROLL for (int j = 0; j < GDN_CHUNK_WM; j++) {
    W[tid + j * GDN_CHUNK_THREADS] = g.w[j];
    M[tid + j * GDN_CHUNK_THREADS] = g.m[j];
  }
  if (tid < GDN_CHUNK) {
    L[tid] = g.l;
    Bt[tid] = g.b;
  }
  UNROLL for (int j = 0; j < GDN_CHUNK_VR; j++) R[tid + j * GDN_CHUNK_THREADS] = g.v[j];
}

// On CUDA sm_80+ each chunk's S_0·k_t and S_0·q_t, a [16 rows × Dk] by
// [Dk × 32 tokens] product twice, run on the matrix units (gdn_chunk_sk):
// the state, f32, is staged as three bf16 tiles hi, mid and lo (each the
// rounding of what the ones before it left, so that their sum is S to
// within 2^-24 of it), each multiplied by the same bf16 k or q tile with f32
// sums: the products are exact, the sums f32 as before. On the CUDA cores
// those sums and their 16-lane shuffle reductions took most of the kernel
// (H200, 35B-A3B, a 2048-token chunk: 782 µs a layer, 17% of the prompt).
// Elsewhere (Metal, the compute_75 PTX) the threads sum them as before.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GDN_CHUNK_MMA 1
#define GDN_SLD (GDN_CHUNK_MAX_DK + 8)  // a split tile's row, bf16: 16-byte rows on distinct banks


#define GDN_WLD (GDN_CHUNK + 8)  // a row of the update's split weights, bf16

// gdn_split3 stores the pair a, b (a first) at p, p + plane and p + 2·plane
// as the bf16 pairs hi, mid, lo: hi rounds a, mid rounds what hi left, lo
// what both left; hi + mid + lo is a to within 2^-24 of it.
INLINE void gdn_split3(float a, float b, threadgroup bf16_t *p, int plane) {
  uint h = cvt_bf16x2(a, b);
  float ra = a - as_float(h << 16), rb = b - as_float(h & 0xffff0000u);
  uint m = cvt_bf16x2(ra, rb);
  *(threadgroup uint *)p = h;
  *(threadgroup uint *)(p + plane) = m;
  *(threadgroup uint *)(p + 2 * plane) = cvt_bf16x2(ra - as_float(m << 16), rb - as_float(m & 0xffff0000u));
}

// The state of a threadgroup (16 rows × up to 128 columns, f32) lives in
// the m16n8k16 accumulators: SIMD-group w holds columns 16w.. as two 8-column
// tiles, lane 4g + i its rows g (S[4h], S[4h + 1]) and g + 8 (S[4h + 2],
// S[4h + 3]) at columns 16w + 8h + 2i and + 1. gdn_s_row and gdn_s_col are
// value e's row and column.
INLINE int gdn_s_row(int e, int lane) { return (lane >> 2) + 8 * ((e & 3) >> 1); }
INLINE int gdn_s_col(int e, int w, int lane) { return 16 * w + 8 * (e >> 2) + 2 * (lane & 3) + (e & 1); }

// gdn_split_put stages the lane's state values in the hi, mid and lo tiles
// of Sp ([3][16][GDN_SLD] bf16).
INLINE void gdn_split_put(thread const float *S, threadgroup bf16_t *Sp, int w, int lane) {
  UNROLL for (int e = 0; e < 8; e += 2)
    gdn_split3(S[e], S[e + 1], Sp + gdn_s_row(e, lane) * GDN_SLD + gdn_s_col(e, w, lane), 16 * GDN_SLD);
}

// gdn_chunk_update: S = γ_n S_0 + Σ_j (γ_n/γ_j)·δ_j·k_jᵀ on the matrix
// units, for the SIMD-group's columns: the weights (γ_n/γ_j)·δ_j[r] staged
// by gdn_chunk_weights in Wp as hi, mid, lo ([3][16][GDN_WLD]), times the
// k tile read transposed (k_j[d] at row j, column d).
INLINE void gdn_chunk_update(thread float *S, float decay, threadgroup const bf16_t *Wp, threadgroup const bf16_t *Kc,
                             int w, int lane) {
  UNROLL for (int e = 0; e < 8; e++) S[e] *= decay;
  uint a0 = smem_u32(Wp + (lane & 15) * GDN_WLD + 8 * (lane >> 4));
  uint b0 = smem_u32(Kc + ((lane & 7) + 8 * ((lane >> 3) & 1)) * GDN_CHUNK_MAX_DK + 16 * w + 8 * (lane >> 4));
  UNROLL for (int kk = 0; kk < GDN_CHUNK; kk += 16) {
    uint b[4];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                 : "r"(b0 + (uint)(2 * kk * GDN_CHUNK_MAX_DK)));
    UNROLL for (int part = 0; part < 3; part++) {
      uint a[4];
      ldsm_x4_at(a0 + (uint)(2 * (part * 16 * GDN_WLD + kk)), a);
      UNROLL for (int h = 0; h < 2; h++) {
        float *c = S + 4 * h;
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * h]), "r"(b[2 * h + 1]));
      }
    }
  }
}

// gdn_chunk_weights stages (γ_n/γ_j)·δ_j[r] for gdn_chunk_update, two of
// the 16 × 32 a thread (0 past n).
INLINE void gdn_chunk_weights(threadgroup bf16_t *Wp, threadgroup const float *D, threadgroup const float *L, int n,
                              int tid) {
  int r = tid / (GDN_CHUNK / 2), j = 2 * (tid % (GDN_CHUNK / 2));
  float last = L[n - 1];
  float w0 = j < n ? expf(last - L[j]) * D[j * GDN_CHUNK_DV + r] : 0.0f;
  float w1 = j + 1 < n ? expf(last - L[j + 1]) * D[(j + 1) * GDN_CHUNK_DV + r] : 0.0f;
  gdn_split3(w0, w1, Wp + r * GDN_WLD + j, 16 * GDN_WLD);
}

// gdn_chunk_sk: SIMD-group w multiplies the state (Sp) by the k (w < 4) or q
// tile's tokens 8·(w % 4).. and writes, for t < n, the right-hand side
// R = β_t (v_t − γ_t S_0 k_t) in place of v, or O = γ_t S_0 q_t. The
// m16n8k16 accumulator: lane 4g + i holds rows g (c[0], c[1]) and g + 8
// (c[2], c[3]) of tokens 2i, 2i + 1 of the group.
INLINE void gdn_chunk_sk(threadgroup const bf16_t *Sp, threadgroup const bf16_t *Kc, threadgroup const bf16_t *Qc,
                         threadgroup float *R, threadgroup float *O, threadgroup const float *L,
                         threadgroup const float *Bt, int n, int w, int lane) {
  bool isq = w >= 4;
  int tg = 8 * (w & 3);
  // ldmatrix rows: the state's row lane % 16 at column 8·(lane / 16); the
  // tile's token tg + lane % 8 at column 8·(lane / 8) (two steps of 16).
  uint a0 = smem_u32(Sp + (lane & 15) * GDN_SLD + 8 * (lane >> 4));
  uint b0 = smem_u32((isq ? Qc : Kc) + (tg + (lane & 7)) * GDN_CHUNK_MAX_DK + 8 * (lane >> 3));
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  UNROLL for (int kk = 0; kk < GDN_CHUNK_MAX_DK; kk += 32) {
    uint b[4];
    ldsm_x4_at(b0 + (uint)(2 * kk), b);
    UNROLL for (int part = 0; part < 3; part++) {
      UNROLL for (int s = 0; s < 2; s++) {
        uint a[4];
        ldsm_x4_at(a0 + (uint)(2 * (part * 16 * GDN_SLD + kk + 16 * s)), a);
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * s]), "r"(b[2 * s + 1]));
      }
    }
  }
  int g = lane >> 2, t0 = tg + 2 * (lane & 3);
  UNROLL for (int e = 0; e < 4; e++) {
    int row = g + 8 * (e >> 1), t = t0 + (e & 1);
    if (t < n) {
      float gam = expf(L[t]);
      if (isq)
        O[t * GDN_CHUNK_DV + row] = gam * c[e];
      else
        R[t * GDN_CHUNK_DV + row] = Bt[t] * (R[t * GDN_CHUNK_DV + row] - gam * c[e]);
    }
  }
}
#endif

// gdn_chunk_bf16: as gdn_recurrence_bf16 with normed = 1 (q and k already
// normalised, gdn_qk_norm_bf16), computed chunk by chunk from the prep table of
// gdn_chunk_prep_f32. A threadgroup owns GDN_CHUNK_DV state rows of one v-head
// (their columns of δ are independent); thread (r = tid/16, c = tid%16) holds
// S[r, GDN_CHUNK_PER·c + i], so that it reads its k and q values of a token
// as one 16-byte piece (a 2-byte load and a widening for each product took
// most of the kernel's instructions: H200, ncu, 71% of the SMs' issue busy). The sums run in another order than the sequential kernel's:
// f32 noise, below the bf16 of the output.
// launch: grid(Hv * ceil(Dv, GDN_CHUNK_DV)) group(GDN_CHUNK_THREADS)
// requires: Dk <= GDN_CHUNK_MAX_DK
KERNEL(gdn_chunk_bf16,
       BUFFER(const bf16_t, conv, 0),
       BUFFER(const float, beta, 1),
       BUFFER(const float, prep, 2),
       BUFFER(float, state, 3),
       BUFFER(bf16_t, out, 4),
       PARAM(int, T, 5),
       PARAM(int, Hk, 6),
       PARAM(int, Hv, 7),
       PARAM(int, Dk, 8),
       PARAM(int, Dv, 9)) {
  GRID_WAIT_COMPUTE();
  TG_MEM_ALIGNED16(bf16_t, Kc, GDN_CHUNK * GDN_CHUNK_MAX_DK);
  TG_MEM_ALIGNED16(bf16_t, Qc, GDN_CHUNK * GDN_CHUNK_MAX_DK);
  TG_MEM(float, W, GDN_CHUNK * GDN_CHUNK);
  TG_MEM(float, M, GDN_CHUNK * GDN_CHUNK);
  TG_MEM(float, R, GDN_CHUNK * GDN_CHUNK_DV);  // v of the rows, then the right-hand side
  TG_MEM(float, D, GDN_CHUNK * GDN_CHUNK_DV);  // δ
  TG_MEM(float, O, GDN_CHUNK * GDN_CHUNK_DV);  // γ_t S_0 q_t
  TG_MEM(float, L, GDN_CHUNK);
  TG_MEM(float, Bt, GDN_CHUNK);
#if defined(GDN_CHUNK_MMA)
  TG_MEM_ALIGNED16(bf16_t, Sp, 3 * GDN_CHUNK_DV * GDN_SLD);  // the state as hi, mid, lo
  TG_MEM_ALIGNED16(bf16_t, Wp, 3 * GDN_CHUNK_DV * GDN_WLD);  // the update's weights as hi, mid, lo
#endif
  int blocks = (Dv + GDN_CHUNK_DV - 1) / GDN_CHUNK_DV;
  int h = TGID_X / blocks, dv0 = (TGID_X % blocks) * GDN_CHUNK_DV;
  if (h >= Hv) return;
  int tid = TID_X, r = tid / 16, cg = tid % 16;
  int hk = h / (Hv / Hk);
  int width = 2 * Hk * Dk + Hv * Dv;
  bool rowOK = dv0 + r < Dv;
  device float *srow = state + ((ulong)h * (ulong)Dv + (ulong)(dv0 + r)) * (ulong)Dk;
  float S[GDN_CHUNK_PER];
#if defined(GDN_CHUNK_MMA)
  // The accumulators' layout (gdn_s_row, gdn_s_col); GDN_CHUNK_PER is 8.
  device float *sblk = state + ((ulong)h * (ulong)Dv + (ulong)dv0) * (ulong)Dk;
  UNROLL for (int e = 0; e < 8; e++) {
    int rr = gdn_s_row(e, LANE), d = gdn_s_col(e, SIMD_ID, LANE);
    S[e] = dv0 + rr < Dv && d < Dk ? sblk[rr * Dk + d] : 0.0f;
  }
#else
  UNROLL for (int i = 0; i < GDN_CHUNK_PER; i++) {
    int d = GDN_CHUNK_PER * cg + i;
    S[i] = rowOK && d < Dk ? srow[d] : 0.0f;
  }
#endif
  threadgroup const u32x4 *K4 = (threadgroup const u32x4 *)Kc + cg;  // the thread's piece of a row
  threadgroup const u32x4 *Q4 = (threadgroup const u32x4 *)Qc + cg;
  gdn_chunk_regs next;
  gdn_chunk_fetch(next, conv, beta, prep, 0, T, width, hk, Hk, h, Hv, Dk, Dv, dv0, tid);
  for (int c0 = 0; c0 < T; c0 += GDN_CHUNK) {
    int n = imin(GDN_CHUNK, T - c0);
    BARRIER();  // the last chunk's readers of the tiles are done
    gdn_chunk_put(next, Qc, Kc, W, M, L, Bt, R, tid);
#if defined(GDN_CHUNK_MMA)
    gdn_split_put(S, Sp, SIMD_ID, LANE);
#endif
    BARRIER();
    if (c0 + GDN_CHUNK < T)
      gdn_chunk_fetch(next, conv, beta, prep, c0 + GDN_CHUNK, T, width, hk, Hk, h, Hv, Dk, Dv, dv0, tid);
#if defined(GDN_CHUNK_MMA)
    gdn_chunk_sk(Sp, Kc, Qc, R, O, L, Bt, n, SIMD_ID, LANE);
#else
    // The right-hand side β_t (v_t − γ_t S_0 k_t) and γ_t S_0 q_t of row r,
    // reduced over the 16 threads of the row; GDN_CHUNK_ILP tokens at a time,
    // whose loads and shuffles overlap (one token a time was a chain of
    // dependent shuffles: ncu showed the kernel stalled on them). Tiles are
    // zero past n, and GDN_CHUNK is a multiple of GDN_CHUNK_ILP.
    for (int t0 = 0; t0 < n; t0 += GDN_CHUNK_ILP) {
      float pk[GDN_CHUNK_ILP], pq[GDN_CHUNK_ILP];
      UNROLL for (int u = 0; u < GDN_CHUNK_ILP; u++) {
        pk[u] = 0.0f;
        pq[u] = 0.0f;
      }
      UNROLL for (int u = 0; u < GDN_CHUNK_ILP; u++) {
        float kf[GDN_CHUNK_PER], qf[GDN_CHUNK_PER];
        attn_unpack8(K4[(t0 + u) * (GDN_CHUNK_MAX_DK / 8)], kf);
        attn_unpack8(Q4[(t0 + u) * (GDN_CHUNK_MAX_DK / 8)], qf);
        UNROLL for (int i = 0; i < GDN_CHUNK_PER; i++) {
          pk[u] += S[i] * kf[i];
          pq[u] += S[i] * qf[i];
        }
      }
      for (int o = 8; o > 0; o >>= 1) {
        UNROLL for (int u = 0; u < GDN_CHUNK_ILP; u++) {
          pk[u] += simd_shuffle_xor(pk[u], (uint)o);
          pq[u] += simd_shuffle_xor(pq[u], (uint)o);
        }
      }
      if (cg == 0) {
        UNROLL for (int u = 0; u < GDN_CHUNK_ILP; u++) {
          int t = t0 + u;
          if (t < n) {
            float gam = expf(L[t]);
            R[t * GDN_CHUNK_DV + r] = Bt[t] * (R[t * GDN_CHUNK_DV + r] - gam * pk[u]);
            O[t * GDN_CHUNK_DV + r] = gam * pq[u];
          }
        }
      }
    }
#endif
    BARRIER();
    // δ = W·rhs.
    for (int p = tid; p < GDN_CHUNK * GDN_CHUNK_DV; p += GDN_CHUNK_THREADS) {
      int t = p / GDN_CHUNK_DV, rr = p % GDN_CHUNK_DV;
      float dt = 0.0f;
      if (t < n)
        for (int j = 0; j <= t; j++) dt += W[t * GDN_CHUNK + j] * R[j * GDN_CHUNK_DV + rr];
      D[p] = dt;
    }
    BARRIER();
    // Outputs: o_t = γ_t S_0 q_t + Σ_{j≤t} M[t, j]·δ_j.
    for (int p = tid; p < GDN_CHUNK * GDN_CHUNK_DV; p += GDN_CHUNK_THREADS) {
      int t = p / GDN_CHUNK_DV, rr = p % GDN_CHUNK_DV;
      if (t >= n || dv0 + rr >= Dv) continue;
      float o = O[p];
      for (int j = 0; j <= t; j++) o += M[t * GDN_CHUNK + j] * D[j * GDN_CHUNK_DV + rr];
      out[((ulong)(c0 + t) * (ulong)Hv + (ulong)h) * (ulong)Dv + (ulong)(dv0 + rr)] = f32_to_bf16(o);
    }
    // The state after the chunk: γ_n S_0 + Σ_j (γ_n/γ_j)·δ_j·k_jᵀ.
    float last = L[n - 1];
    float decay = expf(last);
#if defined(GDN_CHUNK_MMA)
    gdn_chunk_weights(Wp, D, L, n, tid);
    BARRIER();
    gdn_chunk_update(S, decay, Wp, Kc, SIMD_ID, LANE);
#else
    UNROLL for (int i = 0; i < GDN_CHUNK_PER; i++) S[i] *= decay;
    for (int j = 0; j < n; j++) {
      float wj = expf(last - L[j]) * D[j * GDN_CHUNK_DV + r];
      float kf[GDN_CHUNK_PER];
      attn_unpack8(K4[j * (GDN_CHUNK_MAX_DK / 8)], kf);
      UNROLL for (int i = 0; i < GDN_CHUNK_PER; i++) S[i] += wj * kf[i];
    }
#endif
  }
#if defined(GDN_CHUNK_MMA)
  UNROLL for (int e = 0; e < 8; e++) {
    int rr = gdn_s_row(e, LANE), d = gdn_s_col(e, SIMD_ID, LANE);
    if (dv0 + rr < Dv && d < Dk) sblk[rr * Dk + d] = S[e];
  }
#else
  UNROLL for (int i = 0; i < GDN_CHUNK_PER; i++) {
    int d = GDN_CHUNK_PER * cg + i;
    if (rowOK && d < Dk) srow[d] = S[i];
  }
#endif
}
