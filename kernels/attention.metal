// Rotary embedding, KV-cache append and causal attention.

// rope_neox_bf16: x [T, H, D] in place. Token t is at position p = pos0 + t; for
// i < rotDims/2, a = p·theta^(−2i/rotDims) (inverse frequency and angle in f32)
// and (x_i, x_{i+rotDims/2}) is rotated by a. One thread per (t, h, i).
// launch: elements(T * H * (rotDims / 2))
KERNEL(rope_neox_bf16,
       BUFFER(bf16_t, x, 0),
       PARAM(int, T, 1),
       PARAM(int, H, 2),
       PARAM(int, D, 3),
       PARAM(int, rotDims, 4),
       PARAM(int, pos0, 5),
       PARAM(float, theta, 6)) {
  GRID_WAIT();
  int pairs = rotDims / 2;
  ulong idx = (ulong)TGID_X * (ulong)TG_SIZE_X + (ulong)TID_X;
  if (idx >= (ulong)T * (ulong)H * (ulong)pairs) return;
  int i = (int)(idx % (ulong)pairs);
  ulong th = idx / (ulong)pairs;  // t·H + h
  int t = (int)(th / (ulong)H);
  float invFreq = powf(theta, -(float)(2 * i) / (float)rotDims);
  float a = (float)(pos0 + t) * invFreq;
  float c = cosf(a), s = sinf(a);
  device bf16_t *head = x + th * (ulong)D;
  float x1 = bf16_to_f32(head[i]), x2 = bf16_to_f32(head[i + pairs]);
  head[i] = f32_to_bf16(x1 * c - x2 * s);
  head[i + pairs] = f32_to_bf16(x1 * s + x2 * c);
}

// kv_append_bf16: kcache[h, pos0+t, :] = k[t, h, :] and vcache likewise; caches
// [Hkv, Cap, D]. One thread per element of k.
// launch: elements(T * Hkv * D)
KERNEL(kv_append_bf16,
       BUFFER(const bf16_t, k, 0),
       BUFFER(const bf16_t, v, 1),
       BUFFER(bf16_t, kcache, 2),
       BUFFER(bf16_t, vcache, 3),
       PARAM(int, T, 4),
       PARAM(int, Hkv, 5),
       PARAM(int, D, 6),
       PARAM(int, Cap, 7),
       PARAM(int, pos0, 8)) {
  GRID_WAIT();
  ulong idx = (ulong)TGID_X * (ulong)TG_SIZE_X + (ulong)TID_X;
  if (idx >= (ulong)T * (ulong)Hkv * (ulong)D) return;
  ulong d = idx % (ulong)D;
  ulong th = idx / (ulong)D;
  ulong h = th % (ulong)Hkv, t = th / (ulong)Hkv;
  ulong dst = (h * (ulong)Cap + (ulong)pos0 + t) * (ulong)D + d;
  kcache[dst] = k[idx];
  vcache[dst] = v[idx];
}

// ATTN_PREP_THREADS is the threadgroup of attn_prep_bf16: one thread per dim
// of a head of up to 256 (rms_norm_bf16's threadgroup for such a row, so the
// sums run in the same order).
#define ATTN_PREP_THREADS 256

// attn_prep_head is attn_prep_bf16's work for token t and head h (of the Hq
// query heads, then the Hkv key heads): its key and value go to cache row
// slot, and it is rotated at position pt, or (multimodal RoPE, interleaved)
// frequency i at ph where i % 3 == 1 and i < 3·sh, at pw where i % 3 == 2
// and i < 3·sw (sh = sw = 0: every frequency at pt). partial and y are the
// threadgroup's (32 and ATTN_PREP_THREADS floats); tid .. nsimd its thread's
// place in it.
INLINE void attn_prep_head(device const bf16_t *qp, device const bf16_t *k, device const bf16_t *v,
                           device const bf16_t *q_norm, device const bf16_t *k_norm, device bf16_t *q,
                           device bf16_t *gate, device bf16_t *kcache, device bf16_t *vcache, int Hq, int Hkv, int D,
                           int rotDims, int t, int h, int slot, int pt, int ph, int pw, int sh, int sw, int Cap,
                           float theta, float eps,
                           threadgroup float *partial, threadgroup float *y, int tid, int nthreads, int lane,
                           int simd, int nsimd) {
  bool isQ = h < Hq;
  int hk = h - Hq;
  device const bf16_t *src = isQ ? qp + ((ulong)t * (ulong)Hq + (ulong)h) * (ulong)(2 * D)
                                 : k + ((ulong)t * (ulong)Hkv + (ulong)hk) * (ulong)D;
  device const bf16_t *w = isQ ? q_norm : k_norm;
  device bf16_t *dst = isQ ? q + ((ulong)t * (ulong)Hq + (ulong)h) * (ulong)D
                           : kcache + ((ulong)hk * (ulong)Cap + (ulong)slot) * (ulong)D;
  float ss = 0.0f;
  for (int i = tid; i < D; i += nthreads) {
    float x = bf16_to_f32(src[i]);
    ss += x * x;
  }
  float inv = rsqrtf(tg_sum(ss, partial, lane, simd, nsimd) / (float)D + eps);
  for (int i = tid; i < D; i += nthreads) {
    float xhat = round_bf16(bf16_to_f32(src[i]) * inv);
    y[i] = round_bf16(bf16_to_f32(w[i]) * xhat);
    if (isQ) {
      gate[((ulong)t * (ulong)Hq + (ulong)h) * (ulong)D + (ulong)i] = src[D + i];
    } else {
      vcache[((ulong)hk * (ulong)Cap + (ulong)slot) * (ulong)D + (ulong)i] =
          v[((ulong)t * (ulong)Hkv + (ulong)hk) * (ulong)D + (ulong)i];
    }
  }
  BARRIER();
  int pairs = rotDims / 2;
  for (int i = tid; i < D; i += nthreads) {
    if (i < pairs) {
      float invFreq = powf(theta, -(float)(2 * i) / (float)rotDims);
      int p = i % 3 == 1 && i < 3 * sh ? ph : (i % 3 == 2 && i < 3 * sw ? pw : pt);
      float a = (float)p * invFreq;
      float c = cosf(a), s = sinf(a);
      float x1 = y[i], x2 = y[i + pairs];
      dst[i] = f32_to_bf16(x1 * c - x2 * s);
      dst[i + pairs] = f32_to_bf16(x1 * s + x2 * c);
    } else if (i >= rotDims) {
      dst[i] = f32_to_bf16(y[i]);
    }
  }
}

