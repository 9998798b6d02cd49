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
// The residual add and the next norm of the decode path in one dispatch, which
// reads the row once instead of three times. sum may alias a: each thread reads
// a[i] before writing sum[i], and reads back only the sums it wrote.
// launch: grid(R) group(min(256, max(32, ceil(N, 32) * 32)))
KERNEL(add_rms_norm_bf16,
       BUFFER(const bf16_t, a, 0),
       BUFFER(const bf16_t, b, 1),
       BUFFER(const bf16_t, w, 2),
       BUFFER(bf16_t, sum, 3),
       BUFFER(bf16_t, out, 4),
       PARAM(int, R, 5),
       PARAM(int, N, 6),
       PARAM(float, eps, 7)) {
  TG_MEM(float, partial, 32);
  if (TGID_X >= R) return;  // uniform across the threadgroup
  ulong base = (ulong)TGID_X * (ulong)N;
  float ss = 0.0f;
  for (int i = TID_X; i < N; i += TG_SIZE_X) {
    float s = round_bf16(bf16_to_f32(a[base + i]) + bf16_to_f32(b[base + i]));
    sum[base + i] = f32_to_bf16(s);
    ss += s * s;
  }
  float inv = rsqrtf(tg_sum(ss, partial, LANE, SIMD_ID, SIMD_COUNT) / (float)N + eps);
  for (int i = TID_X; i < N; i += TG_SIZE_X) {
    float xhat = round_bf16(bf16_to_f32(sum[base + i]) * inv);
    out[base + i] = f32_to_bf16(bf16_to_f32(w[i]) * xhat);
  }
}
