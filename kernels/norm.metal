// RMSNorm: one threadgroup per row, the sum of squares reduced across it.

// rms_norm_bf16: out = bf16(w · bf16(x·rsqrt(mean(x²)+eps))), x and out [R, N].
// out may alias x: each thread writes only the elements it read, after the sum.
// launch: grid(R) group(min(256, max(32, ceil(N, 32) * 32)))
KERNEL(rms_norm_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const bf16_t, w, 1),
       BUFFER(bf16_t, out, 2),
       PARAM(int, R, 3),
       PARAM(int, N, 4),
       PARAM(float, eps, 5)) {
  GRID_WAIT();
  TG_MEM(float, partial, 32);
  if (TGID_X >= R) return;  // uniform across the threadgroup
  device const bf16_t *xr = x + (ulong)TGID_X * (ulong)N;
  device bf16_t *outr = out + (ulong)TGID_X * (ulong)N;
  float ss = 0.0f;
  for (int i = TID_X; i < N; i += TG_SIZE_X) {
    float v = bf16_to_f32(xr[i]);
    ss += v * v;
  }
  float inv = rsqrtf(tg_sum(ss, partial, LANE, SIMD_ID, SIMD_COUNT) / (float)N + eps);
  for (int i = TID_X; i < N; i += TG_SIZE_X) {
    float xhat = round_bf16(bf16_to_f32(xr[i]) * inv);
    outr[i] = f32_to_bf16(bf16_to_f32(w[i]) * xhat);
  }
}

// rms_norm_gated_bf16: y = bf16(w·bf16(x̂)) as above, out = bf16(y·silu(z)).
// launch: grid(R) group(min(256, max(32, ceil(N, 32) * 32)))
KERNEL(rms_norm_gated_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const bf16_t, z, 1),
       BUFFER(const bf16_t, w, 2),
       BUFFER(bf16_t, out, 3),
       PARAM(int, R, 4),
       PARAM(int, N, 5),
       PARAM(float, eps, 6)) {
  GRID_WAIT();
  TG_MEM(float, partial, 32);
  if (TGID_X >= R) return;
  ulong base = (ulong)TGID_X * (ulong)N;
  float ss = 0.0f;
  for (int i = TID_X; i < N; i += TG_SIZE_X) {
    float v = bf16_to_f32(x[base + i]);
    ss += v * v;
  }
  float inv = rsqrtf(tg_sum(ss, partial, LANE, SIMD_ID, SIMD_COUNT) / (float)N + eps);
  for (int i = TID_X; i < N; i += TG_SIZE_X) {
    float xhat = round_bf16(bf16_to_f32(x[base + i]) * inv);
    float y = round_bf16(bf16_to_f32(w[i]) * xhat);
    out[base + i] = f32_to_bf16(y * siluf(bf16_to_f32(z[base + i])));
  }
}

// add_rms_norm_bf16: sum = bf16(a + b), out = rms_norm(sum) exactly as
// rms_norm_bf16 computes it from the rounded sum; a, b, sum and out [R, N].
// The residual add and the next norm of the decode path in one dispatch. One
// threadgroup per row of up to ADDNORM_THREADS threads, each taking element
// pairs (N is even); the sums of its first ADDNORM_KEEP pairs stay in
// registers for the second pass, so a decode row (N = 2048: two pairs a
// thread) is read once and never re-read after its write. sum may alias a:
// each thread reads a pair of a before writing that pair of sum.
#define ADDNORM_THREADS 1024
#define ADDNORM_KEEP 4
// Where a row is whole 16-byte pieces (N a multiple of 8, every row aligned),
// a thread takes eight elements a load instead: a decode row is 256 threads of
// one piece each, 8 SIMD-groups to combine instead of 32 (ncu: the 1024-thread
// form spent 4 µs, mostly waiting on its 2-byte loads and the 32-way sum).
#define ADDNORM_KEEP8 2