// attn_prep_bf16: the attention layer's preamble in one launch, one
// threadgroup per (t, head) of the Hq query heads and then the Hkv key heads:
// split_qgate_bf16 (qp [T, Hq, 2D] → q and gate [T, Hq, D]), rms_norm_bf16 of
// each q head with q_norm [D] and of each k head (k [T, Hkv, D]) with k_norm,
// rope_neox_bf16 of both (rotDims, token t at position pos0 + shift + t,
// theta), and kv_append_bf16 of the normed, rotated k and of v [T, Hkv, D]
// into kcache and vcache [Hkv, Cap, D] at row pos0 + t. k and v are read
// only. shift is a cache's multimodal RoPE offset (0 until an image: after
// one, text continues from the image's largest position + 1).
// launch: grid(T * (Hq + Hkv)) group(ATTN_PREP_THREADS)
// requires: D <= ATTN_PREP_THREADS
KERNEL(attn_prep_bf16,
       BUFFER(const bf16_t, qp, 0),
       BUFFER(const bf16_t, k, 1),
       BUFFER(const bf16_t, v, 2),
       BUFFER(const bf16_t, q_norm, 3),
       BUFFER(const bf16_t, k_norm, 4),
       BUFFER(bf16_t, q, 5),
       BUFFER(bf16_t, gate, 6),
       BUFFER(bf16_t, kcache, 7),
       BUFFER(bf16_t, vcache, 8),
       PARAM(int, T, 9),
       PARAM(int, Hq, 10),
       PARAM(int, Hkv, 11),
       PARAM(int, D, 12),
       PARAM(int, rotDims, 13),
       PARAM(int, pos0, 14),
       PARAM(int, Cap, 15),
       PARAM(float, theta, 16),
       PARAM(float, eps, 17),
       PARAM(int, shift, 18)) {
  GRID_WAIT();
  TG_MEM(float, partial, 32);
  TG_MEM(float, y, ATTN_PREP_THREADS);
  int t = TGID_X / (Hq + Hkv);
  if (t >= T) return;  // uniform across the threadgroup
  int p = pos0 + shift + t;
  attn_prep_head(qp, k, v, q_norm, k_norm, q, gate, kcache, vcache, Hq, Hkv, D, rotDims, t, TGID_X % (Hq + Hkv),
                 pos0 + t, p, p, p, 0, 0, Cap, theta, eps, partial, y, TID_X, TG_SIZE_X, LANE, SIMD_ID, SIMD_COUNT);
}

// attn_prep_batch_bf16: attn_prep_bf16 of B rows of a batched step (a
// sequence's token, or each token of a sequence's verify): row r of qp, k
// and v ([B, ...]) into row r of q and gate, its key and value into the
// caches of slot seqs[r, 0] at row seqs[r, 1], rotated at position
// seqs[r, 2] (i32 [B, 3]; the slots' caches [Hkv, Cap, D] lie stride
// elements apart from kcache and vcache, slot 0's). A row's threadgroups
// compute what a launch of it alone computes. No two rows write one cache
// row of a slot.
// launch: grid(B * (Hq + Hkv)) group(ATTN_PREP_THREADS)
// requires: D <= ATTN_PREP_THREADS
KERNEL(attn_prep_batch_bf16,
       BUFFER(const bf16_t, qp, 0),
       BUFFER(const bf16_t, k, 1),
       BUFFER(const bf16_t, v, 2),
       BUFFER(const bf16_t, q_norm, 3),
       BUFFER(const bf16_t, k_norm, 4),
       BUFFER(bf16_t, q, 5),
       BUFFER(bf16_t, gate, 6),
       BUFFER(bf16_t, kcache, 7),
       BUFFER(bf16_t, vcache, 8),
       BUFFER(const int, seqs, 9),
       PARAM(int, B, 10),
       PARAM(int, Hq, 11),
       PARAM(int, Hkv, 12),
       PARAM(int, D, 13),
       PARAM(int, rotDims, 14),
       PARAM(int, Cap, 15),
       PARAM(float, theta, 16),
       PARAM(float, eps, 17),
       PARAM(int, stride, 18)) {
  GRID_WAIT();
  TG_MEM(float, partial, 32);
  TG_MEM(float, y, ATTN_PREP_THREADS);
  int r = TGID_X / (Hq + Hkv);
  if (r >= B) return;  // uniform across the threadgroup
  ulong at = (ulong)seqs[3 * r] * (ulong)stride;
  int row = seqs[3 * r + 1], p = seqs[3 * r + 2];
  attn_prep_head(qp, k, v, q_norm, k_norm, q, gate, kcache + at, vcache + at, Hq, Hkv, D, rotDims, r,
                 TGID_X % (Hq + Hkv), row, p, p, p, 0, 0, Cap, theta, eps, partial, y, TID_X, TG_SIZE_X, LANE, SIMD_ID,
                 SIMD_COUNT);
}

