// The GEMVs of a decode step and of a speculative verify on the matrix units
// (switch tiled-gemv): qmatmul_bf16's product for 1 to 16 tokens for about the
// cost of one, and the experts' (moe_up_mma_bf16, moe_down_mma_bf16: an
// expert's rows times the tokens routed to it).
// quant.metal's GEMV dequantizes every weight once per token, so a verify of
// five tokens did five times a step's work (H200, 35B-A3B: 620 µs of these
// GEMVs a verify against 313 a step, 4.5× for the logits). Here a SIMD-group
// turns each weight into a matrix-unit operand once and multiplies it by all
// of the launch's tokens (the columns of an m16n8k16 product, two of them for
// up to 16 tokens).
//
// Numerics: the weights are not rounded. A 4-bit code c enters the matrix unit
// as the bf16 128 + c (exact) and x as its bf16, so every product is exact;
// a group's 64 products sum in f32 in the unit's order (s), and the group adds
// sc·s + (bi − 128·sc)·Σx to the row's f32 sum, as quant.metal's 16-byte path
// adds sc·Σ(128 + c)·x + (bi − 128·sc)·Σx. Each output element of the unit
// depends only on its row and its token's column, and a column's order does not
// depend on the other columns: a token's output is the same bits whether it is
// launched alone (a decode step) or with others (a verify). The engine test
// TestVerifyLogitsAreDecodeLogits holds the GPU to that.
//
// The weights must be 4-bit in groups of 64 or 128 (a group holds one or
// two 64-code chunks); other formats keep qmatmul_bf16.

// QMM_WARPS caps the SIMD-groups of a threadgroup, which split a 16-row
// tile's inputs QMM_IN_PER_WARP at a time (2048 inputs: 4 SIMD-groups of 512)
// and add their sums in threadgroup memory; a matrix of fewer than
// QMM_FEW_ROWS rows (the output projections' 2048), whose few tiles leave the
// GPU short of SIMD-groups, splits them QMM_FEW_IN_PER_WARP at a time (4096
// inputs: 16 of 256). H200, 35B-A3B: a decode step took 2.25 GPU ms with 512
// for every matrix, 2.28 with 256, 2.42 with 1024 (128 and 64, in an earlier
// form of the loop, were slower than 256). Asking for all of a SIMD-group's
// weight lines in L2 before its loop changed nothing (2.25).
#ifndef QMM_WARPS
#define QMM_WARPS 16
#endif
#ifndef QMM_IN_PER_WARP
#define QMM_IN_PER_WARP 512
#endif
#ifndef QMM_FEW_ROWS
#define QMM_FEW_ROWS 4096
#endif
#ifndef QMM_FEW_IN_PER_WARP
#define QMM_FEW_IN_PER_WARP 256
#endif

// qmm_16x8x16(c, a, b0, b1, lane): c += A·B for the m16n8k16 fragments of a
// SIMD-group, bf16 operands and f32 sums. Lane 4g + t holds a[0] = A[g][2t..2t+1],
// a[1] = A[g+8][2t..], a[2] = A[g][2t+8..], a[3] = A[g+8][2t+8..] (low half
// first), b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g], and c = D[g][2t], D[g][2t+1],
// D[g+8][2t], D[g+8][2t+1]. Native on CUDA sm_80 and later; elsewhere (Metal,
// the embedded compute_75 PTX) each lane gathers its rows and columns with
// shuffles and sums in a fixed order, the same for every column.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
INLINE void qmm_16x8x16(thread float *c, thread const uint *a, uint b0, uint b1, int lane) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#else
// qmm_dot2 is the f32 dot product of two bf16 pairs.
INLINE float qmm_dot2(uint a, uint b) {
  return as_float(a << 16) * as_float(b << 16) + as_float(a & 0xffff0000u) * as_float(b & 0xffff0000u);
}
INLINE void qmm_16x8x16(thread float *c, thread const uint *a, uint b0, uint b1, int lane) {
  int g = lane >> 2, t = lane & 3;
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  UNROLL for (int j = 0; j < 4; j++) {
    ushort la = (ushort)(4 * g + j), l0 = (ushort)(8 * t + j), l1 = (ushort)(8 * t + 4 + j);
    uint ra[4] = {simd_shuffle(a[0], la), simd_shuffle(a[1], la), simd_shuffle(a[2], la), simd_shuffle(a[3], la)};
    uint p0 = simd_shuffle(b0, l0), p1 = simd_shuffle(b1, l0), q0 = simd_shuffle(b0, l1), q1 = simd_shuffle(b1, l1);
    d[0] += qmm_dot2(ra[0], p0) + qmm_dot2(ra[2], p1);
    d[1] += qmm_dot2(ra[0], q0) + qmm_dot2(ra[2], q1);
    d[2] += qmm_dot2(ra[1], p0) + qmm_dot2(ra[3], p1);
    d[3] += qmm_dot2(ra[1], q0) + qmm_dot2(ra[3], q1);
  }
  UNROLL for (int i = 0; i < 4; i++) c[i] += d[i];
}
#endif

// qmm_lo / qmm_hi pair the low (high) bf16 of a with that of b, a's first.
INLINE uint qmm_lo(uint a, uint b) { return (a & 0xffffu) | (b << 16); }
INLINE uint qmm_hi(uint a, uint b) { return (a >> 16) | (b & 0xffff0000u); }

// qmm_x8 reads the eight bf16 x values at p (4-byte aligned; 16-byte pieces
// when aligned16) as four words, or zeros for a token past the launch's.
INLINE void qmm_x8(device const bf16_t *p, bool ok, bool aligned16, thread uint *v) {
  if (!ok) {
    UNROLL for (int i = 0; i < 4; i++) v[i] = 0u;
  } else if (aligned16) {
    u32x4 q = *(device const u32x4 *)p;
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
  } else {
    device const uint *pw = (device const uint *)p;
    UNROLL for (int i = 0; i < 4; i++) v[i] = pw[i];
  }
}

// QMM_LOAD_W reads a lane's share of chunk c of its two rows (qmm_sums'
// wr, sr, br): code words q[row][h] (word 4h + t of the chunk's eight; wr[row]
// is already at t) and the group's scale and bias as bf16 bits, scale | bias
// << 16 in sb[row]. A group is one chunk (gs 64, gsh 0) or two (gs 128, gsh 1).
#define QMM_LOAD_W(q, sb, c)                                                    \
  do {                                                                          \
    UNROLL for (int r_ = 0; r_ < 2; r_++) {                                     \
      q[r_][0] = wr[r_][8 * (c)];                                               \
      q[r_][1] = wr[r_][8 * (c) + 4];                                           \
      sb[r_] = (uint)sr[r_][(c) >> gsh] | ((uint)br[r_][(c) >> gsh] << 16);     \
    }                                                                           \
  } while (0)