// addnorm_sum_piece sets s to bf16(a + b) over piece c (eight elements),
// writes it to sum and returns its sum of squares.
INLINE float addnorm_sum_piece(device const u32x4 *a8, device const u32x4 *b8, device u32x4 *sum8, int c,
                               thread float *s) {
  u32x4 av = a8[c], bv = b8[c];
  uint aw[4] = {av.x, av.y, av.z, av.w}, bw[4] = {bv.x, bv.y, bv.z, bv.w}, sw[4];
  float ss = 0.0f;
  UNROLL for (int i = 0; i < 4; i++) {
    s[2 * i] = round_bf16(as_float(aw[i] << 16) + as_float(bw[i] << 16));
    s[2 * i + 1] = round_bf16(as_float(aw[i] & 0xffff0000u) + as_float(bw[i] & 0xffff0000u));
    sw[i] = (as_uint(s[2 * i]) >> 16) | (as_uint(s[2 * i + 1]) & 0xffff0000u);
    ss += s[2 * i] * s[2 * i] + s[2 * i + 1] * s[2 * i + 1];
  }
  sum8[c] = u32x4_make(sw[0], sw[1], sw[2], sw[3]);
  return ss;
}

// addnorm_out_piece writes out's piece c: bf16(w·bf16(s·inv)).
INLINE void addnorm_out_piece(device const u32x4 *w8, device u32x4 *out8, int c, thread const float *s, float inv) {
  u32x4 wv = w8[c];
  uint ww[4] = {wv.x, wv.y, wv.z, wv.w}, ow[4];
  UNROLL for (int i = 0; i < 4; i++) {
    float o0 = round_bf16(as_float(ww[i] << 16) * round_bf16(s[2 * i] * inv));
    float o1 = round_bf16(as_float(ww[i] & 0xffff0000u) * round_bf16(s[2 * i + 1] * inv));
    ow[i] = (as_uint(o0) >> 16) | (as_uint(o1) & 0xffff0000u);
  }
  out8[c] = u32x4_make(ow[0], ow[1], ow[2], ow[3]);
}

// add_rms_norm_octets is add_rms_norm_bf16 over 16-byte pieces of eight
// elements: the sums of a thread's first ADDNORM_KEEP8 pieces stay in
// registers for the second pass (their loops unrolled, so that every index of
// keep is a constant), later pieces are read back from sum.
INLINE void add_rms_norm_octets(device const bf16_t *a, device const bf16_t *b, device const bf16_t *w,
                                device bf16_t *sum, device bf16_t *out, int N, float eps,
                                threadgroup float *partial, int tid, int nthreads, int lane, int simd,
                                int nsimd) {
  device const u32x4 *a8 = (device const u32x4 *)a;
  device const u32x4 *b8 = (device const u32x4 *)b;
  device const u32x4 *w8 = (device const u32x4 *)w;
  device u32x4 *sum8 = (device u32x4 *)sum;
  device u32x4 *out8 = (device u32x4 *)out;
  int pieces = N / 8;
  float keep[ADDNORM_KEEP8][8];
  float ss = 0.0f;
  UNROLL for (int k = 0; k < ADDNORM_KEEP8; k++) {
    int c = tid + k * nthreads;
    if (c < pieces) ss += addnorm_sum_piece(a8, b8, sum8, c, keep[k]);
  }
  for (int c = tid + ADDNORM_KEEP8 * nthreads; c < pieces; c += nthreads) {
    float s[8];
    ss += addnorm_sum_piece(a8, b8, sum8, c, s);
  }
  float inv = rsqrtf(tg_sum(ss, partial, lane, simd, nsimd) / (float)N + eps);
  UNROLL for (int k = 0; k < ADDNORM_KEEP8; k++) {
    int c = tid + k * nthreads;
    if (c < pieces) addnorm_out_piece(w8, out8, c, keep[k], inv);
  }
  for (int c = tid + ADDNORM_KEEP8 * nthreads; c < pieces; c += nthreads) {
    u32x4 sv = sum8[c];
    uint sw[4] = {sv.x, sv.y, sv.z, sv.w};
    float s[8];
    UNROLL for (int i = 0; i < 4; i++) {
      s[2 * i] = as_float(sw[i] << 16);
      s[2 * i + 1] = as_float(sw[i] & 0xffff0000u);
    }
    addnorm_out_piece(w8, out8, c, s, inv);
  }
}

