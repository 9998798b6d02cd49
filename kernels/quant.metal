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
      UNROLL for (int i = 0; i < 8; i++) {
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
      UNROLL for (int i = 0; i < 4; i++) {
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
// An id of −1 (the device's pick of a row of logits that is not finite,
// whose reply the host then ends) reads row 0: a step the decode pipelines
// launched on such a pick before the host read it stays inside the table.
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
  GRID_WAIT();
  ulong idx = (ulong)TGID_X * (ulong)TG_SIZE_X + (ulong)TID_X;
  if (idx >= (ulong)T * (ulong)In) return;
  int t = (int)(idx / (ulong)In), j = (int)(idx % (ulong)In);
  int id = ids[t];
  ulong row = (ulong)(id < 0 ? 0 : id);
  device const uint *wr = w + row * (ulong)(In / 32 * bits);
  int g = j / gs;
  ulong sb = row * (ulong)(In / gs) + (ulong)g;
  float v = bf16_to_f32(scales[sb]) * (float)qcode(wr, j, bits) + bf16_to_f32(biases[sb]);
  out[idx] = f32_to_bf16(v);
}

// The matrix-vector kernels give each threadgroup QMV_ROWS consecutive output
// rows and split the input width In among its QMV_SPLIT SIMD-groups, whose
// partial sums meet in threadgroup memory: a matrix of few rows (a router, the
// 32-row b/a projections, a 512-row expert) still spreads over many
// SIMD-groups, and every SIMD-group has little to walk. Within its slice a lane
// reads 16-byte pieces (four words: 32 codes at 4 bits, 16 at 8) of all its
// rows at once, with the x values under them: one x slice serves every row,
// and the rows' loads are independent, so QMV_ROWS 512-byte loads per
// SIMD-group are in flight together; 16-byte loads move four times the bytes
// of word loads per instruction, which is what lets a GEMV of a 2048-wide
// matrix stream at the memory's rate. Where the weights or x are not 16-byte
// aligned (a checkpoint's odd offsets; Metal, see ALIGNED16) lanes read single
// words instead. Scale and bias apply once per piece or word. Codes become
// floats through the exponent trick (0x4B000000 | q is 2^23 + q), which is
// exact and cheaper than an integer conversion. Other widths read codes one at
// a time in the first SIMD-group. A row of few pieces gets fewer SIMD-groups
// (the launch gives min(QMV_SPLIT, In·bits/4096) of them, at least one), so
// that few lanes idle: a 2048-wide 4-bit row is 64 pieces, two SIMD-groups of
// one piece per lane. x must be 4-byte aligned (ops checks it).
#ifndef QMV_ROWS
#define QMV_ROWS 4
#endif
#ifndef QMV_SPLIT
#define QMV_SPLIT 4
#endif
// QMV_SPLIT_MANY is QMV_SPLIT for a launch of more than one token (a
// speculative verify, a short prompt): its T threadgroups a row block already
// spread the work, so fewer SIMD-groups each may pay (at most QMV_SPLIT, whose
// threadgroup memory the combine uses).
#ifndef QMV_SPLIT_MANY
#define QMV_SPLIT_MANY 4
#endif
// QMV_WORDS 1 keeps the word-by-word path everywhere (A/B runs through
// BAGEL_KERNEL_TUNING=QMV_WORDS=1).
#ifndef QMV_WORDS
#define QMV_WORDS 0
#endif

// qmv_piece loads piece c (16 bytes) of each of the nrows rows of w4 (stride
// pieces apart) into q, zeros for missing rows or past end.
INLINE void qmv_piece(device const u32x4 *w4, ulong stride, int nrows, int c, int end, thread uint (*q)[4]) {
  UNROLL for (int r = 0; r < QMV_ROWS; r++) {
    u32x4 v = r < nrows && c < end ? w4[(ulong)r * stride + (ulong)c] : u32x4_zero();
    q[r][0] = v.x;
    q[r][1] = v.y;
    q[r][2] = v.z;
    q[r][3] = v.w;
  }
}

// qmv_piece_sb loads the scale and bias of group g (in a row of sstride
// groups) of rows 0..QMV_ROWS-1 at scales and biases into s and b: rows past
// nrows take row nrows - 1's, and a g below 0 (a lane with no piece) zeros.
// All at once, beside the piece's codes: loaded row by row after the sums,
// behind a branch each, they cost a kernel four round trips to memory one
// after another (moe_up_bf16).
INLINE void qmv_piece_sb(device const bf16_t *scales, device const bf16_t *biases, ulong sstride, int nrows, int g,
                         thread bf16_t *s, thread bf16_t *b) {
  UNROLL for (int r = 0; r < QMV_ROWS; r++) {
    ulong at = (ulong)imin(r, nrows - 1) * sstride + (ulong)g;
    s[r] = g >= 0 ? scales[at] : (bf16_t)0;
    b[r] = g >= 0 ? biases[at] : (bf16_t)0;
  }
}

// qmv_rows_w sets acc[r] = Σ_j x[j]·W[row r, j] over this slice of the words,
// for the nrows (≤ QMV_ROWS) rows at w, scales, biases, summed across the
// width lanes that share them (32: the SIMD-group; 16: each half of it, lane
// 0..15 within its half, for rows of few pieces): every lane gets its rows'
// every sum. A width of 16 needs 4- or 8-bit codes.
INLINE void qmv_rows_w(device const bf16_t *x, device const uint *w, device const bf16_t *scales,
                       device const bf16_t *biases, int nrows, int In, int bits, int gs, int lane,
                       int split, int nsplit, int width, thread float *acc) {
  ulong wstride = (ulong)(In / 32 * bits), sstride = (ulong)(In / gs);
  UNROLL for (int r = 0; r < QMV_ROWS; r++) acc[r] = 0.0f;
  device const uint *xw = (device const uint *)x;
  bool wide = QMV_WORDS == 0 && (wstride & 3ul) == 0ul && ALIGNED16(w) && ALIGNED16(x);
  if (bits == 4 && wide) {
    // 16-byte pieces: a lane reads four words (32 codes) of each row and the
    // 32 x values under them; a piece never straddles a group (gs >= 32).
    // x is unpacked two values at a time, which keeps the registers (and so
    // the threadgroups resident per core) where the weights' latency wants them.
    device const u32x4 *w4 = (device const u32x4 *)w;
    device const u32x4 *x4 = (device const u32x4 *)x;
    int pieces = In / 32, per = (pieces + nsplit - 1) / nsplit;
    int end = imin(pieces, (split + 1) * per);
    int c = split * per + lane;
    uint q[QMV_ROWS][4];
    qmv_piece(w4, wstride / 4, nrows, c, end, q);
    GRID_WAIT();  // the weights are in flight; x is the previous kernel's
    for (; c < end; c += width) {
      // Two sums a row, of the even and the odd inputs: independent FMA
      // chains, and each code a byte of a masked word (one byte permute to a
      // float of 128 + code, one FMA), where a pair of codes took eight
      // instructions.
      float qe[QMV_ROWS], qo[QMV_ROWS];
      UNROLL for (int r = 0; r < QMV_ROWS; r++) {
        qe[r] = 0.0f;
        qo[r] = 0.0f;
      }
      float xs = 0.0f;
      UNROLL for (int k = 0; k < 4; k++) {
        u32x4 xq = x4[4 * c + k];
        uint xk[4] = {xq.x, xq.y, xq.z, xq.w};
        float xv[8];
        UNROLL for (int i = 0; i < 4; i++) {
          xv[2 * i] = as_float(xk[i] << 16);
          xv[2 * i + 1] = as_float(xk[i] & 0xffff0000u);
          xs += xv[2 * i] + xv[2 * i + 1];
        }
        // Input 2i of the word is byte i of its low nibbles, 2i + 1 byte i of its high ones.
        UNROLL for (int r = 0; r < QMV_ROWS; r++) {
          uint lo = q[r][k] & 0x0f0f0f0fu, hi = (q[r][k] >> 4) & 0x0f0f0f0fu;
          UNROLL for (int i = 0; i < 4; i++) {
            qe[r] = fmaf(byte_f128(lo, i), xv[2 * i], qe[r]);
            qo[r] = fmaf(byte_f128(hi, i), xv[2 * i + 1], qo[r]);
          }
        }
      }
      int g = c * 32 / gs;
      UNROLL for (int r = 0; r < QMV_ROWS; r++) {
        if (r < nrows) {
          // qe + qo hold Σ x·(128 + code): the 128s fold into the bias.
          float sc = bf16_to_f32(scales[(ulong)r * sstride + (ulong)g]);
          acc[r] += sc * (qe[r] + qo[r]) + (bf16_to_f32(biases[(ulong)r * sstride + (ulong)g]) - 128.0f * sc) * xs;
        }
      }
      qmv_piece(w4, wstride / 4, nrows, c + width, end, q);
    }
  } else if (bits == 8 && wide) {
    // 16-byte pieces of 16 codes, as above.
    device const u32x4 *w4 = (device const u32x4 *)w;
    device const u32x4 *x4 = (device const u32x4 *)x;
    int pieces = In / 16, per = (pieces + nsplit - 1) / nsplit;
    int end = imin(pieces, (split + 1) * per);
    int c = split * per + lane;
    uint q[QMV_ROWS][4];
    qmv_piece(w4, wstride / 4, nrows, c, end, q);
    GRID_WAIT();
    for (; c < end; c += width) {
      float qe[QMV_ROWS], qo[QMV_ROWS];  // two FMA chains a row, as in the 4-bit loop
      UNROLL for (int r = 0; r < QMV_ROWS; r++) {
        qe[r] = 0.0f;
        qo[r] = 0.0f;
      }
      float xs = 0.0f;
      UNROLL for (int k = 0; k < 2; k++) {
        u32x4 xq = x4[2 * c + k];
        uint xk[4] = {xq.x, xq.y, xq.z, xq.w};
        UNROLL for (int i = 0; i < 4; i++) {
          float x0 = as_float(xk[i] << 16), x1 = as_float(xk[i] & 0xffff0000u);
          xs += x0 + x1;
          // x values 8k + 2i and 8k + 2i + 1 are bytes 2(i%2) and 2(i%2) + 1 of word 2k + i/2.
          UNROLL for (int r = 0; r < QMV_ROWS; r++) {
            qe[r] = fmaf(code_f(q[r][2 * k + i / 2], 16u * (uint)(i % 2), 255u), x0, qe[r]);
            qo[r] = fmaf(code_f(q[r][2 * k + i / 2], 16u * (uint)(i % 2) + 8u, 255u), x1, qo[r]);
          }
        }
      }
      int g = c * 16 / gs;
      UNROLL for (int r = 0; r < QMV_ROWS; r++) {
        if (r < nrows)
          acc[r] += bf16_to_f32(scales[(ulong)r * sstride + (ulong)g]) * (qe[r] + qo[r]) +
                    bf16_to_f32(biases[(ulong)r * sstride + (ulong)g]) * xs;
      }
      qmv_piece(w4, wstride / 4, nrows, c + width, end, q);
    }
  } else if (bits == 4) {
    GRID_WAIT();
    int words = In / 8, per = (words + nsplit - 1) / nsplit;
    int end = imin(words, (split + 1) * per);
    for (int wi = split * per + lane; wi < end; wi += width) {
      uint x01 = xw[4 * wi], x23 = xw[4 * wi + 1], x45 = xw[4 * wi + 2], x67 = xw[4 * wi + 3];
      float xv[8] = {as_float(x01 << 16), as_float(x01 & 0xffff0000u), as_float(x23 << 16),
                     as_float(x23 & 0xffff0000u), as_float(x45 << 16), as_float(x45 & 0xffff0000u),
                     as_float(x67 << 16), as_float(x67 & 0xffff0000u)};
      float xs = ((xv[0] + xv[1]) + (xv[2] + xv[3])) + ((xv[4] + xv[5]) + (xv[6] + xv[7]));
      int g = wi * 8 / gs;
      UNROLL for (int r = 0; r < QMV_ROWS; r++) {
        if (r >= nrows) continue;
        uint q = w[(ulong)r * wstride + (ulong)wi];
        float qx = 0.0f;
        UNROLL for (int i = 0; i < 8; i++) qx += code_f(q, 4u * (uint)i, 15u) * xv[i];
        acc[r] += bf16_to_f32(scales[(ulong)r * sstride + (ulong)g]) * qx +
                  bf16_to_f32(biases[(ulong)r * sstride + (ulong)g]) * xs;
      }
    }
  } else if (bits == 8) {
    GRID_WAIT();
    int words = In / 4, per = (words + nsplit - 1) / nsplit;
    int end = imin(words, (split + 1) * per);
    for (int wi = split * per + lane; wi < end; wi += width) {
      uint x01 = xw[2 * wi], x23 = xw[2 * wi + 1];
      float xv[4] = {as_float(x01 << 16), as_float(x01 & 0xffff0000u), as_float(x23 << 16),
                     as_float(x23 & 0xffff0000u)};
      float xs = (xv[0] + xv[1]) + (xv[2] + xv[3]);
      int g = wi * 4 / gs;
      UNROLL for (int r = 0; r < QMV_ROWS; r++) {
        if (r >= nrows) continue;
        uint q = w[(ulong)r * wstride + (ulong)wi];
        float qx = 0.0f;
        UNROLL for (int i = 0; i < 4; i++) qx += code_f(q, 8u * (uint)i, 255u) * xv[i];
        acc[r] += bf16_to_f32(scales[(ulong)r * sstride + (ulong)g]) * qx +
                  bf16_to_f32(biases[(ulong)r * sstride + (ulong)g]) * xs;
      }
    }
  } else {
    GRID_WAIT();
    if (split == 0) {
      UNROLL for (int r = 0; r < QMV_ROWS; r++) {
        if (r >= nrows) continue;
        acc[r] = qdot_row(x, w + (ulong)r * wstride, scales + (ulong)r * sstride, biases + (ulong)r * sstride,
                          In, bits, gs, lane);
      }
    }
    return;  // qdot_row has reduced already
  }
  UNROLL for (int r = 0; r < QMV_ROWS; r++)
    for (int o = width >> 1; o > 0; o >>= 1) acc[r] += simd_shuffle_xor(acc[r], (uint)o);
}

// qmv_rows is qmv_rows_w over the whole SIMD-group.
INLINE void qmv_rows(device const bf16_t *x, device const uint *w, device const bf16_t *scales,
                     device const bf16_t *biases, int nrows, int In, int bits, int gs, int lane,
                     int split, int nsplit, thread float *acc) {
  qmv_rows_w(x, w, scales, biases, nrows, In, bits, gs, lane, split, nsplit, 32, acc);
}

// qmv_prefetch asks for the lines of the pieces qmv_rows will read first
// from the nrows rows at w (the 16-byte paths': one piece a lane and row) to
// be brought into L2.
INLINE void qmv_prefetch(device const uint *w, int nrows, int In, int bits, int lane, int split, int nsplit) {
  if (bits != 4 && bits != 8) return;
  ulong wstride = (ulong)(In / 32 * bits);
  int pieces = In * bits / 128, per = (pieces + nsplit - 1) / nsplit;
  int c = split * per + lane;
  if (c >= imin(pieces, (split + 1) * per)) return;
  UNROLL for (int r = 0; r < QMV_ROWS; r++)
    if (r < nrows) PREFETCH_L2(w + (ulong)r * wstride + 4ul * (ulong)c);
}

// qmv_combine adds the SIMD-groups' partial sums of each row through
// threadgroup memory; lane r of SIMD-group 0 returns row r's total in acc[0]
// and true, every other thread false.
INLINE bool qmv_combine(thread float *acc, threadgroup float *partial, int lane, int split, int nsplit) {
  if (lane == 0) {
    UNROLL for (int r = 0; r < QMV_ROWS; r++) partial[split * QMV_ROWS + r] = acc[r];
  }
  BARRIER();
  if (split != 0 || lane >= QMV_ROWS) return false;
  float total = 0.0f;
  for (int s = 0; s < nsplit; s++) total += partial[s * QMV_ROWS + lane];
  acc[0] = total;
  return true;
}

// qmatmul_bf16: out[t, o] = bf16(Σ_j x[t, j]·W[o, j]).
// Tokens vary fastest in the grid: the T threadgroups of a row block run side
// by side, so a verify's or short prompt's T tokens take the block's weights
// from DRAM once and from L2 after (row blocks fastest re-read a matrix larger
// than L2, the lm_head's 286 MB, from DRAM for every token).
// launch: grid(ceil(Out, QMV_ROWS) * T) group(min(single(T, QMV_SPLIT, min(QMV_SPLIT, QMV_SPLIT_MANY)), max(1, In * bits / 4096)) * 32)
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
  TG_MEM(float, partial, QMV_SPLIT * QMV_ROWS);
  int t = TGID_X % T;
  int o = (TGID_X / T) * QMV_ROWS;
  if (o >= Out) return;  // uniform across the threadgroup
  int nrows = imin(QMV_ROWS, Out - o);
  float acc[QMV_ROWS];
  qmv_rows(x + (ulong)t * (ulong)In, w + (ulong)o * (ulong)(In / 32 * bits), scales + (ulong)o * (ulong)(In / gs),
           biases + (ulong)o * (ulong)(In / gs), nrows, In, bits, gs, LANE, SIMD_ID, SIMD_COUNT, acc);
  if (qmv_combine(acc, partial, LANE, SIMD_ID, SIMD_COUNT) && LANE < nrows)
    out[(ulong)t * (ulong)Out + (ulong)(o + LANE)] = f32_to_bf16(acc[0]);
}