// attn_prep_tree_bf16: attn_prep_bf16 over a draft tree: token t is rotated at
// position pos[t] (i32 [T]: pos0 plus its depth) and its key and value still
// go to cache row pos0 + t. Other buffers and the grid as attn_prep_bf16.
// launch: grid(T * (Hq + Hkv)) group(ATTN_PREP_THREADS)
// requires: D <= ATTN_PREP_THREADS
KERNEL(attn_prep_tree_bf16,
       BUFFER(const bf16_t, qp, 0),
       BUFFER(const bf16_t, k, 1),
       BUFFER(const bf16_t, v, 2),
       BUFFER(const bf16_t, q_norm, 3),
       BUFFER(const bf16_t, k_norm, 4),
       BUFFER(bf16_t, q, 5),
       BUFFER(bf16_t, gate, 6),
       BUFFER(bf16_t, kcache, 7),
       BUFFER(bf16_t, vcache, 8),
       BUFFER(const int, pos, 9),
       PARAM(int, T, 10),
       PARAM(int, Hq, 11),
       PARAM(int, Hkv, 12),
       PARAM(int, D, 13),
       PARAM(int, rotDims, 14),
       PARAM(int, pos0, 15),
       PARAM(int, Cap, 16),
       PARAM(float, theta, 17),
       PARAM(float, eps, 18)) {
  GRID_WAIT();
  TG_MEM(float, partial, 32);
  TG_MEM(float, y, ATTN_PREP_THREADS);
  int t = TGID_X / (Hq + Hkv);
  if (t >= T) return;  // uniform across the threadgroup
  attn_prep_head(qp, k, v, q_norm, k_norm, q, gate, kcache, vcache, Hq, Hkv, D, rotDims, t, TGID_X % (Hq + Hkv),
                 pos0 + t, pos[t], pos[t], pos[t], 0, 0, Cap, theta, eps, partial, y, TID_X, TG_SIZE_X, LANE, SIMD_ID,
                 SIMD_COUNT);
}

// attn_prep_mrope_bf16: attn_prep_bf16 with multimodal RoPE (Qwen3.5's
// interleaved mRoPE): token t has three positions pos[t] = (t, h, w) (i32
// [T, 3]: an image's tokens its time, row and column, text all three
// alike), and rotary frequency i turns by h where i % 3 == 1 and i < 3·sh,
// by w where i % 3 == 2 and i < 3·sw, by t otherwise (mrope_section
// [st, sh, sw]); its key and value go to cache row pos0 + t. Other buffers
// and the grid as attn_prep_bf16.
// launch: grid(T * (Hq + Hkv)) group(ATTN_PREP_THREADS)
// requires: D <= ATTN_PREP_THREADS
KERNEL(attn_prep_mrope_bf16,
       BUFFER(const bf16_t, qp, 0),
       BUFFER(const bf16_t, k, 1),
       BUFFER(const bf16_t, v, 2),
       BUFFER(const bf16_t, q_norm, 3),
       BUFFER(const bf16_t, k_norm, 4),
       BUFFER(bf16_t, q, 5),
       BUFFER(bf16_t, gate, 6),
       BUFFER(bf16_t, kcache, 7),
       BUFFER(bf16_t, vcache, 8),
       BUFFER(const int, pos, 9),
       PARAM(int, T, 10),
       PARAM(int, Hq, 11),
       PARAM(int, Hkv, 12),
       PARAM(int, D, 13),
       PARAM(int, rotDims, 14),
       PARAM(int, pos0, 15),
       PARAM(int, Cap, 16),
       PARAM(int, sh, 17),
       PARAM(int, sw, 18),
       PARAM(float, theta, 19),
       PARAM(float, eps, 20)) {
  GRID_WAIT();
  TG_MEM(float, partial, 32);
  TG_MEM(float, y, ATTN_PREP_THREADS);
  int t = TGID_X / (Hq + Hkv);
  if (t >= T) return;  // uniform across the threadgroup
  attn_prep_head(qp, k, v, q_norm, k_norm, q, gate, kcache, vcache, Hq, Hkv, D, rotDims, t, TGID_X % (Hq + Hkv),
                 pos0 + t, pos[3 * t], pos[3 * t + 1], pos[3 * t + 2], sh, sw, Cap, theta, eps, partial, y, TID_X,
                 TG_SIZE_X, LANE, SIMD_ID, SIMD_COUNT);
}

// attention_bf16 works on heads of up to ATTN_MAX_D dims: each lane of a
// SIMD-group holds dims 8·lane .. 8·lane + 7 of the query and of its output,
// so that a key's or a value's share of a lane is one 16-byte load.
#define ATTN_MAX_D 256
#define ATTN_PER_LANE 8
// ATTN_SIMDGROUPS is the threadgroup size / 32 that kernels.Launch uses.
#define ATTN_SIMDGROUPS 8
#define ATTN_NEG_BIG (-3.0e38f)

// attn_row8 loads dims 8·lane .. 8·lane + 7 of a bf16 row of D as floats
// (zeros past D): one 16-byte load where the row allows it.
INLINE void attn_row8(device const bf16_t *row, int D, int lane, thread float *v) {
  int d0 = ATTN_PER_LANE * lane;
  if (d0 + ATTN_PER_LANE <= D && ALIGNED16(row + d0)) {
    u32x4 w = *(device const u32x4 *)(row + d0);
    uint ws[4] = {w.x, w.y, w.z, w.w};
    UNROLL for (int i = 0; i < 4; i++) {
      v[2 * i] = as_float(ws[i] << 16);
      v[2 * i + 1] = as_float(ws[i] & 0xffff0000u);
    }
  } else {
    UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) v[i] = d0 + i < D ? bf16_to_f32(row[d0 + i]) : 0.0f;
  }
}