// qmm_chunk adds chunk c's products to a lane's sums acc (qmm_sums_x): the
// lane's code words q[row][h] with their scale and bias sb[row] (QMM_LOAD_W),
// times the x rows at xr0 and xr1 (its columns g and 8 + g, already at 8t;
// ok0, ok1 false past the tile's tokens) for the first ntiles eights of
// columns.
INLINE void qmm_chunk(thread const uint (*q)[2], thread const uint *sb, device const bf16_t *xr0,
                      device const bf16_t *xr1, bool ok0, bool ok1, bool aligned16, int ntiles, int c, int lane,
                      thread float (*acc)[4]) {
  const uint ones[4] = {0x3f803f80u, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u};  // bf16 1.0 pairs
  uint a[2][8];  // row r's code pairs: pair i of word h at 4h + i
  float sc[2], bo[2];
  UNROLL for (int r = 0; r < 2; r++) {
    UNROLL for (int h = 0; h < 2; h++)
      for (int i = 0; i < 4; i++) a[r][4 * h + i] = ((q[r][h] >> (4u * (uint)i)) & 0x000f000fu) | 0x43004300u;
    sc[r] = as_float(sb[r] << 16);
    bo[r] = as_float(sb[r] & 0xffff0000u) - 128.0f * sc[r];
  }
  UNROLL for (int n = 0; n < 2; n++) {
    if (n >= ntiles) continue;
    device const bf16_t *xr = n == 0 ? xr0 : xr1;
    bool ok = n == 0 ? ok0 : ok1;
    uint xv[8];
    qmm_x8(xr + 64 * c, ok, aligned16, xv);
    qmm_x8(xr + 64 * c + 32, ok, aligned16, xv + 4);
    uint b[8];  // x pairs as the code pairs: x_i with x_{i+4} of each eight
    UNROLL for (int h = 0; h < 2; h++) {
      b[4 * h] = qmm_lo(xv[4 * h], xv[4 * h + 2]);
      b[4 * h + 1] = qmm_hi(xv[4 * h], xv[4 * h + 2]);
      b[4 * h + 2] = qmm_lo(xv[4 * h + 1], xv[4 * h + 3]);
      b[4 * h + 3] = qmm_hi(xv[4 * h + 1], xv[4 * h + 3]);
    }
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f}, xs[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    UNROLL for (int k = 0; k < 4; k++) {
      uint ak[4] = {a[0][2 * k], a[1][2 * k], a[0][2 * k + 1], a[1][2 * k + 1]};
      qmm_16x8x16(s, ak, b[2 * k], b[2 * k + 1], lane);
      qmm_16x8x16(xs, ones, b[2 * k], b[2 * k + 1], lane);
    }
    // xs[0] and xs[1]: Σx of the chunk for tokens 2t and 2t + 1 (xs[2], xs[3] repeat them).
    acc[n][0] += sc[0] * s[0] + bo[0] * xs[0];
    acc[n][1] += sc[0] * s[1] + bo[0] * xs[1];
    acc[n][2] += sc[1] * s[2] + bo[1] * xs[0];
    acc[n][3] += sc[1] * s[3] + bo[1] * xs[1];
  }
}