// QMV_HEAD_SPLIT is QMV_SPLIT for qmatmul_bf16_f32, the logits' GEMV: its
// 62080 threadgroups of the 35B-A3B's lm_head run in many waves whatever
// their size, so fewer SIMD-groups each walking more of a row may pay.
#ifndef QMV_HEAD_SPLIT
#define QMV_HEAD_SPLIT 4
#endif
// QMV_HEAD_SPLIT_MANY is QMV_SPLIT_MANY for the logits (at most QMV_HEAD_SPLIT).
#ifndef QMV_HEAD_SPLIT_MANY
#define QMV_HEAD_SPLIT_MANY 4
#endif

// qmatmul_bf16_f32: as qmatmul_bf16 with an f32 output (logits).
// launch: grid(ceil(Out, QMV_ROWS) * T) group(min(single(T, QMV_HEAD_SPLIT, min(QMV_HEAD_SPLIT, QMV_HEAD_SPLIT_MANY)), max(1, In * bits / 4096)) * 32)
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
  TG_MEM(float, partial, QMV_HEAD_SPLIT * QMV_ROWS);
  int t = TGID_X % T;
  int o = (TGID_X / T) * QMV_ROWS;
  if (o >= Out) return;  // uniform across the threadgroup
  int nrows = imin(QMV_ROWS, Out - o);
  float acc[QMV_ROWS];
  qmv_rows(x + (ulong)t * (ulong)In, w + (ulong)o * (ulong)(In / 32 * bits), scales + (ulong)o * (ulong)(In / gs),
           biases + (ulong)o * (ulong)(In / gs), nrows, In, bits, gs, LANE, SIMD_ID, SIMD_COUNT, acc);
  if (qmv_combine(acc, partial, LANE, SIMD_ID, SIMD_COUNT) && LANE < nrows)
    out[(ulong)t * (ulong)Out + (ulong)(o + LANE)] = acc[0];
}