// attn_walk runs one SIMD-group's online softmax (running max *m, sum *l and
// output o, this lane's dims) over keys j0, j0 + step, ... below end of the
// head at headBase (rows of D). A key and its value are loaded together.
INLINE void attn_walk(thread const float *qv, device const bf16_t *kcache, device const bf16_t *vcache,
                      ulong headBase, int j0, int end, int step, int D, float scale, int lane, thread float *m,
                      thread float *l, thread float *o) {
  for (int j = j0; j < end; j += step) {
    float kv[ATTN_PER_LANE], vv[ATTN_PER_LANE];
    attn_row8(kcache + (headBase + (ulong)j) * (ulong)D, D, lane, kv);
    attn_row8(vcache + (headBase + (ulong)j) * (ulong)D, D, lane, vv);
    float dot = 0.0f;
    UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) dot += qv[i] * kv[i];
    float s = scale * simd_sum(dot);
    float mNew = fmaxf(*m, s);
    float corr = expf(*m - mNew);
    float p = expf(s - mNew);
    *l = *l * corr + p;
    UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) o[i] = o[i] * corr + p * vv[i];
    *m = mNew;
  }
}

// attn_share puts each SIMD-group's (m, l, o) in threadgroup memory and
// returns, to every thread, the threadgroup's max *mAll and sum *lAll; sgOut
// then holds the unscaled outputs of every SIMD-group ([sg][ATTN_MAX_D]).
INLINE void attn_share(float m, float l, thread const float *o, threadgroup float *sgMax, threadgroup float *sgSum,
                       threadgroup float *sgOut, int D, int lane, int sg, int nsg, thread float *mAll,
                       thread float *lAll) {
  if (lane == 0) {
    sgMax[sg] = m;
    sgSum[sg] = l;
  }
  UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) {
    int d = ATTN_PER_LANE * lane + i;
    if (d < D) sgOut[sg * ATTN_MAX_D + d] = o[i];
  }
  BARRIER();
  float mx = ATTN_NEG_BIG;
  for (int s = 0; s < nsg; s++) mx = fmaxf(mx, sgMax[s]);
  float sum = 0.0f;
  for (int s = 0; s < nsg; s++) sum += sgSum[s] * expf(sgMax[s] - mx);
  *mAll = mx;
  *lAll = sum;
}

// attn_query is attention_bf16's work for one query and q-head (qrow [D],
// into orow [D]): the threadgroup's SIMD-groups take the keys 0..last of
// kv-head kvh round-robin, then merge their online softmaxes.
INLINE void attn_query(device const bf16_t *qrow, device const bf16_t *kcache, device const bf16_t *vcache,
                       device bf16_t *orow, int kvh, int Cap, int last, int D, float scale,
                       threadgroup float *sgMax, threadgroup float *sgSum, threadgroup float *sgOut, int tid,
                       int ntid, int lane, int sg, int nsg) {
  float qv[ATTN_PER_LANE];
  float o[ATTN_PER_LANE];
  attn_row8(qrow, D, lane, qv);
  UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) o[i] = 0.0f;
  float m = ATTN_NEG_BIG, l = 0.0f;
  attn_walk(qv, kcache, vcache, (ulong)kvh * (ulong)Cap, sg, last + 1, nsg, D, scale, lane, &m, &l, o);
  float mAll, lAll;
  attn_share(m, l, o, sgMax, sgSum, sgOut, D, lane, sg, nsg, &mAll, &lAll);
  for (int d = tid; d < D; d += ntid) {
    float acc = 0.0f;
    for (int s = 0; s < nsg; s++) acc += sgOut[s * ATTN_MAX_D + d] * expf(sgMax[s] - mAll);
    orow[d] = f32_to_bf16(acc / lAll);
  }
}

// attention_bf16: q [T, Hq, D], kcache/vcache [Hkv, Cap, D], out [T, Hq, D].
// Query t is at position kvLen−T+t and sees keys 0..kvLen−T+t; q-head h reads
// kv-head h/(Hq/Hkv). Scores scale·(q·k) and softmax in f32.
//
// One threadgroup per (t, h). Its SIMD-groups take keys round-robin, each keeping
// an online softmax (running max m, sum l, output o); the partial results are
// merged through threadgroup memory at the end (attn_query).
// launch: grid(T * Hq) group(ATTN_SIMDGROUPS * 32)
// requires: D <= ATTN_MAX_D
KERNEL(attention_bf16,
       BUFFER(const bf16_t, q, 0),
       BUFFER(const bf16_t, kcache, 1),
       BUFFER(const bf16_t, vcache, 2),
       BUFFER(bf16_t, out, 3),
       PARAM(int, T, 4),
       PARAM(int, Hq, 5),
       PARAM(int, Hkv, 6),
       PARAM(int, D, 7),
       PARAM(int, Cap, 8),
       PARAM(int, kvLen, 9),
       PARAM(float, scale, 10)) {
  GRID_WAIT_COMPUTE();
  TG_MEM(float, sgMax, ATTN_SIMDGROUPS);
  TG_MEM(float, sgSum, ATTN_SIMDGROUPS);
  TG_MEM(float, sgOut, ATTN_SIMDGROUPS * ATTN_MAX_D);
  int item = TGID_X;  // t·Hq + h
  int t = item / Hq, h = item % Hq;
  attn_query(q + (ulong)item * (ulong)D, kcache, vcache, out + (ulong)item * (ulong)D, h / (Hq / Hkv), Cap,
             kvLen - T + t, D, scale, sgMax, sgSum, sgOut, TID_X, TG_SIZE_X, LANE, SIMD_ID, SIMD_COUNT);
}

