// MLX affine-quantized weights read in their checkpoint layout:
//   w      u32  [rows, In*bits/32]  LSB-first bit stream of bits-wide codes
//   scales bf16 [rows, In/gs], biases bf16 [rows, In/gs]
//   W[row, j] = scales[row, j/gs]·q_j + biases[row, j/gs]   (f32, not rounded)
// In is a multiple of gs (32, 64 or 128), so a row is whole words and a 4- or
// 8-bit word never straddles two groups.

// qdot_row is Σ_j x[j]·W[row, j] for one row, reduced across the SIMD-group:
// every lane returns the sum. Lanes stride over whole words for 4 and 8 bits
// (8 or 4 codes per word, scale and bias applied once per word) and over single
// codes of the bit stream for the other widths.
INLINE float qdot_row(device const bf16_t *x, device const uint *w,
                      device const bf16_t *scales, device const bf16_t *biases,
                      int In, int bits, int gs, int lane) {
  float acc = 0.0f;
  if (bits == 4) {
    for (int wi = lane; wi < In / 8; wi += 32) {
      uint q = w[wi];
      int j = wi * 8;
      float qx = 0.0f, xs = 0.0f;
      for (int i = 0; i < 8; i++) {
        float xv = bf16_to_f32(x[j + i]);
        qx += (float)((q >> (4 * i)) & 15u) * xv;
        xs += xv;
      }
      acc += bf16_to_f32(scales[j / gs]) * qx + bf16_to_f32(biases[j / gs]) * xs;
    }
  } else if (bits == 8) {
    for (int wi = lane; wi < In / 4; wi += 32) {
      uint q = w[wi];
      int j = wi * 4;
      float qx = 0.0f, xs = 0.0f;
      for (int i = 0; i < 4; i++) {
        float xv = bf16_to_f32(x[j + i]);
        qx += (float)((q >> (8 * i)) & 255u) * xv;
        xs += xv;
      }
      acc += bf16_to_f32(scales[j / gs]) * qx + bf16_to_f32(biases[j / gs]) * xs;
    }
  } else {
    for (int j = lane; j < In; j += 32) {
      float wv = bf16_to_f32(scales[j / gs]) * (float)qcode(w, j, bits) + bf16_to_f32(biases[j / gs]);
      acc += wv * bf16_to_f32(x[j]);
    }
  }
  return simd_sum(acc);
}

// embed_dequant_bf16: out[t, j] = bf16(W[ids[t], j]); one thread per output element.
// launch: elements(T * In)
KERNEL(embed_dequant_bf16,
       BUFFER(const int, ids, 0),
       BUFFER(const uint, w, 1),
       BUFFER(const bf16_t, scales, 2),
       BUFFER(const bf16_t, biases, 3),
       BUFFER(bf16_t, out, 4),
       PARAM(int, T, 5),
       PARAM(int, In, 6),
       PARAM(int, bits, 7),
       PARAM(int, gs, 8)) {
  ulong idx = (ulong)TGID_X * (ulong)TG_SIZE_X + (ulong)TID_X;
  if (idx >= (ulong)T * (ulong)In) return;
  int t = (int)(idx / (ulong)In), j = (int)(idx % (ulong)In);
  ulong row = (ulong)ids[t];
  device const uint *wr = w + row * (ulong)(In / 32 * bits);
  int g = j / gs;
  ulong sb = row * (ulong)(In / gs) + (ulong)g;
  float v = bf16_to_f32(scales[sb]) * (float)qcode(wr, j, bits) + bf16_to_f32(biases[sb]);
  out[idx] = f32_to_bf16(v);
}

