// Helpers shared by every kernel, written in the portable dialect. Assembled
// after the backend's prelude and before the kernel files.

// PDL_TRIGGER 1: on CUDA, GRID_WAIT lets the next kernel launch early
// (prelude_cuda.h); 0 (BAGEL_KERNEL_TUNING=PDL_TRIGGER=0) keeps it waiting for
// this kernel's blocks to exit. Metal ignores it.
#ifndef PDL_TRIGGER
#define PDL_TRIGGER 1
#endif

// bf16 is carried as its 16-bit pattern; these match backend.BF16ToF32 and
// backend.F32ToBF16 (round to nearest even, NaN stays NaN) bit for bit.
INLINE float bf16_to_f32(bf16_t v) { return as_float(((uint)v) << 16); }

INLINE bf16_t f32_to_bf16(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (bf16_t)((u >> 16) | 0x40u);
#ifdef CVT_BF16
  return cvt_rn_bf16(f);  // the device's rounding: the same bits (prelude_cuda.h)
#else
  u += 0x7fffu + ((u >> 16) & 1u);
  return (bf16_t)(u >> 16);
#endif
}

// round_bf16 is f rounded through bf16: the value a bf16 tensor would hold.
// Where the device rounds (CVT_BF16) a NaN stays a NaN with another payload:
// a value computed on, never stored as it is.
#ifdef CVT_BF16
INLINE float round_bf16(float f) { return bf16_to_f32(cvt_rn_bf16(f)); }
#else
INLINE float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }
#endif

INLINE float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
INLINE float siluf(float x) { return x * sigmoidf(x); }

INLINE int imin(int a, int b) { return a < b ? a : b; }
INLINE int imax(int a, int b) { return a > b ? a : b; }

// tg_sum is the sum of v over the threadgroup; every thread gets the same value.
// partial holds one float per SIMD-group (at most 32). The first barrier lets
// a kernel call tg_sum twice in a row with the same partial array.
INLINE float tg_sum(float v, threadgroup float *partial, int lane, int simd, int nsimd) {
  v = simd_sum(v);
  BARRIER();
  if (lane == 0) partial[simd] = v;
  BARRIER();
  float total = 0.0f;
  for (int i = 0; i < nsimd; i++) total += partial[i];
  return total;
}

// qcode is code j of a row's LSB-first bit stream of bits-wide codes; a 3-, 5- or
// 6-bit code may continue in the next word.
INLINE uint qcode(device const uint *row, int j, int bits) {
  uint bit = (uint)j * (uint)bits;
  uint word = bit >> 5, shift = bit & 31u;
  uint q = row[word] >> shift;
  if (shift + (uint)bits > 32u) q |= row[word + 1] << (32u - shift);
  return q & ((1u << bits) - 1u);
}

// code_f is the 4- or 8-bit code at bit shift of q as a float, exactly: the
// exponent trick (0x4B000000 | q is 2^23 + q) is cheaper than a conversion.
INLINE float code_f(uint q, uint shift, uint mask) {
  return as_float(((q >> shift) & mask) | 0x4B000000u) - 8388608.0f;
}

// qslot is one of the (up to) four matrices of a multi-matrix launch
// (qmatmul_multi_bf16, qgemm_multi_bf16): its weights, output, rows (0: an
// unused slot), bits and group size.
struct qslot {
  device const uint *w;
  device const bf16_t *scales;
  device const bf16_t *biases;
  device bf16_t *out;
  int Out, bits, gs;
};

// A multi-matrix launch passes each matrix's bits and group size as one
// scalar, fmt = bits + 256·gs (ops.QLinear.format): Metal takes at most 31
// buffer and scalar arguments, and a launch of four matrices has 17 buffers.
INLINE int qfmt_bits(int fmt) { return fmt & 255; }
INLINE int qfmt_gs(int fmt) { return fmt >> 8; }

// qslot_of finds block b among the blocks of four matrices, in order, of n0,
// n1, n2 (and the rest) blocks: it returns the matrix and sets *local to b's
// index within it.
INLINE qslot qslot_of(int b, int n0, int n1, int n2, device const uint *w0, device const bf16_t *scales0,
                      device const bf16_t *biases0, device bf16_t *out0, device const uint *w1,
                      device const bf16_t *scales1, device const bf16_t *biases1, device bf16_t *out1,
                      device const uint *w2, device const bf16_t *scales2, device const bf16_t *biases2,
                      device bf16_t *out2, device const uint *w3, device const bf16_t *scales3,
                      device const bf16_t *biases3, device bf16_t *out3, int Out0, int Out1, int Out2, int Out3,
                      int fmt0, int fmt1, int fmt2, int fmt3, thread int *local) {
  qslot q;
  int fmt;
  if (b < n0) {
    q.w = w0; q.scales = scales0; q.biases = biases0; q.out = out0; q.Out = Out0; fmt = fmt0;
    *local = b;
  } else if (b < n0 + n1) {
    q.w = w1; q.scales = scales1; q.biases = biases1; q.out = out1; q.Out = Out1; fmt = fmt1;
    *local = b - n0;
  } else if (b < n0 + n1 + n2) {
    q.w = w2; q.scales = scales2; q.biases = biases2; q.out = out2; q.Out = Out2; fmt = fmt2;
    *local = b - n0 - n1;
  } else {
    q.w = w3; q.scales = scales3; q.biases = biases3; q.out = out3; q.Out = Out3; fmt = fmt3;
    *local = b - n0 - n1 - n2;
  }
  q.bits = qfmt_bits(fmt);
  q.gs = qfmt_gs(fmt);
  return q;
}

// ---- The matrix units' shared-memory helpers (CUDA sm_80+) -------------------
// Used by qgemm.metal's tiles and gdn.metal's chunked rule.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// smem_u32 is the shared-window address of a threadgroup pointer.
INLINE uint smem_u32(threadgroup const bf16_t *p) {
  uint a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// ldsm_x4_at loads four 8×8 bf16 matrices from the shared-window address
// of the lane's row (ldmatrix.x4).
INLINE void ldsm_x4_at(uint addr, thread uint *r) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// cvt_bf16x2 is a and b rounded to bf16 (nearest even), a in the low half.
INLINE uint cvt_bf16x2(float a, float b) {
  uint v;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(v) : "f"(b), "f"(a));
  return v;
}
#endif