// attention_batch_bf16: attention_bf16 of one query for each of B rows of
// a batched step (rows of one slot, a verify's, each over its own keys, as
// their decode steps would be): row r of q [B, Hq, D] over the keys 0..seqs[r, 1]
// of slot seqs[r, 0]'s caches (i32 [B, 3] as attn_prep_batch_bf16 takes it;
// the slots' caches [Hkv, Cap, D] lie stride elements apart from kcache and
// vcache, slot 0's) into row r of out, as a launch of it alone computes it;
// only the rows of fewer than split keys (the others take the split kernels).
// launch: grid(B * Hq) group(ATTN_SIMDGROUPS * 32)
// requires: D <= ATTN_MAX_D
KERNEL(attention_batch_bf16,
       BUFFER(const bf16_t, q, 0),
       BUFFER(const bf16_t, kcache, 1),
       BUFFER(const bf16_t, vcache, 2),
       BUFFER(const int, seqs, 3),
       BUFFER(bf16_t, out, 4),
       PARAM(int, B, 5),
       PARAM(int, Hq, 6),
       PARAM(int, Hkv, 7),
       PARAM(int, D, 8),
       PARAM(int, Cap, 9),
       PARAM(int, split, 10),
       PARAM(int, stride, 11),
       PARAM(float, scale, 12)) {
  GRID_WAIT_COMPUTE();
  TG_MEM(float, sgMax, ATTN_SIMDGROUPS);
  TG_MEM(float, sgSum, ATTN_SIMDGROUPS);
  TG_MEM(float, sgOut, ATTN_SIMDGROUPS * ATTN_MAX_D);
  int item = TGID_X;  // r·Hq + h
  int r = item / Hq, h = item % Hq;
  if (r >= B) return;
  int last = seqs[3 * r + 1];
  if (last + 1 >= split) return;  // uniform across the threadgroup
  ulong at = (ulong)seqs[3 * r] * (ulong)stride;
  attn_query(q + (ulong)item * (ulong)D, kcache + at, vcache + at, out + (ulong)item * (ulong)D, h / (Hq / Hkv), Cap,
             last, D, scale, sgMax, sgSum, sgOut, TID_X, TG_SIZE_X, LANE, SIMD_ID, SIMD_COUNT);
}

// attention_tree_bf16: attention_bf16 over a draft tree of T nodes, the last T
// of the kvLen keys: query t sees the keys before the tree and tree node j
// where bit j of mask[t] is set (i32 [T]: its ancestors and itself). The
// SIMD-groups take the keys before the tree round-robin as attention_bf16
// does, then the tree's, one key at a time.
// launch: grid(T * Hq) group(ATTN_SIMDGROUPS * 32)
// requires: D <= ATTN_MAX_D
// requires: T <= 32
KERNEL(attention_tree_bf16,
       BUFFER(const bf16_t, q, 0),
       BUFFER(const bf16_t, kcache, 1),
       BUFFER(const bf16_t, vcache, 2),
       BUFFER(const int, mask, 3),
       BUFFER(bf16_t, out, 4),
       PARAM(int, T, 5),
       PARAM(int, Hq, 6),
       PARAM(int, Hkv, 7),
       PARAM(int, D, 8),
       PARAM(int, Cap, 9),
       PARAM(int, kvLen, 10),
       PARAM(float, scale, 11)) {
  GRID_WAIT_COMPUTE();
  TG_MEM(float, sgMax, ATTN_SIMDGROUPS);
  TG_MEM(float, sgSum, ATTN_SIMDGROUPS);
  TG_MEM(float, sgOut, ATTN_SIMDGROUPS * ATTN_MAX_D);
  int item = TGID_X;  // t·Hq + h
  int t = item / Hq, h = item % Hq;
  int kvh = h / (Hq / Hkv);
  int base = kvLen - T;  // the tree's first key
  int lane = LANE, sg = SIMD_ID, nsg = SIMD_COUNT;
  ulong headBase = (ulong)kvh * (ulong)Cap;

  float qv[ATTN_PER_LANE];
  float o[ATTN_PER_LANE];
  attn_row8(q + (ulong)item * (ulong)D, D, lane, qv);
  UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) o[i] = 0.0f;
  float m = ATTN_NEG_BIG, l = 0.0f;
  attn_walk(qv, kcache, vcache, headBase, sg, base, nsg, D, scale, lane, &m, &l, o);
  uint seen = (uint)mask[t];
  for (int j = sg; j < T; j += nsg) {
    if ((seen >> (uint)j) & 1u) attn_walk(qv, kcache, vcache, headBase, base + j, base + j + 1, 1, D, scale, lane, &m, &l, o);
  }
  float mAll, lAll;
  attn_share(m, l, o, sgMax, sgSum, sgOut, D, lane, sg, nsg, &mAll, &lAll);
  for (int d = TID_X; d < D; d += TG_SIZE_X) {
    float acc = 0.0f;
    for (int s = 0; s < nsg; s++) acc += sgOut[s * ATTN_MAX_D + d] * expf(sgMax[s] - mAll);
    out[(ulong)item * (ulong)D + (ulong)d] = f32_to_bf16(acc / lAll);
  }
}