// qmm_sums_x computes a SIMD-group's share of one threadgroup's tile: rows
// o..o+15 (those below Out) for up to 16 columns, over the 64-input chunks
// [c0, c1), and writes its f32 sums to part[nt][row][col] (column 8·nt + col),
// 256 floats. Lane 4g + t gives the x rows of its columns g and 8 + g: x0 and
// x1, with ok0 and ok1 false for a column past the tile's tokens (its row is
// read anyway, and its sums are zeros); ntiles (1 or 2) is how many eights of
// columns hold tokens.
//
// Lane 4g + t takes rows o + g and o + g + 8. In a chunk it holds words t and
// t + 4 of each row's eight (codes 8t..8t+7 and 32+8t..32+8t+7) and, for its
// column's token, the x values under them. The fragments pair code i of a word
// with code i + 4 (a mask and an or turn both into bf16 128 + code) and x
// likewise; the matrix unit sums over k in any pairing both operands share.
// Σx of each column comes from the unit too, as the product of a matrix of
// ones: every lane gets its columns' sums without shuffles. The next chunk's
// codes, scales and biases are read a chunk ahead (reading two or four at
// once lost: docs/history/pruned-paths.md); x, which every threadgroup
// reads, is in cache.
INLINE void qmm_sums_x(device const bf16_t *x0, device const bf16_t *x1, bool ok0, bool ok1, int ntiles,
                       device const uint *w, device const bf16_t *scales, device const bf16_t *biases, int o, int In,
                       int Out, int gs, int c0, int c1, int lane, threadgroup float *part) {
  int g = lane >> 2, t = lane & 3, gsh = gs == 128 ? 1 : 0;
  device const uint *wr[2];
  device const bf16_t *sr[2], *br[2];
  UNROLL for (int r = 0; r < 2; r++) {
    // Rows past Out repeat the last row: read, never stored.
    ulong row = (ulong)imin(o + g + 8 * r, Out - 1);
    wr[r] = w + row * (ulong)(In / 8) + (ulong)t;
    sr[r] = scales + row * (ulong)(In / gs);
    br[r] = biases + row * (ulong)(In / gs);
  }
  float acc[2][4];
  UNROLL for (int n = 0; n < 2; n++)
    for (int i = 0; i < 4; i++) acc[n][i] = 0.0f;
  device const bf16_t *xr0 = x0 + 8 * t, *xr1 = x1 + 8 * t;
  uint q[2][2], sb[2];
  if (c0 < c1) QMM_LOAD_W(q, sb, c0);
  GRID_WAIT();  // the first weights are in flight; x is the previous kernel's
  bool aligned16 = ALIGNED16(x0) && ALIGNED16(x1);
  for (int c = c0; c < c1; c++) {
    uint qn[2][2], sbn[2];
    if (c + 1 < c1) QMM_LOAD_W(qn, sbn, c + 1);
    qmm_chunk(q, sb, xr0, xr1, ok0, ok1, aligned16, ntiles, c, lane, acc);
    UNROLL for (int r = 0; r < 2; r++) {
      q[r][0] = qn[r][0];
      q[r][1] = qn[r][1];
      sb[r] = sbn[r];
    }
  }
  UNROLL for (int n = 0; n < 2; n++)
    for (int i = 0; i < 4; i++) part[(n * 16 + g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = acc[n][i];
}

// qmm_sums is qmm_sums_x for tokens t0..t0+15 (those below T) of x [T, In]:
// column col is token t0 + col.
INLINE void qmm_sums(device const bf16_t *x, device const uint *w, device const bf16_t *scales,
                     device const bf16_t *biases, int T, int t0, int o, int In, int Out, int gs, int c0, int c1,
                     int lane, threadgroup float *part) {
  int g = lane >> 2, tok0 = t0 + g, tok1 = t0 + 8 + g;
  qmm_sums_x(x + (ulong)imin(tok0, T - 1) * (ulong)In, x + (ulong)imin(tok1, T - 1) * (ulong)In, tok0 < T, tok1 < T,
             imin(2, (T - t0 + 7) / 8), w, scales, biases, o, In, Out, gs, c0, c1, lane, part);
}

// qmm_tile_at runs qmm_sums in every SIMD-group of the threadgroup (SIMD-group
// simd of nsimd), each on its share of the chunks, for the tile at rows o and
// tokens t0.., into part (256 floats a SIMD-group).
INLINE void qmm_tile_at(device const bf16_t *x, device const uint *w, device const bf16_t *scales,
                        device const bf16_t *biases, int T, int t0, int o, int In, int Out, int gs,
                        threadgroup float *part, int simd, int nsimd, int lane) {
  int chunks = In / 64, per = (chunks + nsimd - 1) / nsimd;
  int c0 = imin(chunks, simd * per), c1 = imin(chunks, c0 + per);
  qmm_sums(x, w, scales, biases, T, t0, o, In, Out, gs, c0, c1, lane, part + simd * 256);
}

// qmm_tile runs threadgroup tg's tile (tokens vary fastest in the grid, as in
// qmatmul_bf16) and returns its first row; *t0 is its first token.
INLINE int qmm_tile(device const bf16_t *x, device const uint *w, device const bf16_t *scales,
                    device const bf16_t *biases, int T, int In, int Out, int gs, threadgroup float *part,
                    int tg, int simd, int nsimd, int lane, thread int *t0) {
  int tokGroups = (T + 15) / 16;
  *t0 = (tg % tokGroups) * 16;
  int o = (tg / tokGroups) * 16;
  qmm_tile_at(x, w, scales, biases, T, *t0, o, In, Out, gs, part, simd, nsimd, lane);
  BARRIER();
  return o;
}

// qmm_total is output i of a tile (row i % 16, token i / 16 of the tile's):
// the SIMD-groups' sums added in order.
INLINE float qmm_total(threadgroup const float *part, int i, int nsimd) {
  int r = i % 16, col = i / 16;
  float total = 0.0f;
  for (int s = 0; s < nsimd; s++) total += part[s * 256 + ((col / 8) * 16 + r) * 8 + col % 8];
  return total;
}

// qmatmul_mma_bf16: qmatmul_bf16 on the matrix units (see the top of the file).
// launch: grid(ceil(Out, 16) * ceil(T, 16)) group(min(QMM_WARPS, max(1, In / (QMM_FEW_IN_PER_WARP + (QMM_IN_PER_WARP - QMM_FEW_IN_PER_WARP) * min(1, Out / QMM_FEW_ROWS)))) * 32)
// requires: bits <= 4
// requires: 4 <= bits
// requires: 64 <= gs
// requires: gs <= 128
// requires: gs - gs / 64 * 64 <= 0
KERNEL(qmatmul_mma_bf16,
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
  TG_MEM(float, part, QMM_WARPS * 256);
  int t0, o = qmm_tile(x, w, scales, biases, T, In, Out, gs, part, TGID_X, SIMD_ID, SIMD_COUNT, LANE, &t0);
  for (int i = TID_X; i < 16 * imin(16, T - t0); i += TG_SIZE_X) {  // the tile's tokens only
    int row = o + i % 16, tok = t0 + i / 16;
    if (row < Out) out[(ulong)tok * (ulong)Out + (ulong)row] = f32_to_bf16(qmm_total(part, i, SIMD_COUNT));
  }
}

// qmatmul_mma_bf16_f32: qmatmul_bf16_f32 (the logits) on the matrix units.
// launch: grid(ceil(Out, 16) * ceil(T, 16)) group(min(QMM_WARPS, max(1, In / (QMM_FEW_IN_PER_WARP + (QMM_IN_PER_WARP - QMM_FEW_IN_PER_WARP) * min(1, Out / QMM_FEW_ROWS)))) * 32)
// requires: bits <= 4
// requires: 4 <= bits
// requires: 64 <= gs
// requires: gs <= 128
// requires: gs - gs / 64 * 64 <= 0
KERNEL(qmatmul_mma_bf16_f32,
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
  TG_MEM(float, part, QMM_WARPS * 256);
  int t0, o = qmm_tile(x, w, scales, biases, T, In, Out, gs, part, TGID_X, SIMD_ID, SIMD_COUNT, LANE, &t0);
  for (int i = TID_X; i < 16 * imin(16, T - t0); i += TG_SIZE_X) {  // the tile's tokens only
    int row = o + i % 16, tok = t0 + i / 16;
    if (row < Out) out[(ulong)tok * (ulong)Out + (ulong)row] = qmm_total(part, i, SIMD_COUNT);
  }
}

// qmm_multi runs threadgroup tg's tile of the four matrices' tiles (in order,
// ceil(OutI, 16) each; tokens vary fastest) and returns its matrix; *o and *t0
// are its first row and token, *nsum how many SIMD-groups' sums part holds
// (qmm_total). A matrix the matrix units do not take (not 4-bit in groups of
// 64 or 128: the MoE router's 8 bits) gets whole dot products instead, one
// (row, token) a SIMD-group in turn, through quant.metal's qmv_rows_w over all
// of In: the same order for any number of tokens as well.
INLINE qslot qmm_multi(device const bf16_t *x, device const uint *w0, device const bf16_t *scales0,
                       device const bf16_t *biases0, device bf16_t *out0, device const uint *w1,
                       device const bf16_t *scales1, device const bf16_t *biases1, device bf16_t *out1,
                       device const uint *w2, device const bf16_t *scales2, device const bf16_t *biases2,
                       device bf16_t *out2, device const uint *w3, device const bf16_t *scales3,
                       device const bf16_t *biases3, device bf16_t *out3, int T, int In, int Out0, int Out1, int Out2,
                       int Out3, int fmt0, int fmt1, int fmt2, int fmt3, threadgroup float *part, int tg, int simd,
                       int nsimd, int lane, thread int *o, thread int *t0, thread int *nsum) {
  int tokGroups = (T + 15) / 16, local = 0;
  *t0 = (tg % tokGroups) * 16;
  qslot q = qslot_of(tg / tokGroups, (Out0 + 15) / 16, (Out1 + 15) / 16, (Out2 + 15) / 16, w0, scales0, biases0, out0,
                     w1, scales1, biases1, out1, w2, scales2, biases2, out2, w3, scales3, biases3, out3, Out0, Out1,
                     Out2, Out3, fmt0, fmt1, fmt2, fmt3, &local);
  *o = local * 16;
  if (q.bits == 4 && (q.gs == 64 || q.gs == 128)) {
    qmm_tile_at(x, q.w, q.scales, q.biases, T, *t0, *o, In, q.Out, q.gs, part, simd, nsimd, lane);
    *nsum = nsimd;
  } else {
    GRID_WAIT();
    ulong wstride = (ulong)(In / 32 * q.bits), sstride = (ulong)(In / q.gs);
    for (int i = simd; i < 16 * imin(16, T - *t0); i += nsimd) {
      int r = i % 16, col = i / 16;
      ulong row = (ulong)imin(*o + r, q.Out - 1);
      float acc[QMV_ROWS];
      qmv_rows_w(x + (ulong)(*t0 + col) * (ulong)In, q.w + row * wstride, q.scales + row * sstride,
                 q.biases + row * sstride, 1, In, q.bits, q.gs, lane, 0, 1, 32, acc);
      if (lane == 0) part[((col / 8) * 16 + r) * 8 + col % 8] = acc[0];
    }
    *nsum = 1;
  }
  BARRIER();
  return q;
}

// qmatmul_mma_multi_bf16: qmatmul_multi_bf16 on the matrix units (qmm_multi):
// up to four matrices over one x, each 4-bit matrix in groups of 64 or 128 as
// qmatmul_mma_bf16 computes it.
// launch: grid(((Out0 + 15) / 16 + (Out1 + 15) / 16 + (Out2 + 15) / 16 + (Out3 + 15) / 16) * ceil(T, 16)) group(min(QMM_WARPS, max(1, In / QMM_IN_PER_WARP)) * 32)
KERNEL(qmatmul_mma_multi_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const uint, w0, 1),
       BUFFER(const bf16_t, scales0, 2),
       BUFFER(const bf16_t, biases0, 3),
       BUFFER(bf16_t, out0, 4),
       BUFFER(const uint, w1, 5),
       BUFFER(const bf16_t, scales1, 6),
       BUFFER(const bf16_t, biases1, 7),
       BUFFER(bf16_t, out1, 8),
       BUFFER(const uint, w2, 9),
       BUFFER(const bf16_t, scales2, 10),
       BUFFER(const bf16_t, biases2, 11),
       BUFFER(bf16_t, out2, 12),
       BUFFER(const uint, w3, 13),
       BUFFER(const bf16_t, scales3, 14),
       BUFFER(const bf16_t, biases3, 15),
       BUFFER(bf16_t, out3, 16),
       PARAM(int, T, 17),
       PARAM(int, In, 18),
       PARAM(int, Out0, 19),
       PARAM(int, Out1, 20),
       PARAM(int, Out2, 21),
       PARAM(int, Out3, 22),
       PARAM(int, fmt0, 23),
       PARAM(int, fmt1, 24),
       PARAM(int, fmt2, 25),
       PARAM(int, fmt3, 26)) {
  TG_MEM(float, part, QMM_WARPS * 256);
  int o, t0, nsum;
  qslot q = qmm_multi(x, w0, scales0, biases0, out0, w1, scales1, biases1, out1, w2, scales2, biases2, out2, w3,
                      scales3, biases3, out3, T, In, Out0, Out1, Out2, Out3, fmt0, fmt1, fmt2, fmt3, part, TGID_X,
                      SIMD_ID, SIMD_COUNT, LANE, &o, &t0, &nsum);
  for (int i = TID_X; i < 16 * imin(16, T - t0); i += TG_SIZE_X) {
    int row = o + i % 16, tok = t0 + i / 16;
    if (row < q.Out) q.out[(ulong)tok * (ulong)q.Out + (ulong)row] = f32_to_bf16(qmm_total(part, i, nsum));
  }
}

// qmm_store writes a tile's outputs (rows o.. of q's matrix, T tokens) from
// its SIMD-groups' sums part, as qmatmul_mma_multi_bf16 stores them.
INLINE void qmm_store(qslot q, threadgroup const float *part, int o, int T, int nsum, int tid, int threads) {
  for (int i = tid; i < 16 * T; i += threads) {
    int row = o + i % 16, tok = i / 16;
    if (row < q.Out) q.out[(ulong)tok * (ulong)q.Out + (ulong)row] = f32_to_bf16(qmm_total(part, i, nsum));
  }
}

// qmm_conv_rows runs channel row (the tile's column c) through the conv for
// the tile's tokens t0..t1−1 in order, from window [K−1, Out0] (advanced):
// each token's projection into raw0 [T, Out0], its conv step's output into
// out0 [T, Out0] (conv_silu_step).
INLINE void qmm_conv_rows(threadgroup const float *part, int nsum, int c, int row, int t0, int t1, int Out0, int K,
                          device bf16_t *window, device const bf16_t *conv_w, device bf16_t *raw0,
                          device bf16_t *out0) {
  for (int tok = t0; tok < t1; tok++) {
    float v = qmm_total(part, c + 16 * tok, nsum);
    raw0[(ulong)tok * (ulong)Out0 + (ulong)row] = f32_to_bf16(v);
    conv_silu_step(v, row, Out0, K, window, conv_w, out0 + (ulong)tok * (ulong)Out0);
  }
}

// qmatmul_mma_multi_conv_bf16: qmatmul_multi_conv_bf16 on the matrix units,
// for up to 16 tokens: qmatmul_mma_multi_bf16, matrix 0's channels through
// the conv step (conv_silu_step) token after token instead of stored. A
// threadgroup holds a channel's projection for every token (one tile of
// columns), so the thread of channel c runs its window through them in order;
// raw0 [T, Out0] gets the projections as qmatmul_mma_multi_bf16 would store
// them (a speculative verify's record, replayed after a partial accept). Each
// token's sums are qmm_sums_x's, alone or beside others, and its conv step is
// a decode step's: a verify gives a step's bits.
// launch: grid(((Out0 + 15) / 16 + (Out1 + 15) / 16 + (Out2 + 15) / 16 + (Out3 + 15) / 16) * ceil(T, 16)) group(min(QMM_WARPS, max(1, In / QMM_IN_PER_WARP)) * 32)
// requires: K <= CONV_MAX_K
KERNEL(qmatmul_mma_multi_conv_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const uint, w0, 1),
       BUFFER(const bf16_t, scales0, 2),
       BUFFER(const bf16_t, biases0, 3),
       BUFFER(bf16_t, out0, 4),
       BUFFER(const uint, w1, 5),
       BUFFER(const bf16_t, scales1, 6),
       BUFFER(const bf16_t, biases1, 7),
       BUFFER(bf16_t, out1, 8),
       BUFFER(const uint, w2, 9),
       BUFFER(const bf16_t, scales2, 10),
       BUFFER(const bf16_t, biases2, 11),
       BUFFER(bf16_t, out2, 12),
       BUFFER(const uint, w3, 13),
       BUFFER(const bf16_t, scales3, 14),
       BUFFER(const bf16_t, biases3, 15),
       BUFFER(bf16_t, out3, 16),
       BUFFER(bf16_t, conv_state, 17),
       BUFFER(const bf16_t, conv_w, 18),
       BUFFER(bf16_t, raw0, 19),
       PARAM(int, T, 20),
       PARAM(int, In, 21),
       PARAM(int, Out0, 22),
       PARAM(int, Out1, 23),
       PARAM(int, Out2, 24),
       PARAM(int, Out3, 25),
       PARAM(int, fmt0, 26),
       PARAM(int, fmt1, 27),
       PARAM(int, fmt2, 28),
       PARAM(int, fmt3, 29),
       PARAM(int, K, 30)) {
  TG_MEM(float, part, QMM_WARPS * 256);
  if (T > 16) return;  // one tile of tokens (ops checks it): a token's conv needs the one before
  int o, t0, nsum;
  qslot q = qmm_multi(x, w0, scales0, biases0, out0, w1, scales1, biases1, out1, w2, scales2, biases2, out2, w3,
                      scales3, biases3, out3, T, In, Out0, Out1, Out2, Out3, fmt0, fmt1, fmt2, fmt3, part, TGID_X,
                      SIMD_ID, SIMD_COUNT, LANE, &o, &t0, &nsum);
  if (TGID_X >= (Out0 + 15) / 16) {  // not matrix 0: as qmatmul_mma_multi_bf16
    qmm_store(q, part, o, T, nsum, TID_X, TG_SIZE_X);
    return;
  }
  int row = o + TID_X;  // channel row's thread walks the tokens in order
  if (TID_X >= 16 || row >= Out0) return;
  qmm_conv_rows(part, nsum, TID_X, row, 0, T, Out0, K, conv_state, conv_w, raw0, out0);
}