// qmatmul_gather_bf16: out[t, s, o] = bf16(Σ_j xrow[j]·W[ids[t, s], o, j]) with
// w [E, Out, In*bits/32]; xrow is x[t, :] (xPerSlot = 0) or x[t, s, :] (xPerSlot = 1).
// The rows of one threadgroup belong to one (t, s), so to one expert.
// launch: grid(ceil(Out, QMV_ROWS) * T * K) group(min(single(T, QMV_SPLIT, min(QMV_SPLIT, QMV_SPLIT_MANY)), max(1, In * bits / 4096)) * 32)
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
  GRID_WAIT();
  TG_MEM(float, partial, QMV_SPLIT * QMV_ROWS);
  int blocks = (Out + QMV_ROWS - 1) / QMV_ROWS;
  int ts = TGID_X / blocks;  // t·K + s
  int o = (TGID_X % blocks) * QMV_ROWS;
  if (ts >= T * K) return;
  int nrows = imin(QMV_ROWS, Out - o);
  ulong wrow = (ulong)ids[ts] * (ulong)Out + (ulong)o;
  int xrow = xPerSlot != 0 ? ts : ts / K;
  float acc[QMV_ROWS];
  qmv_rows(x + (ulong)xrow * (ulong)In, w + wrow * (ulong)(In / 32 * bits), scales + wrow * (ulong)(In / gs),
           biases + wrow * (ulong)(In / gs), nrows, In, bits, gs, LANE, SIMD_ID, SIMD_COUNT, acc);
  if (qmv_combine(acc, partial, LANE, SIMD_ID, SIMD_COUNT) && LANE < nrows)
    out[(ulong)ts * (ulong)Out + (ulong)(o + LANE)] = f32_to_bf16(acc[0]);
}