// Split-KV attention for decode (flash decoding): the keys a query sees are cut
// into S ranges handled by S threadgroups, which write partial softmax results;
// attention_merge_bf16 combines them. One threadgroup per query head walks all
// the keys in attention_bf16, which leaves most of the GPU idle at long
// contexts; here a long context spreads over T·Hkv·S threadgroups. Each one
// serves every q-head of its kv-head (grouped-query attention: Hq/Hkv of them,
// 8 at Qwen3.5-35B-A3B), so a range's keys and values are read from memory
// once, not once per q-head: they pass through threadgroup memory
// ATTN_SPLIT_KEYS at a time (the next block's loads in flight while the
// current one is used), and SIMD-group g takes q-heads g and g + 8.
// ATTN_MAX_GROUP is ATTN_SIMDGROUPS · ATTN_GROUP_SLOTS.
#ifndef ATTN_SPLIT_KEYS
#define ATTN_SPLIT_KEYS 16
#endif
#ifndef ATTN_MAX_GROUP
#define ATTN_MAX_GROUP 16
#endif
#ifndef ATTN_GROUP_SLOTS
#define ATTN_GROUP_SLOTS 2
#endif
// Pieces (8 dims, 16 bytes) of a block's keys, and as many of its values, that
// each thread stages: ATTN_SPLIT_KEYS · ATTN_MAX_D / 8 over the threadgroup.
#ifndef ATTN_SPLIT_PIECES
#define ATTN_SPLIT_PIECES 2
#endif
// ATTN_MAX_SPLITS bounds the key ranges of a query (ops.SplitKVSplits).
#ifndef ATTN_MAX_SPLITS
#define ATTN_MAX_SPLITS 128
#endif

// attn_piece is piece p of a block of nk rows from row base of a cache of rows
// of D: dims 8·(p % 32) .. + 7 of row p / 32, zeros past D or nk rows.
INLINE u32x4 attn_piece(device const bf16_t *cache, ulong base, int p, int nk, int D) {
  int row = p / (ATTN_MAX_D / 8), d0 = (p % (ATTN_MAX_D / 8)) * 8;
  if (row >= nk || d0 >= D) return u32x4_zero();
  device const bf16_t *src = cache + (base + (ulong)row) * (ulong)D + (ulong)d0;
  if (d0 + 8 <= D && ALIGNED16(src)) return *(device const u32x4 *)src;
  uint w[4];
  UNROLL for (int i = 0; i < 4; i++) {
    uint lo = d0 + 2 * i < D ? (uint)src[2 * i] : 0u;
    uint hi = d0 + 2 * i + 1 < D ? (uint)src[2 * i + 1] : 0u;
    w[i] = lo | (hi << 16);
  }
  u32x4 v = u32x4_zero();
  v.x = w[0];
  v.y = w[1];
  v.z = w[2];
  v.w = w[3];
  return v;
}

// attn_unpack8 is a piece's eight bf16 as floats.
INLINE void attn_unpack8(u32x4 w, thread float *v) {
  uint ws[4] = {w.x, w.y, w.z, w.w};
  UNROLL for (int i = 0; i < 4; i++) {
    v[2 * i] = as_float(ws[i] << 16);
    v[2 * i + 1] = as_float(ws[i] & 0xffff0000u);
  }
}

// attn_block runs one SIMD-group's online softmax for one q-head (qv, o: this
// lane's dims) over the nk keys and values of a block in threadgroup memory,
// ATTN_KEYS_AT_ONCE keys at a time so that their sums' shuffles overlap (each
// key's score is a sum across the SIMD-group: five dependent shuffles).
#ifndef ATTN_KEYS_AT_ONCE
#define ATTN_KEYS_AT_ONCE 4
#endif
INLINE void attn_block(threadgroup const u32x4 *K4, threadgroup const u32x4 *V4, int nk, thread const float *qv,
                       thread float *o, thread float *m, thread float *l, float scale, int lane) {
  for (int k = 0; k < nk; k += ATTN_KEYS_AT_ONCE) {
    float s[ATTN_KEYS_AT_ONCE];
    UNROLL for (int j = 0; j < ATTN_KEYS_AT_ONCE; j++) {
      float kj[ATTN_PER_LANE];
      attn_unpack8(k + j < nk ? K4[(k + j) * (ATTN_MAX_D / 8) + lane] : u32x4_zero(), kj);
      float d = 0.0f;
      UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) d += qv[i] * kj[i];
      s[j] = d;
    }
    float mNew = *m;
    UNROLL for (int j = 0; j < ATTN_KEYS_AT_ONCE; j++) {
      s[j] = k + j < nk ? scale * simd_sum(s[j]) : ATTN_NEG_BIG;
      mNew = fmaxf(mNew, s[j]);
    }
    float corr = expf(*m - mNew);
    float p[ATTN_KEYS_AT_ONCE];
    float psum = 0.0f;
    UNROLL for (int j = 0; j < ATTN_KEYS_AT_ONCE; j++) {
      p[j] = k + j < nk ? expf(s[j] - mNew) : 0.0f;
      psum += p[j];
    }
    *l = *l * corr + psum;
    UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) o[i] *= corr;
    UNROLL for (int j = 0; j < ATTN_KEYS_AT_ONCE; j++) {
      float vj[ATTN_PER_LANE];
      attn_unpack8(k + j < nk ? V4[(k + j) * (ATTN_MAX_D / 8) + lane] : u32x4_zero(), vj);
      UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) o[i] += p[j] * vj[i];
    }
    *m = mNew;
  }
}

