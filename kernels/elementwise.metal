// Elementwise kernels: one thread per output element, 1-D grid of
// ceil(n/TG_SIZE_X) threadgroups.

#define ELEMENT_INDEX ((ulong)TGID_X * (ulong)TG_SIZE_X + (ulong)TID_X)

// sigmoid_mul_bf16: out = bf16(x·σ(gate)).
// launch: elements(N)
KERNEL(sigmoid_mul_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const bf16_t, gate, 1),
       BUFFER(bf16_t, out, 2),
       PARAM(int, N, 3)) {
  GRID_WAIT();
  ulong i = ELEMENT_INDEX;
  if (i >= (ulong)N) return;
  out[i] = f32_to_bf16(bf16_to_f32(x[i]) * sigmoidf(bf16_to_f32(gate[i])));
}

// add_bf16: out = bf16(a + b); out may alias a.
// launch: elements(N)
KERNEL(add_bf16,
       BUFFER(const bf16_t, a, 0),
       BUFFER(const bf16_t, b, 1),
       BUFFER(bf16_t, out, 2),
       PARAM(int, N, 3)) {
  GRID_WAIT();
  ulong i = ELEMENT_INDEX;
  if (i >= (ulong)N) return;
  out[i] = f32_to_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
}

// swiglu_bf16: out = bf16(silu(gate)·up).
// launch: elements(N)
KERNEL(swiglu_bf16,
       BUFFER(const bf16_t, gate, 0),
       BUFFER(const bf16_t, up, 1),
       BUFFER(bf16_t, out, 2),
       PARAM(int, N, 3)) {
  GRID_WAIT();
  ulong i = ELEMENT_INDEX;
  if (i >= (ulong)N) return;
  out[i] = f32_to_bf16(siluf(bf16_to_f32(gate[i])) * bf16_to_f32(up[i]));
}

// add_sigmoid_scaled_bf16: out[t, :] = bf16(x[t, :] + σ(gate[t])·y[t, :]), [T, H].
// launch: elements(T * H)
KERNEL(add_sigmoid_scaled_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const bf16_t, y, 1),
       BUFFER(const bf16_t, gate, 2),
       BUFFER(bf16_t, out, 3),
       PARAM(int, T, 4),
       PARAM(int, H, 5)) {
  GRID_WAIT();
  ulong i = ELEMENT_INDEX;
  if (i >= (ulong)T * (ulong)H) return;
  float g = sigmoidf(bf16_to_f32(gate[i / (ulong)H]));
  out[i] = f32_to_bf16(bf16_to_f32(x[i]) + g * bf16_to_f32(y[i]));
}

// split_qgate_bf16: src [T, H, 2D] → q, gate [T, H, D]: per head the first D
// values are the query, the last D its gate.
// launch: elements(T * H * D)
KERNEL(split_qgate_bf16,
       BUFFER(const bf16_t, src, 0),
       BUFFER(bf16_t, q, 1),
       BUFFER(bf16_t, gate, 2),
       PARAM(int, T, 3),
       PARAM(int, H, 4),
       PARAM(int, D, 5)) {
  GRID_WAIT();
  ulong i = ELEMENT_INDEX;
  if (i >= (ulong)T * (ulong)H * (ulong)D) return;
  ulong row = i / (ulong)D, d = i % (ulong)D;
  q[i] = src[row * 2 * (ulong)D + d];
  gate[i] = src[row * 2 * (ulong)D + (ulong)D + d];
}

// moe_combine_bf16: out[t, h] = bf16(Σ_s weights[t, s]·y[t, s, h]), s in order.
// launch: elements(T * H)
KERNEL(moe_combine_bf16,
       BUFFER(const bf16_t, y, 0),
       BUFFER(const bf16_t, weights, 1),
       BUFFER(bf16_t, out, 2),
       PARAM(int, T, 3),
       PARAM(int, K, 4),
       PARAM(int, H, 5)) {
  GRID_WAIT();
  ulong i = ELEMENT_INDEX;
  if (i >= (ulong)T * (ulong)H) return;
  ulong t = i / (ulong)H, h = i % (ulong)H;
  float acc = 0.0f;
  for (int s = 0; s < K; s++) {
    ulong ts = t * (ulong)K + (ulong)s;
    acc += bf16_to_f32(weights[ts]) * bf16_to_f32(y[ts * (ulong)H + h]);
  }
  out[i] = f32_to_bf16(acc);
}

// copy_u32: dst = src, N words: a cache snapshot taken and restored on the
// device, in stream order, without a host copy.
// launch: elements(N)
KERNEL(copy_u32,
       BUFFER(const uint, src, 0),
       BUFFER(uint, dst, 1),
       PARAM(int, N, 2)) {
  GRID_WAIT();
  ulong i = ELEMENT_INDEX;
  if (i >= (ulong)N) return;
  dst[i] = src[i];
}

// copy_u32x4: copy_u32 in 16-byte pieces, src and dst 16-byte aligned (the
// host knows their offsets; Metal cannot test a pointer's): a thread moves
// four words, the last thread any tail. The 35B-A3B's GDN states (64 MB, a
// speculative verify's snapshot) took copy_u32 77.5 µs on the H200.
// launch: elements(ceil(N, 4))
KERNEL(copy_u32x4,
       BUFFER(const uint, src, 0),
       BUFFER(uint, dst, 1),
       PARAM(int, N, 2)) {
  GRID_WAIT();
  ulong i = ELEMENT_INDEX;
  ulong w = i * 4;
  if (w >= (ulong)N) return;
  if (w + 4 <= (ulong)N) {
    ((device u32x4 *)dst)[i] = ((device const u32x4 *)src)[i];
    return;
  }
  for (ulong j = w; j < (ulong)N; j++) dst[j] = src[j];
}

// fill_u32: dst = value, N words (zeroing a cache's states on the device).
// launch: elements(N)
KERNEL(fill_u32,
       BUFFER(uint, dst, 0),
       PARAM(int, N, 1),
       PARAM(int, value, 2)) {
  GRID_WAIT();
  ulong i = ELEMENT_INDEX;
  if (i >= (ulong)N) return;
  dst[i] = (uint)value;
}