// qmatmul_mma_multi_conv_batch_bf16: qmatmul_mma_multi_conv_bf16 over a
// batched step's rows, each sequence's rows through the conv window of its
// slot: runs i32 [S, 3] (slot, first row, rows) cover the launch's T rows in
// order, every row a pooled sequence's (ops checks it); slot s's window
// [K−1, Out0] lies s·stride elements past windows (slot 0's). A thread of
// channel c walks a run's rows in order as the lone kernel walks a verify's
// tokens, through the run's window, the runs spread over the threadgroup:
// a row's projection sums are qmm_sums_x's and its conv step its lone
// step's, so its bits are those of its sequence alone. The matrices' formats come two a scalar (fmt01 =
// fmt0 | fmt1 << 16; fmt = bits + 256·gs < 2^16): Metal's 31 arguments.
// launch: grid(((Out0 + 15) / 16 + (Out1 + 15) / 16 + (Out2 + 15) / 16 + (Out3 + 15) / 16) * ceil(T, 16)) group(min(QMM_WARPS, max(1, In / QMM_IN_PER_WARP)) * 32)
// requires: K <= CONV_MAX_K
KERNEL(qmatmul_mma_multi_conv_batch_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const uint, w0, 1),
       BUFFER(const bf16_t, scales0, 2),
       BUFFER(const bf16_t, biases0, 3),
       BUFFER(bf16_t, out0, 4),
       BUFFER(const uint, w1, 5),
       BUFFER(const bf16_t, scales1, 6),
       BUFFER(const bf16_t, biases1, 7),
       BUFFER(bf16_t, out1, 8),
       BUFFER(const uint, w2, 9),
       BUFFER(const bf16_t, scales2, 10),
       BUFFER(const bf16_t, biases2, 11),
       BUFFER(bf16_t, out2, 12),
       BUFFER(const uint, w3, 13),
       BUFFER(const bf16_t, scales3, 14),
       BUFFER(const bf16_t, biases3, 15),
       BUFFER(bf16_t, out3, 16),
       BUFFER(bf16_t, windows, 17),
       BUFFER(const bf16_t, conv_w, 18),
       BUFFER(bf16_t, raw0, 19),
       BUFFER(const int, runs, 20),
       PARAM(int, T, 21),
       PARAM(int, In, 22),
       PARAM(int, Out0, 23),
       PARAM(int, Out1, 24),
       PARAM(int, Out2, 25),
       PARAM(int, Out3, 26),
       PARAM(int, fmt01, 27),
       PARAM(int, fmt23, 28),
       PARAM(int, K, 29),
       PARAM(int, stride, 30)) {
  TG_MEM(float, part, QMM_WARPS * 256);
  if (T > 16) return;  // one tile of rows (ops checks it): a sequence's conv needs its row before
  int o, t0, nsum;
  qslot q = qmm_multi(x, w0, scales0, biases0, out0, w1, scales1, biases1, out1, w2, scales2, biases2, out2, w3,
                      scales3, biases3, out3, T, In, Out0, Out1, Out2, Out3, fmt01 & 0xffff, fmt01 >> 16,
                      fmt23 & 0xffff, fmt23 >> 16, part, TGID_X, SIMD_ID, SIMD_COUNT, LANE, &o, &t0, &nsum);
  if (TGID_X >= (Out0 + 15) / 16) {  // not matrix 0: as qmatmul_mma_multi_bf16
    qmm_store(q, part, o, T, nsum, TID_X, TG_SIZE_X);
    return;
  }
  // The threads of a run and channel: 16 channels × TG_SIZE_X / 16 runs at
  // a time (8 for In = 2048), each run's rows in order through its own
  // slot's window. Runs are apart (a slot each), so walking them at once
  // keeps every row's bits and spares a step of 8 replies 8 conv steps in
  // a row (the serial walk lost to conv1d_silu_batch_bf16 at 8 replies).
  int c = TID_X % 16, row = o + c, lanes = TG_SIZE_X / 16, me = TID_X / 16;
  if (row >= Out0) return;
  for (int r = 0, t = 0; t < T; r++) {  // run r: its rows t.., through its slot's window
    int n = runs[3 * r + 2];
    if (r % lanes == me)
      qmm_conv_rows(part, nsum, c, row, t, t + n, Out0, K, windows + (ulong)runs[3 * r] * (ulong)stride, conv_w, raw0,
                    out0);
    t += n;
  }
}