// attn_split_group is attention_split_f32's work for query t (of T, kvLen
// keys in all) and split `split` of kv-head kvh's q-heads, Ks and Vs the
// threadgroup's staging.
INLINE void attn_split_group(device const bf16_t *q, device const bf16_t *kcache, device const bf16_t *vcache,
                             device float *partial, int T, int Hq, int Hkv, int D, int Cap, int kvLen, int S, int t,
                             int kvh, int split, float scale, threadgroup bf16_t *Ks, threadgroup bf16_t *Vs, int tid,
                             int ntid, int lane, int sg, int nsg) {
  int G = Hq / Hkv;
  int n = kvLen - T + t + 1;  // keys this query sees
  int c = (n + S - 1) / S;
  int first = split * c, end = imin(n, first + c);

  float qv[ATTN_GROUP_SLOTS][ATTN_PER_LANE], o[ATTN_GROUP_SLOTS][ATTN_PER_LANE];
  float m[ATTN_GROUP_SLOTS], l[ATTN_GROUP_SLOTS];
  UNROLL for (int s = 0; s < ATTN_GROUP_SLOTS; s++) {
    int g = sg + s * nsg;
    UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) {
      qv[s][i] = 0.0f;
      o[s][i] = 0.0f;
    }
    if (g < G) attn_row8(q + ((ulong)t * (ulong)Hq + (ulong)(kvh * G + g)) * (ulong)D, D, lane, qv[s]);
    m[s] = ATTN_NEG_BIG;
    l[s] = 0.0f;
  }
  ulong headBase = (ulong)kvh * (ulong)Cap;
  threadgroup u32x4 *K4 = (threadgroup u32x4 *)Ks;
  threadgroup u32x4 *V4 = (threadgroup u32x4 *)Vs;
  u32x4 pk[ATTN_SPLIT_PIECES], pv[ATTN_SPLIT_PIECES];
  UNROLL for (int i = 0; i < ATTN_SPLIT_PIECES; i++) {
    int p = tid + i * ntid, nk = imin(ATTN_SPLIT_KEYS, end - first);
    pk[i] = attn_piece(kcache, headBase + (ulong)first, p, nk, D);
    pv[i] = attn_piece(vcache, headBase + (ulong)first, p, nk, D);
  }
  for (int j0 = first; j0 < end; j0 += ATTN_SPLIT_KEYS) {
    int nk = imin(ATTN_SPLIT_KEYS, end - j0);
    BARRIER();  // the last block's readers are done
    UNROLL for (int i = 0; i < ATTN_SPLIT_PIECES; i++) {
      K4[tid + i * ntid] = pk[i];
      V4[tid + i * ntid] = pv[i];
    }
    BARRIER();
    int j1 = j0 + ATTN_SPLIT_KEYS, nk1 = imin(ATTN_SPLIT_KEYS, end - j1);
    UNROLL for (int i = 0; i < ATTN_SPLIT_PIECES; i++) {
      int p = tid + i * ntid;
      pk[i] = attn_piece(kcache, headBase + (ulong)j1, p, nk1, D);
      pv[i] = attn_piece(vcache, headBase + (ulong)j1, p, nk1, D);
    }
    UNROLL for (int s = 0; s < ATTN_GROUP_SLOTS; s++) {
      if (sg + s * nsg < G) attn_block(K4, V4, nk, qv[s], o[s], &m[s], &l[s], scale, lane);
    }
  }
  UNROLL for (int s = 0; s < ATTN_GROUP_SLOTS; s++) {
    int g = sg + s * nsg;
    if (g >= G) continue;
    int h = kvh * G + g;
    device float *dst = partial + (((ulong)t * (ulong)Hq + (ulong)h) * (ulong)S + (ulong)split) * (ulong)(D + 2);
    UNROLL for (int i = 0; i < ATTN_PER_LANE; i++) {
      int d = ATTN_PER_LANE * lane + i;
      if (d < D) dst[d] = o[s][i];
    }
    if (lane == 0) {
      dst[D] = m[s];
      dst[D + 1] = l[s];
    }
  }
}

// attention_split_f32: for query (t, h) at position kvLen−T+t (it sees keys
// 0..kvLen−T+t, n of them), split s of S takes keys [s·c, min(n, (s+1)·c)) with
// c = ⌈n/S⌉ and writes, relative to its own running max m: o = Σ e^(score−m)·v,
// l = Σ e^(score−m), m (scores scale·(q·k) in f32), as partial[t, h, s, :] =
// [o (D values) | m | l]. An empty range writes o = 0, l = 0, m = −3e38.
// One threadgroup per (t, kv-head, split), as above.
// launch: grid(T * Hkv * S) group(ATTN_SIMDGROUPS * 32)
// requires: D <= ATTN_MAX_D
// requires: Hq <= Hkv * ATTN_MAX_GROUP
KERNEL(attention_split_f32,
       BUFFER(const bf16_t, q, 0),
       BUFFER(const bf16_t, kcache, 1),
       BUFFER(const bf16_t, vcache, 2),
       BUFFER(float, partial, 3),
       PARAM(int, T, 4),
       PARAM(int, Hq, 5),
       PARAM(int, Hkv, 6),
       PARAM(int, D, 7),
       PARAM(int, Cap, 8),
       PARAM(int, kvLen, 9),
       PARAM(int, S, 10),
       PARAM(float, scale, 11)) {
  GRID_WAIT();
  TG_MEM_ALIGNED16(bf16_t, Ks, ATTN_SPLIT_KEYS * ATTN_MAX_D);
  TG_MEM_ALIGNED16(bf16_t, Vs, ATTN_SPLIT_KEYS * ATTN_MAX_D);
  int item = TGID_X / S, split = TGID_X % S;  // item = t·Hkv + kvh
  attn_split_group(q, kcache, vcache, partial, T, Hq, Hkv, D, Cap, kvLen, S, item / Hkv, item % Hkv, split, scale, Ks,
                   Vs, TID_X, TG_SIZE_X, LANE, SIMD_ID, SIMD_COUNT);
}