// add_rms_norm_pairs is add_rms_norm_bf16 on one row of N (even) elements,
// a thread taking element pairs: the first ADDNORM_KEEP pairs of a thread stay
// in registers (a constant index each once unrolled); the rest are read back
// from sum.
INLINE void add_rms_norm_pairs(device const bf16_t *a, device const bf16_t *b, device const bf16_t *w,
                               device bf16_t *sum, device bf16_t *out, int N, float eps,
                               threadgroup float *partial, int tid, int nthreads, int lane, int simd, int nsimd) {
  int pairs = N / 2;
  float keep[2 * ADDNORM_KEEP];
  float ss = 0.0f;
  UNROLL for (int k = 0; k < ADDNORM_KEEP; k++) {
    int p = tid + k * nthreads;
    keep[2 * k] = 0.0f;
    keep[2 * k + 1] = 0.0f;
    if (p < pairs) {
      int i = 2 * p;
      float s0 = round_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
      float s1 = round_bf16(bf16_to_f32(a[i + 1]) + bf16_to_f32(b[i + 1]));
      sum[i] = f32_to_bf16(s0);
      sum[i + 1] = f32_to_bf16(s1);
      ss += s0 * s0 + s1 * s1;
      keep[2 * k] = s0;
      keep[2 * k + 1] = s1;
    }
  }
  for (int p = tid + ADDNORM_KEEP * nthreads; p < pairs; p += nthreads) {
    int i = 2 * p;
    float s0 = round_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
    float s1 = round_bf16(bf16_to_f32(a[i + 1]) + bf16_to_f32(b[i + 1]));
    sum[i] = f32_to_bf16(s0);
    sum[i + 1] = f32_to_bf16(s1);
    ss += s0 * s0 + s1 * s1;
  }
  float inv = rsqrtf(tg_sum(ss, partial, lane, simd, nsimd) / (float)N + eps);
  UNROLL for (int k = 0; k < ADDNORM_KEEP; k++) {
    int p = tid + k * nthreads;
    if (p < pairs) {
      out[2 * p] = f32_to_bf16(bf16_to_f32(w[2 * p]) * round_bf16(keep[2 * k] * inv));
      out[2 * p + 1] = f32_to_bf16(bf16_to_f32(w[2 * p + 1]) * round_bf16(keep[2 * k + 1] * inv));
    }
  }
  for (int p = tid + ADDNORM_KEEP * nthreads; p < pairs; p += nthreads) {
    int i = 2 * p;
    out[i] = f32_to_bf16(bf16_to_f32(w[i]) * round_bf16(bf16_to_f32(sum[i]) * inv));
    out[i + 1] = f32_to_bf16(bf16_to_f32(w[i + 1]) * round_bf16(bf16_to_f32(sum[i + 1]) * inv));
  }
}

// add_rms_norm_row is add_rms_norm_bf16 on one row: in 16-byte pieces where
// N is a multiple of 8 and every pointer 16-byte aligned, in pairs otherwise
// (a checkpoint's norm weight may lie anywhere in its file).
INLINE void add_rms_norm_row(device const bf16_t *a, device const bf16_t *b, device const bf16_t *w,
                             device bf16_t *sum, device bf16_t *out, int N, float eps, threadgroup float *partial,
                             int tid, int nthreads, int lane, int simd, int nsimd) {
  if (N % 8 == 0 && ALIGNED16(a) && ALIGNED16(b) && ALIGNED16(sum) && ALIGNED16(out) && ALIGNED16(w))
    add_rms_norm_octets(a, b, w, sum, out, N, eps, partial, tid, nthreads, lane, simd, nsimd);
  else
    add_rms_norm_pairs(a, b, w, sum, out, N, eps, partial, tid, nthreads, lane, simd, nsimd);
}

// launch: grid(R) group(min(ADDNORM_THREADS, max(32, ceil(N / 8, 32) * 32)))
KERNEL(add_rms_norm_bf16,
       BUFFER(const bf16_t, a, 0),
       BUFFER(const bf16_t, b, 1),
       BUFFER(const bf16_t, w, 2),
       BUFFER(bf16_t, sum, 3),
       BUFFER(bf16_t, out, 4),
       PARAM(int, R, 5),
       PARAM(int, N, 6),
       PARAM(float, eps, 7)) {
  GRID_WAIT();
  TG_MEM(float, partial, 32);
  if (TGID_X >= R) return;  // uniform across the threadgroup
  ulong base = (ulong)TGID_X * (ulong)N;
  add_rms_norm_row(a + base, b + base, w, sum + base, out + base, N, eps, partial, TID_X, TG_SIZE_X, LANE, SIMD_ID,
                   SIMD_COUNT);
}