// MOE_MMA_IN_PER_WARP is the input width a SIMD-group of moe_up_mma_bf16
// takes of its matrix (the gate's or the up's 16 rows): 2048 inputs are four
// SIMD-groups a matrix, eight a threadgroup.
#ifndef MOE_MMA_IN_PER_WARP
#define MOE_MMA_IN_PER_WARP 512
#endif
#ifndef MOE_UP_ONE
#define MOE_UP_ONE 1
#endif

// moe_up_mma_bf16: moe_up_bf16 on the matrix units (switch tiled-gemv): a
// tile of 16 rows of an expert's gate and the same 16 of its up, times the
// launch's tokens routed to that expert, up to 16 of them (the columns), with
// qmm_sums_x's numerics: a token's output does not depend on which tokens
// share its tile or where, so a verify's bits are a step's. The first
// ceil(Is, 16)·ceil(T, 16) threadgroups take the shared expert's rows for 16
// tokens each; routed threadgroup g (counted after them) is slot ts =
// g / ceil(Out, 16)'s, for row tile g % ceil(Out, 16); it returns at once
// unless ts is the first, in slot order, of its 16 slots with its expert
// (ranks 0, 16, ... among them), whose threadgroup takes them all: an
// expert's rows are read once for every 16 tokens routed to it. The first
// half of the SIMD-groups sums the gate, the second the up, each splitting In
// alike whatever the tokens.
// launch: grid(ceil(Out, 16) * T * K + ceil(Is, 16) * ceil(T, 16)) group(2 * min(QMM_WARPS / 2, max(1, In / MOE_MMA_IN_PER_WARP)) * 32)
// requires: bits <= 4
// requires: 4 <= bits
// requires: 64 <= gs
// requires: gs <= 128
// requires: gs - gs / 64 * 64 <= 0
KERNEL(moe_up_mma_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const int, ids, 1),
       BUFFER(const uint, gate_w, 2),
       BUFFER(const bf16_t, gate_scales, 3),
       BUFFER(const bf16_t, gate_biases, 4),
       BUFFER(const uint, up_w, 5),
       BUFFER(const bf16_t, up_scales, 6),
       BUFFER(const bf16_t, up_biases, 7),
       BUFFER(bf16_t, out, 8),
       BUFFER(const uint, shared_gate_w, 9),
       BUFFER(const bf16_t, shared_gate_scales, 10),
       BUFFER(const bf16_t, shared_gate_biases, 11),
       BUFFER(const uint, shared_up_w, 12),
       BUFFER(const bf16_t, shared_up_scales, 13),
       BUFFER(const bf16_t, shared_up_biases, 14),
       BUFFER(bf16_t, hs, 15),
       PARAM(int, T, 16),
       PARAM(int, K, 17),
       PARAM(int, In, 18),
       PARAM(int, Out, 19),
       PARAM(int, Is, 20),
       PARAM(int, bits, 21),
       PARAM(int, gs, 22)) {
  TG_MEM(float, part, QMM_WARPS * 256);
  TG_MEM(int, members, 16);  // column j's slot (routed) or token (shared)
  int blocks = (Out + 15) / 16, slots = T * K, lane = LANE;
  // The shared expert's threadgroups come first: they never return early, so
  // they take the GPU beside the first routed slots' instead of after the
  // early returns of a verify's repeated experts.
  int sgroups = (Is + 15) / 16 * ((T + 15) / 16);
  bool routed = TGID_X >= sgroups;
  int rg = TGID_X - sgroups;  // the routed threadgroup's index
  int n, o, rows, xdiv, lead = 0;
  ulong stride;  // an output row's length: Out (routed slots) or Is (shared)
  device const uint *gw, *uw;
  device const bf16_t *gsc, *gbi, *usc, *ubi;
  device bf16_t *dst;
  if (routed) {
    int ts = rg / blocks;
    o = (rg % blocks) * 16;
    GRID_WAIT();  // the router's ids
    // The slots with ts's expert, 32 at a time by a ballot: rank counts those
    // before ts; those from ts on are this threadgroup's columns in order.
    int e = ids[ts], rank = 0, count = 0;
    for (int base = 0; base < slots; base += 32) {
      int i = base + lane;
      bool same = i < slots && ids[i] == e;
      uint m = simd_ballot_bits(same);
      int below = ts - base;  // lanes of this chunk before slot ts
      uint before = below >= 32 ? 0xffffffffu : (below <= 0 ? 0u : (1u << below) - 1u);
      uint from = m & ~before;
      int col = count + popcount_u32(from & ((1u << lane) - 1u));
      if (SIMD_ID == 0 && same && i >= ts && col < 16) members[col] = i;
      rank += popcount_u32(m & before);
      count += popcount_u32(from);
    }
    if (rank % 16 != 0) return;  // uniform: an earlier slot's threadgroup takes this one
    n = imin(16, count);
    lead = ts;
    rows = Out;
    stride = (ulong)Out;
    xdiv = K;
    ulong mat = (ulong)e * (ulong)Out;
    gw = gate_w + mat * (ulong)(In / 8);
    uw = up_w + mat * (ulong)(In / 8);
    gsc = gate_scales + mat * (ulong)(In / gs);
    gbi = gate_biases + mat * (ulong)(In / gs);
    usc = up_scales + mat * (ulong)(In / gs);
    ubi = up_biases + mat * (ulong)(In / gs);
    dst = out;
  } else {
    int sblocks = (Is + 15) / 16, u = TGID_X;
    int t0 = u / sblocks * 16;
    o = (u % sblocks) * 16;
    if (t0 >= T) return;  // uniform across the threadgroup
    n = imin(16, T - t0);
    if (SIMD_ID == 0 && lane < 16) members[lane] = t0 + lane;
    rows = Is;
    stride = (ulong)Is;
    xdiv = 1;
    gw = shared_gate_w;
    uw = shared_up_w;
    gsc = shared_gate_scales;
    gbi = shared_gate_biases;
    usc = shared_up_scales;
    ubi = shared_up_biases;
    dst = hs;
  }
  // A routed slot alone with its expert (a decode step's every slot) is its
  // tile's one column: every SIMD-group knows it without members.
  bool alone = MOE_UP_ONE != 0 && routed && n == 1;
  if (!alone) BARRIER();  // members
  int nsplit = SIMD_COUNT / 2, mat = SIMD_ID < nsplit ? 0 : 1, sub = SIMD_ID - mat * nsplit;
  int chunks = In / 64, per = (chunks + nsplit - 1) / nsplit;
  int c0 = imin(chunks, sub * per), c1 = imin(chunks, c0 + per);
  int g = lane >> 2;
  int m0 = alone ? lead : members[imin(g, n - 1)], m1 = alone ? lead : members[imin(8 + g, n - 1)];
  qmm_sums_x(x + (ulong)(m0 / xdiv) * (ulong)In, x + (ulong)(m1 / xdiv) * (ulong)In, g < n, 8 + g < n, (n + 7) / 8,
             mat == 0 ? gw : uw, mat == 0 ? gsc : usc, mat == 0 ? gbi : ubi, o, In, rows, gs, c0, c1, lane,
             part + SIMD_ID * 256);
  BARRIER();
  for (int i = TID_X; i < 16 * n; i += TG_SIZE_X) {
    int r = i % 16;
    if (o + r >= rows) continue;
    float gt = qmm_total(part, i, nsplit), ut = qmm_total(part + nsplit * 256, i, nsplit);
    int m = alone ? lead : members[i / 16];
    dst[(ulong)m * stride + (ulong)(o + r)] = f32_to_bf16(siluf(round_bf16(gt)) * round_bf16(ut));
  }
}

