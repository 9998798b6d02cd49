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
// launch: grid(R) group(min(ADDNORM_THREADS, max(32, ceil(N / 2, 32) * 32)))
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
  int pairs = N / 2;
  float keep[2 * ADDNORM_KEEP];
  float ss = 0.0f;
  // The first ADDNORM_KEEP pairs of this thread stay in registers (a constant
  // index each once unrolled); the rest are read back from sum.
  UNROLL for (int k = 0; k < ADDNORM_KEEP; k++) {
    int p = TID_X + k * TG_SIZE_X;
    keep[2 * k] = 0.0f;
    keep[2 * k + 1] = 0.0f;
    if (p < pairs) {
      ulong i = base + 2 * (ulong)p;
      float s0 = round_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
      float s1 = round_bf16(bf16_to_f32(a[i + 1]) + bf16_to_f32(b[i + 1]));
      sum[i] = f32_to_bf16(s0);
      sum[i + 1] = f32_to_bf16(s1);
      ss += s0 * s0 + s1 * s1;
      keep[2 * k] = s0;
      keep[2 * k + 1] = s1;
    }
  }
  for (int p = TID_X + ADDNORM_KEEP * TG_SIZE_X; p < pairs; p += TG_SIZE_X) {
    ulong i = base + 2 * (ulong)p;
    float s0 = round_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
    float s1 = round_bf16(bf16_to_f32(a[i + 1]) + bf16_to_f32(b[i + 1]));
    sum[i] = f32_to_bf16(s0);
    sum[i + 1] = f32_to_bf16(s1);
    ss += s0 * s0 + s1 * s1;
  }
  float inv = rsqrtf(tg_sum(ss, partial, LANE, SIMD_ID, SIMD_COUNT) / (float)N + eps);
  UNROLL for (int k = 0; k < ADDNORM_KEEP; k++) {
    int p = TID_X + k * TG_SIZE_X;
    if (p < pairs) {
      ulong i = base + 2 * (ulong)p;
      out[i] = f32_to_bf16(bf16_to_f32(w[2 * p]) * round_bf16(keep[2 * k] * inv));
      out[i + 1] = f32_to_bf16(bf16_to_f32(w[2 * p + 1]) * round_bf16(keep[2 * k + 1] * inv));
    }
  }
  for (int p = TID_X + ADDNORM_KEEP * TG_SIZE_X; p < pairs; p += TG_SIZE_X) {
    ulong i = base + 2 * (ulong)p;
    out[i] = f32_to_bf16(bf16_to_f32(w[2 * p]) * round_bf16(bf16_to_f32(sum[i]) * inv));
    out[i + 1] = f32_to_bf16(bf16_to_f32(w[2 * p + 1]) * round_bf16(bf16_to_f32(sum[i + 1]) * inv));
  }
}