// qmatmul_bf16: out[t, o] = bf16(Σ_j x[t, j]·W[o, j]).
// One SIMD-group per output row; the grid is ceil(Out/SIMD_COUNT)·T threadgroups,
// row blocks fastest so that neighbouring threadgroups share x[t].
// launch: rows(Out, T)
KERNEL(qmatmul_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const uint, w, 1),
       BUFFER(const bf16_t, scales, 2),
       BUFFER(const bf16_t, biases, 3),
       BUFFER(bf16_t, out, 4),
       PARAM(int, T, 5),
       PARAM(int, In, 6),
       PARAM(int, Out, 7),
       PARAM(int, bits, 8),
       PARAM(int, gs, 9)) {
  int blocks = (Out + SIMD_COUNT - 1) / SIMD_COUNT;
  int t = TGID_X / blocks;
  int o = (TGID_X % blocks) * SIMD_COUNT + SIMD_ID;
  if (t >= T || o >= Out) return;  // uniform across the SIMD-group
  float acc = qdot_row(x + (ulong)t * (ulong)In, w + (ulong)o * (ulong)(In / 32 * bits),
                       scales + (ulong)o * (ulong)(In / gs), biases + (ulong)o * (ulong)(In / gs),
                       In, bits, gs, LANE);
  if (LANE == 0) out[(ulong)t * (ulong)Out + (ulong)o] = f32_to_bf16(acc);
}

// qmatmul_bf16_f32: as qmatmul_bf16 with an f32 output (logits).
// launch: rows(Out, T)
KERNEL(qmatmul_bf16_f32,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const uint, w, 1),
       BUFFER(const bf16_t, scales, 2),
       BUFFER(const bf16_t, biases, 3),
       BUFFER(float, out, 4),
       PARAM(int, T, 5),
       PARAM(int, In, 6),
       PARAM(int, Out, 7),
       PARAM(int, bits, 8),
       PARAM(int, gs, 9)) {
  int blocks = (Out + SIMD_COUNT - 1) / SIMD_COUNT;
  int t = TGID_X / blocks;
  int o = (TGID_X % blocks) * SIMD_COUNT + SIMD_ID;
  if (t >= T || o >= Out) return;
  float acc = qdot_row(x + (ulong)t * (ulong)In, w + (ulong)o * (ulong)(In / 32 * bits),
                       scales + (ulong)o * (ulong)(In / gs), biases + (ulong)o * (ulong)(In / gs),
                       In, bits, gs, LANE);
  if (LANE == 0) out[(ulong)t * (ulong)Out + (ulong)o] = acc;
}

// qmatmul_gather_bf16: out[t, s, o] = bf16(Σ_j xrow[j]·W[ids[t, s], o, j]) with
// w [E, Out, In*bits/32]; xrow is x[t, :] (xPerSlot = 0) or x[t, s, :] (xPerSlot = 1).
// Grid: ceil(Out/SIMD_COUNT)·T·K threadgroups, one SIMD-group per output row.
// launch: rows(Out, T * K)
KERNEL(qmatmul_gather_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const int, ids, 1),
       BUFFER(const uint, w, 2),
       BUFFER(const bf16_t, scales, 3),
       BUFFER(const bf16_t, biases, 4),
       BUFFER(bf16_t, out, 5),
       PARAM(int, T, 6),
       PARAM(int, K, 7),
       PARAM(int, In, 8),
       PARAM(int, Out, 9),
       PARAM(int, bits, 10),
       PARAM(int, gs, 11),
       PARAM(int, xPerSlot, 12)) {
  int blocks = (Out + SIMD_COUNT - 1) / SIMD_COUNT;
  int ts = TGID_X / blocks;  // t·K + s
  int o = (TGID_X % blocks) * SIMD_COUNT + SIMD_ID;
  if (ts >= T * K || o >= Out) return;
  ulong wrow = (ulong)ids[ts] * (ulong)Out + (ulong)o;
  int xrow = xPerSlot != 0 ? ts : ts / K;
  float acc = qdot_row(x + (ulong)xrow * (ulong)In, w + wrow * (ulong)(In / 32 * bits),
                       scales + wrow * (ulong)(In / gs), biases + wrow * (ulong)(In / gs),
                       In, bits, gs, LANE);
  if (LANE == 0) out[(ulong)ts * (ulong)Out + (ulong)o] = f32_to_bf16(acc);
}