// moe_down_mma_bf16's bounds: T·K slots (a verify of 16 tokens, 8 experts
// each), T tokens, K + 1 teams of SIMD-groups.
#define MOE_DOWN_MMA_SLOTS 128
#define MOE_DOWN_MMA_TOKENS 16
#define MOE_DOWN_MMA_WARPS 9
// MOE_DOWN_MMA_SPLIT is how many SIMD-groups (a team) share an item's
// inputs: a decode step's 128 threadgroups, one item a team, keep that many
// times the weight reads in flight.
#ifndef MOE_DOWN_MMA_SPLIT
#define MOE_DOWN_MMA_SPLIT 2
#endif
#ifndef MOE_DOWN_ONE
#define MOE_DOWN_ONE 1
#endif
// Its K + 1 = 9 teams of two are 576 threads, which the shuffled product of
// the compute_75 PTX would give more than 113 registers each: the bound has
// the compiler keep the launch possible (sm_90's matrix units need 74).
#define KERNEL_BOUNDS_moe_down_mma_bf16 BOUNDS(MOE_DOWN_MMA_WARPS * MOE_DOWN_MMA_SPLIT * 32, 1)

// moe_down_mma_bf16: moe_down_bf16 on the matrix units (switch tiled-gemv),
// the same buffers and sums (ids_early as there; halves unused). Threadgroup
// g takes output rows 16g..16g+15 of every token. Its items are the routed
// experts' tiles, one for each 16 slots with one expert (in slot order; the
// slot of rank 0, 16, ... among them leads), and the shared expert's, one for
// each 16 tokens; team s of MOE_DOWN_MMA_SPLIT SIMD-groups takes items s,
// s + K + 1, ..., each a 16-row tile of its matrix times its slots' h rows (or
// tokens' hs rows) as columns, its SIMD-groups splitting the inputs alike
// whatever the tokens (qmm_sums_x: a column's sums do not depend on the
// others). The sums, one per slot and row, then combine per token as
// moe_down_bf16's do: a token's output has the same bits alone (a decode
// step) as in a verify.
// launch: grid(ceil(H, 16)) group((K + 1) * MOE_DOWN_MMA_SPLIT * 32)
// requires: K + 1 <= MOE_DOWN_MMA_WARPS
// requires: T <= MOE_DOWN_MMA_TOKENS
// requires: T * K <= MOE_DOWN_MMA_SLOTS
// requires: bits <= 4
// requires: 4 <= bits
// requires: 64 <= gs
// requires: gs <= 128
// requires: gs - gs / 64 * 64 <= 0
// requires: shared_bits <= 4
// requires: 4 <= shared_bits
// requires: 64 <= shared_gs
// requires: shared_gs <= 128
// requires: shared_gs - shared_gs / 64 * 64 <= 0
KERNEL(moe_down_mma_bf16,
       BUFFER(const bf16_t, h, 0),
       BUFFER(const int, ids, 1),
       BUFFER(const bf16_t, weights, 2),
       BUFFER(const uint, w, 3),
       BUFFER(const bf16_t, scales, 4),
       BUFFER(const bf16_t, biases, 5),
       BUFFER(const bf16_t, hs, 6),
       BUFFER(const uint, shared_w, 7),
       BUFFER(const bf16_t, shared_scales, 8),
       BUFFER(const bf16_t, shared_biases, 9),
       BUFFER(const bf16_t, gate, 10),
       BUFFER(bf16_t, out, 11),
       PARAM(int, T, 12),
       PARAM(int, K, 13),
       PARAM(int, H, 14),
       PARAM(int, I, 15),
       PARAM(int, Is, 16),
       PARAM(int, bits, 17),
       PARAM(int, gs, 18),
       PARAM(int, shared_bits, 19),
       PARAM(int, shared_gs, 20),
       PARAM(int, ids_early, 21),
       PARAM(int, halves, 22)) {
  TG_MEM(float, part, MOE_DOWN_MMA_WARPS * MOE_DOWN_MMA_SPLIT * 256);  // a SIMD-group's tile sums
  TG_MEM(float, ys, (MOE_DOWN_MMA_SLOTS + MOE_DOWN_MMA_TOKENS) * 16);  // [slot, then slots + token][row]
  TG_MEM(short, members, MOE_DOWN_MMA_SLOTS * 16);                  // [routed item][column]: its slots
  TG_MEM(short, rank, MOE_DOWN_MMA_SLOTS);                          // a slot's rank among its expert's
  TG_MEM(short, lead, MOE_DOWN_MMA_SLOTS);                          // a routed item's first slot
  TG_MEM(short, cols, MOE_DOWN_MMA_SLOTS);                          // a routed item's columns
  TG_MEM(int, nrouted, 1);
  if (ids_early == 0) GRID_WAIT();
  int o = TGID_X * 16, slots = T * K;
  if (o >= H) return;  // uniform across the threadgroup
  // A decode step's K slots (T 1) whose experts differ, as a router's top K
  // do, are K items of a column each, slot s item s: every SIMD-group sees so
  // from the ids alone, and the ranks, members and leads below, two barriers'
  // worth, are skipped (MOE_DOWN_ONE 0 keeps them; the items are the same).
  bool one = false;
  if (MOE_DOWN_ONE != 0 && T == 1) {
    uint e = LANE < K ? (uint)ids[LANE] : 0xffffffffu - (uint)LANE;  // past K: unlike any id
    bool dup = false;
    for (int j = 0; j < K; j++) {
      uint ej = simd_shuffle(e, (ushort)j);
      dup = dup || (j < LANE && ej == e);
    }
    one = simd_ballot_bits(dup) == 0u;
  }
  if (!one) {
    for (int i = TID_X; i < slots; i += TG_SIZE_X) {
      int e = ids[i], r = 0;
      for (int j = 0; j < i; j++) r += ids[j] == e ? 1 : 0;
      rank[i] = (short)r;
    }
    BARRIER();
    // Routed items in order of their first slots; each slot's column in its item.
    for (int i = TID_X; i < slots; i += TG_SIZE_X) {
      int e = ids[i], r = rank[i], first = i;
      for (int j = i; j >= 0; j--) {  // the item's first slot: expert e's of rank r - r % 16
        if (ids[j] == e && rank[j] == r - r % 16) first = j;
      }
      int it = 0;
      for (int j = 0; j < first; j++) it += rank[j] % 16 == 0 ? 1 : 0;
      members[it * 16 + r % 16] = (short)i;
      if (first == i) {
        int later = 0;
        for (int j = i; j < slots; j++) later += ids[j] == e ? 1 : 0;
        lead[it] = (short)i;
        cols[it] = (short)imin(16, later);
      }
    }
    if (TID_X == 0) {
      int n = 0;
      for (int j = 0; j < slots; j++) n += rank[j] % 16 == 0 ? 1 : 0;
      nrouted[0] = n;
    }
    BARRIER();
  }
  int nr = one ? K : nrouted[0], items = nr + (T + 15) / 16, lane = LANE, g = lane >> 2;
  int team = SIMD_ID / MOE_DOWN_MMA_SPLIT, sub = SIMD_ID % MOE_DOWN_MMA_SPLIT, teams = SIMD_COUNT / MOE_DOWN_MMA_SPLIT;
  threadgroup float *mine = part + SIMD_ID * 256;
  // Rounds of one item a team, alike for every thread (the team's sums meet
  // in threadgroup memory between barriers).
  for (int pass = 0; pass * teams < items; pass++) {
    int it = pass * teams + team, n = 0, t0 = (it - nr) * 16;
    bool routed = it < nr;
    if (it < items) {
      int a, b;
      device const bf16_t *x0, *x1, *sc, *bi;
      device const uint *wb;
      int in, group;
      if (routed) {
        n = one ? 1 : (int)cols[it];
        a = one ? it : (int)members[it * 16 + imin(g, n - 1)];
        b = one ? it : (int)members[it * 16 + imin(8 + g, n - 1)];
        x0 = h + (ulong)a * (ulong)I;
        x1 = h + (ulong)b * (ulong)I;
        ulong mat = (ulong)ids[one ? it : (int)lead[it]] * (ulong)H;
        in = I;
        group = gs;
        wb = w + mat * (ulong)(I / 8);
        sc = scales + mat * (ulong)(I / gs);
        bi = biases + mat * (ulong)(I / gs);
      } else {
        n = imin(16, T - t0);
        x0 = hs + (ulong)(t0 + imin(g, n - 1)) * (ulong)Is;
        x1 = hs + (ulong)(t0 + imin(8 + g, n - 1)) * (ulong)Is;
        in = Is;
        group = shared_gs;
        wb = shared_w;
        sc = shared_scales;
        bi = shared_biases;
      }
      int chunks = in / 64, per = (chunks + MOE_DOWN_MMA_SPLIT - 1) / MOE_DOWN_MMA_SPLIT;
      int c0 = imin(chunks, sub * per), c1 = imin(chunks, c0 + per);
      qmm_sums_x(x0, x1, g < n, 8 + g < n, (n + 7) / 8, wb, sc, bi, o, in, H, group, c0, c1, lane, mine);
    }
    BARRIER();
    if (sub == 0) {
      for (int i = lane; i < 16 * n; i += 32) {
        int r = i % 16, col = i / 16;
        int dst = routed ? (one ? it : (int)members[it * 16 + col]) : slots + t0 + col;
        float v = 0.0f;
        for (int s = 0; s < MOE_DOWN_MMA_SPLIT; s++) v += mine[s * 256 + ((col / 8) * 16 + r) * 8 + col % 8];
        ys[dst * 16 + r] = v;
      }
    }
    BARRIER();  // part is the next round's
  }
  GRID_WAIT();  // weights and gate (for a SIMD-group without items)
  BARRIER();
  for (int i = TID_X; i < 16 * T; i += TG_SIZE_X) {
    int t = i / 16, r = i % 16;
    if (o + r >= H) continue;
    float routed = 0.0f;
    for (int k = 0; k < K; k++) routed += bf16_to_f32(weights[t * K + k]) * round_bf16(ys[(t * K + k) * 16 + r]);
    float shared = round_bf16(ys[(slots + t) * 16 + r]);
    float gg = sigmoidf(bf16_to_f32(gate[t]));
    out[(ulong)t * (ulong)H + (ulong)(o + r)] = f32_to_bf16(round_bf16(routed) + gg * shared);
  }
}