// attention_split_batch_f32: attention_split_f32 of one query for each of B
// sequences (a batched decode step): row r of q [B, Hq, D] over the keys
// 0..seqs[r, 1] of slot seqs[r, 0]'s caches (as attention_batch_bf16 finds
// them) into row r of partial [B, Hq, S, D+2], as a launch of it alone
// computes it; only the rows of split keys or more.
// launch: grid(B * Hkv * S) group(ATTN_SIMDGROUPS * 32)
// requires: D <= ATTN_MAX_D
// requires: Hq <= Hkv * ATTN_MAX_GROUP
KERNEL(attention_split_batch_f32,
       BUFFER(const bf16_t, q, 0),
       BUFFER(const bf16_t, kcache, 1),
       BUFFER(const bf16_t, vcache, 2),
       BUFFER(const int, seqs, 3),
       BUFFER(float, partial, 4),
       PARAM(int, B, 5),
       PARAM(int, Hq, 6),
       PARAM(int, Hkv, 7),
       PARAM(int, D, 8),
       PARAM(int, Cap, 9),
       PARAM(int, S, 10),
       PARAM(int, split, 11),
       PARAM(int, stride, 12),
       PARAM(float, scale, 13)) {
  GRID_WAIT();
  TG_MEM_ALIGNED16(bf16_t, Ks, ATTN_SPLIT_KEYS * ATTN_MAX_D);
  TG_MEM_ALIGNED16(bf16_t, Vs, ATTN_SPLIT_KEYS * ATTN_MAX_D);
  int r = TGID_X / (Hkv * S), item = TGID_X % (Hkv * S);
  if (r >= B) return;
  int kvLen = seqs[3 * r + 1] + 1;
  if (kvLen < split) return;  // uniform across the threadgroup
  ulong at = (ulong)seqs[3 * r] * (ulong)stride;
  attn_split_group(q + (ulong)r * (ulong)(Hq * D), kcache + at, vcache + at, partial + (ulong)r * (ulong)(Hq * S * (D + 2)),
                   1, Hq, Hkv, D, Cap, kvLen, S, 0, item / S, item % S, scale, Ks, Vs, TID_X, TG_SIZE_X, LANE, SIMD_ID,
                   SIMD_COUNT);
}

// attn_merge_item is attention_merge_bf16's work for one query and q-head:
// its S partials p [S, D+2] into orow [D], factor the threadgroup's
// ATTN_MAX_SPLITS floats.
INLINE void attn_merge_item(device const float *p, device bf16_t *orow, int D, int S, threadgroup float *factor, int tid,
                            int ntid) {
  float mAll = ATTN_NEG_BIG;
  for (int s = 0; s < S; s++) mAll = fmaxf(mAll, p[(ulong)s * (ulong)(D + 2) + (ulong)D]);
  for (int s = tid; s < S; s += ntid) factor[s] = expf(p[(ulong)s * (ulong)(D + 2) + (ulong)D] - mAll);
  BARRIER();
  float lAll = 0.0f;
  for (int s = 0; s < S; s++) lAll += p[(ulong)s * (ulong)(D + 2) + (ulong)(D + 1)] * factor[s];
  for (int d = tid; d < D; d += ntid) {
    float acc = 0.0f;
    for (int s = 0; s < S; s++) acc += p[(ulong)s * (ulong)(D + 2) + (ulong)d] * factor[s];
    orow[d] = f32_to_bf16(acc / lAll);
  }
}

// attention_merge_bf16: out[t, h, :] = bf16(Σ_s o_s·e^(m_s−M) / Σ_s l_s·e^(m_s−M))
// over the S partials of attention_split_f32, M = max_s m_s. Each split's
// factor e^(m_s−M) is computed once, by one thread, into threadgroup memory
// (S·D exponentials a query before, S a thread).
// launch: grid(T * Hq) group(min(256, ceil(D, 32) * 32))
// requires: S <= ATTN_MAX_SPLITS
KERNEL(attention_merge_bf16,
       BUFFER(const float, partial, 0),
       BUFFER(bf16_t, out, 1),
       PARAM(int, T, 2),
       PARAM(int, Hq, 3),
       PARAM(int, D, 4),
       PARAM(int, S, 5)) {
  GRID_WAIT();
  TG_MEM(float, factor, ATTN_MAX_SPLITS);
  int item = TGID_X;
  if (item >= T * Hq) return;
  attn_merge_item(partial + (ulong)item * (ulong)S * (ulong)(D + 2), out + (ulong)item * (ulong)D, D, S, factor, TID_X, TG_SIZE_X);
}

// attention_merge_batch_bf16: attention_merge_bf16 of a batched step's rows
// of split keys or more (seqs i32 [B, 3] as attention_batch_bf16 takes it):
// row r of partial [B, Hq, S, D+2] into row r of out [B, Hq, D].
// launch: grid(B * Hq) group(min(256, ceil(D, 32) * 32))
// requires: S <= ATTN_MAX_SPLITS
KERNEL(attention_merge_batch_bf16,
       BUFFER(const float, partial, 0),
       BUFFER(const int, seqs, 1),
       BUFFER(bf16_t, out, 2),
       PARAM(int, B, 3),
       PARAM(int, Hq, 4),
       PARAM(int, D, 5),
       PARAM(int, S, 6),
       PARAM(int, split, 7)) {
  GRID_WAIT();
  TG_MEM(float, factor, ATTN_MAX_SPLITS);
  int item = TGID_X;
  if (item >= B * Hq || seqs[3 * (item / Hq) + 1] + 1 < split) return;  // uniform across the threadgroup
  attn_merge_item(partial + (ulong)item * (ulong)S * (ulong)(D + 2), out + (ulong)item * (ulong)D, D, S, factor, TID_X, TG_SIZE_X);
}
