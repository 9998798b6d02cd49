// RMSNorm: one threadgroup per row, the sum of squares reduced across it.

// rms_norm_bf16: out = bf16(w · bf16(x·rsqrt(mean(x²)+eps))), x and out [R, N].
// out may alias x: each thread writes only the elements it read, after the sum.
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
