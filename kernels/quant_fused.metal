// Fused matrix-vector kernels: several products that read the same x in one
// launch (the projections of a mixer, the MoE router with the shared expert's
// matrices), and the experts' gate and up projections with SwiGLU applied. Each
// computes, bit for bit in its reduction order, what the separate kernels do:
// the same qmv_rows helper (quant.metal) over the same rows.

// Register budgets for the decode step's largest launches, so that all their
// threadgroups fit on the GPU at once (one wave, not two); 0 leaves the
// compiler's choice. moe_up_bf16 took 128 registers a thread, 8 of its 64-thread
// groups a multiprocessor: 1056 on an H200, where the 35B-A3B launches 1152.
// BOUNDS(threads, n) caps the registers at 65536 / (threads·n): MOE_UP_MIN_GROUPS
// 5, 102 (96 used), 10 groups a multiprocessor (H200 e256: decode 2.51 → 2.41
// GPU ms). qmatmul_multi_conv_bf16 uses 64 (16 of its 3088 groups a
// multiprocessor), but 40, in one wave, spilled: 2.58 ms (QMV_CONV_MIN_GROUPS
// 12). moe_down_bf16 takes (K + 1)·32 threads, up to MOE_MAX_SLOTS·32, so its
// cap is a register count (MAXNREG): 80 used, 2 of its 288-thread groups a
// multiprocessor for the 512 of the 35B-A3B.
#ifndef MOE_UP_MIN_GROUPS
#define MOE_UP_MIN_GROUPS 5
#endif
#ifndef QMV_CONV_MIN_GROUPS
#define QMV_CONV_MIN_GROUPS 0
#endif
#ifndef MOE_DOWN_MAX_REGS
#define MOE_DOWN_MAX_REGS 0
#endif
#if MOE_UP_MIN_GROUPS > 0
#define KERNEL_BOUNDS_moe_up_bf16 BOUNDS(QMV_SPLIT * 32, MOE_UP_MIN_GROUPS)
#endif
#if QMV_CONV_MIN_GROUPS > 0
#define KERNEL_BOUNDS_qmatmul_multi_conv_bf16 BOUNDS(QMV_SPLIT * 32, QMV_CONV_MIN_GROUPS)
#endif
#if MOE_DOWN_MAX_REGS > 0
#define KERNEL_BOUNDS_moe_down_bf16 MAXNREG(MOE_DOWN_MAX_REGS)
#endif

// QMV_MULTI_SPLIT is QMV_SPLIT for the multi-matrix launches (qmatmul_multi_bf16,
// qmatmul_multi_conv_bf16), whose thousands of threadgroups (3088 for the
// 35B-A3B's GDN in-projection) may fit the GPU in one wave with fewer
// SIMD-groups each.
#ifndef QMV_MULTI_SPLIT
#define QMV_MULTI_SPLIT 4
#endif
// QMV_MULTI_SPLIT_MANY is QMV_SPLIT_MANY for the multi-matrix launches (at
// most QMV_MULTI_SPLIT).
#ifndef QMV_MULTI_SPLIT_MANY
#define QMV_MULTI_SPLIT_MANY 4
#endif

// QMV_MULTI_IN_PER_SIMD is the input width a SIMD-group of qmatmul_multi_bf16
// takes: a 4-bit row's 1024 values are 32 pieces, one a lane; the 8-bit router
// row of 2048 is 128 pieces, two a lane of the two SIMD-groups, walked in turn.
#ifndef QMV_MULTI_IN_PER_SIMD
#define QMV_MULTI_IN_PER_SIMD 1024
#endif

// qmv_multi computes the rows o.. of matrix q (at most QMV_ROWS) over the x
// row of In: lane r < the rows of SIMD-group 0 gets Σ_j x[j]·W[o + r, j] in *v
// and true, every other thread false.
INLINE bool qmv_multi(device const bf16_t *x, qslot q, int o, int In, threadgroup float *partial, int lane, int simd,
                      int nsimd, thread float *v) {
  int nrows = imin(QMV_ROWS, q.Out - o);
  float acc[QMV_ROWS];
  qmv_rows(x, q.w + (ulong)o * (ulong)(In / 32 * q.bits), q.scales + (ulong)o * (ulong)(In / q.gs),
           q.biases + (ulong)o * (ulong)(In / q.gs), nrows, In, q.bits, q.gs, lane, simd, nsimd, acc);
  bool mine = qmv_combine(acc, partial, lane, simd, nsimd) && lane < nrows;
  *v = acc[0];
  return mine;
}

// qmatmul_multi_bf16: outI[t, o] = bf16(Σ_j x[t, j]·WI[o, j]) for the four
// matrices I = 0..3 of OutI rows (0: unused), each with its own bits and group
// size (fmtI, qslot_of), all over the same x [T, In]. One launch instead of four.
// launch: grid((ceil(Out0, QMV_ROWS) + ceil(Out1, QMV_ROWS) + ceil(Out2, QMV_ROWS) + ceil(Out3, QMV_ROWS)) * T) group(min(single(T, QMV_MULTI_SPLIT, min(QMV_MULTI_SPLIT, QMV_MULTI_SPLIT_MANY)), max(1, In / QMV_MULTI_IN_PER_SIMD)) * 32)
KERNEL(qmatmul_multi_bf16,
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
  TG_MEM(float, partial, QMV_MULTI_SPLIT * QMV_ROWS);
  int blocks = (Out0 + QMV_ROWS - 1) / QMV_ROWS + (Out1 + QMV_ROWS - 1) / QMV_ROWS +
               (Out2 + QMV_ROWS - 1) / QMV_ROWS + (Out3 + QMV_ROWS - 1) / QMV_ROWS;
  int t = TGID_X % T;  // tokens fastest, as qmatmul_bf16
  if (TGID_X / T >= blocks) return;  // uniform across the threadgroup
  int local = 0;
  qslot q = qslot_of(TGID_X / T, (Out0 + QMV_ROWS - 1) / QMV_ROWS, (Out1 + QMV_ROWS - 1) / QMV_ROWS,
                     (Out2 + QMV_ROWS - 1) / QMV_ROWS, w0, scales0, biases0, out0, w1, scales1, biases1, out1, w2,
                     scales2, biases2, out2, w3, scales3, biases3, out3, Out0, Out1, Out2, Out3, fmt0, fmt1, fmt2, fmt3, &local);
  int o = local * QMV_ROWS;
  float v;
  if (qmv_multi(x + (ulong)t * (ulong)In, q, o, In, partial, LANE, SIMD_ID, SIMD_COUNT, &v))
    q.out[(ulong)t * (ulong)q.Out + (ulong)(o + LANE)] = f32_to_bf16(v);
}

// conv_silu_step is conv1d_silu_bf16's step of one token on channel c of
// Out0, given the channel's projection v (f32, rounded to bf16 here as a
// projection's output is): out0[c] = bf16(silu(Σ_k ci[k]·conv_w[c, k])) with
// ci = [the K−1 rows of the window conv_state [K−1, Out0]; bf16(v)], the
// products in that kernel's order, and the window advanced by bf16(v).
INLINE void conv_silu_step(float v, int c, int Out0, int K, device bf16_t *conv_state, device const bf16_t *conv_w,
                           device bf16_t *out0) {
  float xv = round_bf16(v), acc = 0.0f;
  for (int k = 0; k < K - 1; k++) acc += bf16_to_f32(conv_state[(ulong)k * (ulong)Out0 + (ulong)c]) *
                                         bf16_to_f32(conv_w[(ulong)c * (ulong)K + (ulong)k]);
  acc += xv * bf16_to_f32(conv_w[(ulong)c * (ulong)K + (ulong)(K - 1)]);
  out0[c] = f32_to_bf16(siluf(acc));
  for (int k = 0; k + 1 < K - 1; k++) conv_state[(ulong)k * (ulong)Out0 + (ulong)c] = conv_state[(ulong)(k + 1) * (ulong)Out0 + (ulong)c];
  if (K > 1) conv_state[(ulong)(K - 2) * (ulong)Out0 + (ulong)c] = f32_to_bf16(xv);
}

// qmatmul_multi_conv_bf16: qmatmul_multi_bf16 for one token whose matrix 0
// (Out0 channels) feeds conv1d_silu_bf16: out0 gets the conv's output, not the
// projection. The lane of channel c rounds its projection to bf16, as
// qmatmul_multi_bf16 writes it, and runs the conv's step on it from the window
// conv_state [K−1, Out0] (which it advances) with conv_w [Out0, K], the
// products in conv1d_silu_bf16's order: the decode step's GDN in-projection
// and conv in one launch. Only that lane touches channel c's window.
// launch: grid((ceil(Out0, QMV_ROWS) + ceil(Out1, QMV_ROWS) + ceil(Out2, QMV_ROWS) + ceil(Out3, QMV_ROWS)) * T) group(min(single(T, QMV_MULTI_SPLIT, min(QMV_MULTI_SPLIT, QMV_MULTI_SPLIT_MANY)), max(1, In / 1024)) * 32)
// requires: K <= CONV_MAX_K
KERNEL(qmatmul_multi_conv_bf16,
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
       PARAM(int, T, 19),
       PARAM(int, In, 20),
       PARAM(int, Out0, 21),
       PARAM(int, Out1, 22),
       PARAM(int, Out2, 23),
       PARAM(int, Out3, 24),
       PARAM(int, fmt0, 25),
       PARAM(int, fmt1, 26),
       PARAM(int, fmt2, 27),
       PARAM(int, fmt3, 28),
       PARAM(int, K, 29)) {
  TG_MEM(float, partial, QMV_MULTI_SPLIT * QMV_ROWS);
  if (T != 1) return;  // one token only (ops checks it): the conv of a token needs the one before
  int b0 = (Out0 + QMV_ROWS - 1) / QMV_ROWS, local = 0;
  qslot q = qslot_of(TGID_X, b0, (Out1 + QMV_ROWS - 1) / QMV_ROWS, (Out2 + QMV_ROWS - 1) / QMV_ROWS, w0, scales0,
                     biases0, out0, w1, scales1, biases1, out1, w2, scales2, biases2, out2, w3, scales3, biases3, out3,
                     Out0, Out1, Out2, Out3, fmt0, fmt1, fmt2, fmt3, &local);
  int o = local * QMV_ROWS;
  float v;
  if (!qmv_multi(x, q, o, In, partial, LANE, SIMD_ID, SIMD_COUNT, &v)) return;
  int c = o + LANE;
  if (TGID_X >= b0) {  // not matrix 0: as qmatmul_multi_bf16
    q.out[c] = f32_to_bf16(v);
    return;
  }
  conv_silu_step(v, c, Out0, K, conv_state, conv_w, out0);
}

// qmv_swiglu is silu(bf16(x·Wgate[r])) · bf16(x·Wup[r]) for the nrows rows r at
// the given weights: qmv_rows for each matrix in turn (one copy of its code:
// an unrolled pair doubled the kernel past the instruction cache), the
// SIMD-groups' partial sums combined through partial (2·QMV_SPLIT·QMV_ROWS
// floats). Lane r < nrows of SIMD-group 0 gets row r's value in *res and true;
// every other thread false.
INLINE bool qmv_swiglu(device const bf16_t *xr, device const uint *gw, device const bf16_t *gsc,
                       device const bf16_t *gbi, device const uint *uw, device const bf16_t *usc,
                       device const bf16_t *ubi, int nrows, int In, int bits, int gs, threadgroup float *partial,
                       int lane, int simd, int nsimd, thread float *res) {
  // The up rows' lines are asked for now, so that their loads after the gate
  // rows' sums find them in L2 instead of paying DRAM's latency a second time.
  qmv_prefetch(uw, nrows, In, bits, lane, simd, nsimd);
  NO_UNROLL for (int m = 0; m < 2; m++) {
    float a[QMV_ROWS];
    qmv_rows(xr, m == 0 ? gw : uw, m == 0 ? gsc : usc, m == 0 ? gbi : ubi, nrows, In, bits, gs, lane, simd, nsimd, a);
    if (lane == 0) {
      UNROLL for (int r = 0; r < QMV_ROWS; r++) partial[(m * nsimd + simd) * QMV_ROWS + r] = a[r];
    }
  }
  BARRIER();
  if (simd != 0 || lane >= nrows) return false;
  float gt = 0.0f, ut = 0.0f;
  for (int s = 0; s < nsimd; s++) {
    gt += partial[s * QMV_ROWS + lane];
    ut += partial[(nsimd + s) * QMV_ROWS + lane];
  }
  *res = siluf(round_bf16(gt)) * round_bf16(ut);
  return true;
}

// qmatmul_gather_swiglu_bf16: for each token t and slot s, expert e = ids[t, s]:
// g = bf16(x[t]·Wgate[e, o]), u = bf16(x[t]·Wup[e, o]), out[t, s, o] =
// bf16(silu(g)·u) — qmatmul_gather_bf16 twice and swiglu_bf16, in one launch.
// Gate and up share bits and group size (one quantization of the expert MLP).
// launch: grid(ceil(Out, QMV_ROWS) * T * K) group(min(single(T, QMV_SPLIT, min(QMV_SPLIT, QMV_SPLIT_MANY)), max(1, In * bits / 4096)) * 32)
KERNEL(qmatmul_gather_swiglu_bf16,
       BUFFER(const bf16_t, x, 0),
       BUFFER(const int, ids, 1),
       BUFFER(const uint, gate_w, 2),
       BUFFER(const bf16_t, gate_scales, 3),
       BUFFER(const bf16_t, gate_biases, 4),
       BUFFER(const uint, up_w, 5),
       BUFFER(const bf16_t, up_scales, 6),
       BUFFER(const bf16_t, up_biases, 7),
       BUFFER(bf16_t, out, 8),
       PARAM(int, T, 9),
       PARAM(int, K, 10),
       PARAM(int, In, 11),
       PARAM(int, Out, 12),
       PARAM(int, bits, 13),
       PARAM(int, gs, 14)) {
  GRID_WAIT();
  TG_MEM(float, partial, 2 * QMV_SPLIT * QMV_ROWS);
  int blocks = (Out + QMV_ROWS - 1) / QMV_ROWS;
  int ts = TGID_X / blocks;  // t·K + s
  int o = (TGID_X % blocks) * QMV_ROWS;
  if (ts >= T * K) return;
  int nrows = imin(QMV_ROWS, Out - o);
  ulong row = (ulong)ids[ts] * (ulong)Out + (ulong)o;
  ulong wrow = row * (ulong)(In / 32 * bits), srow = row * (ulong)(In / gs);
  float h;
  if (qmv_swiglu(x + (ulong)(ts / K) * (ulong)In, gate_w + wrow, gate_scales + srow, gate_biases + srow, up_w + wrow,
                 up_scales + srow, up_biases + srow, nrows, In, bits, gs, partial, LANE, SIMD_ID, SIMD_COUNT, &h))
    out[(ulong)ts * (ulong)Out + (ulong)(o + LANE)] = f32_to_bf16(h);
}

// moe_up_bf16: qmatmul_gather_swiglu_bf16 for the K routed slots and the same
// for the shared expert in one launch: hs[t, o] = bf16(silu(g)·u) with g =
// bf16(x[t]·Wsg[o]), u = bf16(x[t]·Wsu[o]) (what qmatmul_multi_bf16 and
// swiglu_bf16 compute). The shared expert has the routed experts' bits and
// group size. A threadgroup takes an item, QMV_ROWS rows of a routed slot
// (threadgroup g below ceil(Out, QMV_ROWS)·T·K: slot g / ceil(Out, QMV_ROWS))
// or, past them, of the shared expert, split across its SIMD-groups; a routed
// item waits for the router's ids, the shared expert's start loading their
// weights at once. 4-bit rows read in 16-byte pieces (the weights and x
// 16-byte aligned) sum the gate's and the up's rows side by side on one
// unpacked x, with the piece's scales and biases loaded beside its codes:
// each row's sums, its lanes' reduction and the combine are qmv_rows_w's and
// qmv_swiglu's, in their order, so the bits are those of qmv_swiglu, which
// the other rows take. Summing the gate's rows and then the up's through
// qmv_rows_w paid twice a piece's x and pointers and loaded each row's scale
// and bias after its sums, four round trips one after another (ncu, a
// batched step of 8 rows on an H100: 50.3 against 40.2 µs a launch,
// forty-fifth session, docs/history/batching-log.md).
// launch: grid(ceil(Out, QMV_ROWS) * T * K + ceil(Is, QMV_ROWS) * T) group(min(single(T, QMV_SPLIT, min(QMV_SPLIT, QMV_SPLIT_MANY)), max(1, In * bits / 4096)) * 32)
KERNEL(moe_up_bf16,
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
  TG_MEM(float, partial, 2 * QMV_SPLIT * QMV_ROWS);
  int blocks = (Out + QMV_ROWS - 1) / QMV_ROWS;
  int routed = blocks * T * K;
  int g = TGID_X, lane = LANE, simd = SIMD_ID, nsimd = SIMD_COUNT;
  // The item's pointers.
  device const bf16_t *xr;
  device const uint *gw, *uw;
  device const bf16_t *gsc, *gbi, *usc, *ubi;
  device bf16_t *dst;
  int nrows;
  if (g < routed) {
    GRID_WAIT();
    int ts = g / blocks;  // t·K + s
    int o = (g - ts * blocks) * QMV_ROWS;
    nrows = imin(QMV_ROWS, Out - o);
    ulong row = (ulong)ids[ts] * (ulong)Out + (ulong)o;
    ulong wrow = row * (ulong)(In / 32 * bits), srow = row * (ulong)(In / gs);
    xr = x + (ulong)(ts / K) * (ulong)In;
    gw = gate_w + wrow;
    gsc = gate_scales + srow;
    gbi = gate_biases + srow;
    uw = up_w + wrow;
    usc = up_scales + srow;
    ubi = up_biases + srow;
    dst = out + (ulong)ts * (ulong)Out + (ulong)o;
  } else {
    int sblocks = (Is + QMV_ROWS - 1) / QMV_ROWS;
    int t = (g - routed) / sblocks;
    int o = (g - routed - t * sblocks) * QMV_ROWS;
    if (t >= T) return;  // uniform across the threadgroup
    nrows = imin(QMV_ROWS, Is - o);
    ulong wrow = (ulong)o * (ulong)(In / 32 * bits), srow = (ulong)o * (ulong)(In / gs);
    xr = x + (ulong)t * (ulong)In;
    gw = shared_gate_w + wrow;
    gsc = shared_gate_scales + srow;
    gbi = shared_gate_biases + srow;
    uw = shared_up_w + wrow;
    usc = shared_up_scales + srow;
    ubi = shared_up_biases + srow;
    dst = hs + (ulong)t * (ulong)Is + (ulong)o;
  }
  ulong wstride = (ulong)(In / 32 * bits), sstride = (ulong)(In / gs);
  if (!(bits == 4 && QMV_WORDS == 0 && (wstride & 3ul) == 0ul && ALIGNED16(gw) && ALIGNED16(uw) && ALIGNED16(xr))) {
    float h;
    if (qmv_swiglu(xr, gw, gsc, gbi, uw, usc, ubi, nrows, In, bits, gs, partial, lane, simd, nsimd, &h))
      dst[lane] = f32_to_bf16(h);
    return;
  }
  device const u32x4 *gw4 = (device const u32x4 *)gw, *uw4 = (device const u32x4 *)uw;
  device const u32x4 *x4 = (device const u32x4 *)xr;
  ulong stride = wstride / 4;
  int pieces = In / 32, per = (pieces + nsimd - 1) / nsimd;
  int end = imin(pieces, (simd + 1) * per);
  int c = simd * per + lane;
  // q holds piece c of the gate's rows, then of the up's.
  uint q[2 * QMV_ROWS][4];
  qmv_piece(gw4, stride, nrows, c, end, q);
  qmv_piece(uw4, stride, nrows, c, end, q + QMV_ROWS);
  // The piece's scales and biases load with its codes, all at once.
  bf16_t gs_[QMV_ROWS], gb_[QMV_ROWS], us_[QMV_ROWS], ub_[QMV_ROWS];
  qmv_piece_sb(gsc, gbi, sstride, nrows, c < end ? c * 32 / gs : -1, gs_, gb_);
  qmv_piece_sb(usc, ubi, sstride, nrows, c < end ? c * 32 / gs : -1, us_, ub_);
  GRID_WAIT();  // the weights are in flight; x is the previous kernel's
  float acc[2 * QMV_ROWS];
  UNROLL for (int r = 0; r < 2 * QMV_ROWS; r++) acc[r] = 0.0f;
  for (; c < end; c += 32) {
    // qmv_rows_w's 4-bit sums, for the 8 rows at once.
    float qe[2 * QMV_ROWS], qo[2 * QMV_ROWS];
    UNROLL for (int r = 0; r < 2 * QMV_ROWS; r++) {
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
      UNROLL for (int r = 0; r < 2 * QMV_ROWS; r++) {
        uint lo = q[r][k] & 0x0f0f0f0fu, hi = (q[r][k] >> 4) & 0x0f0f0f0fu;
        UNROLL for (int i = 0; i < 4; i++) {
          qe[r] = fmaf(byte_f128(lo, i), xv[2 * i], qe[r]);
          qo[r] = fmaf(byte_f128(hi, i), xv[2 * i + 1], qo[r]);
        }
      }
    }
    UNROLL for (int r = 0; r < QMV_ROWS; r++) {
      if (r < nrows) {
        float sc = bf16_to_f32(gs_[r]);
        acc[r] += sc * (qe[r] + qo[r]) + (bf16_to_f32(gb_[r]) - 128.0f * sc) * xs;
        float su = bf16_to_f32(us_[r]);
        acc[QMV_ROWS + r] += su * (qe[QMV_ROWS + r] + qo[QMV_ROWS + r]) + (bf16_to_f32(ub_[r]) - 128.0f * su) * xs;
      }
    }
    if (c + 32 < end) {
      int gn = (c + 32) * 32 / gs;
      qmv_piece(gw4, stride, nrows, c + 32, end, q);
      qmv_piece(uw4, stride, nrows, c + 32, end, q + QMV_ROWS);
      qmv_piece_sb(gsc, gbi, sstride, nrows, gn, gs_, gb_);
      qmv_piece_sb(usc, ubi, sstride, nrows, gn, us_, ub_);
    }
  }
  UNROLL for (int r = 0; r < 2 * QMV_ROWS; r++)
    for (int o = 16; o > 0; o >>= 1) acc[r] += simd_shuffle_xor(acc[r], (uint)o);
  // qmv_swiglu's combine: the gate's partial sums, then the up's.
  if (lane == 0) {
    UNROLL for (int r = 0; r < QMV_ROWS; r++) {
      partial[simd * QMV_ROWS + r] = acc[r];
      partial[(nsimd + simd) * QMV_ROWS + r] = acc[QMV_ROWS + r];
    }
  }
  BARRIER();
  if (simd != 0 || lane >= nrows) return;
  float gt = 0.0f, ut = 0.0f;
  for (int s = 0; s < nsimd; s++) {
    gt += partial[s * QMV_ROWS + lane];
    ut += partial[(nsimd + s) * QMV_ROWS + lane];
  }
  dst[lane] = f32_to_bf16(siluf(round_bf16(gt)) * round_bf16(ut));
}

// MOE_MAX_SLOTS bounds K + 1 (the routed experts and the shared one) of
// moe_down_bf16: one SIMD-group each.
#define MOE_MAX_SLOTS 32

// moe_down_bf16: the second half of the MoE block for token t, in one launch:
// y_s = bf16(h[t, s]·Wdown[ids[t, s], o]) for the K routed slots, ys =
// bf16(hs[t]·Wshared[o]), then out[t, o] = bf16(r + σ(gate[t])·ys) with r =
// bf16(Σ_s weights[t, s]·y_s) (slots in order): qmatmul_gather_bf16
// (xPerSlot 1), moe_combine_bf16, qmatmul_bf16 and add_sigmoid_scaled_bf16.
// Each threadgroup takes QMV_ROWS output rows of one token with one SIMD-group
// per matrix (SIMD-group s < K the routed slot s, SIMD-group K the shared
// expert), which walk their rows side by side; the first combines.
// halves 1 (4- and 8-bit codes only) gives each half of a SIMD-group QMV_ROWS
// rows of its own, 2·QMV_ROWS rows a threadgroup: the 35B-A3B's rows of 512
// codes are 16 pieces, one a lane of a half, where the other half idled; and
// half the threadgroups fit the GPU in one wave.
// ids_early 1 says the kernel that wrote ids ran two or more launches before
// this one (the router, with moe_up_bf16 between): the ids are read before
// GRID_WAIT (prelude_cuda.h) and the experts' weights load while the kernel
// before still runs; 0 (ids written by the launch just before) waits first.
// launch: grid(ceil(H, QMV_ROWS * (1 + halves)) * T) group((K + 1) * 32)
// requires: K + 1 <= MOE_MAX_SLOTS
KERNEL(moe_down_bf16,
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
  if (ids_early == 0) GRID_WAIT();
  TG_MEM(float, partial, MOE_MAX_SLOTS * 2 * QMV_ROWS);
  int t = TGID_X % T;  // tokens fastest: they share the shared expert's rows
  int rows = QMV_ROWS * (1 + halves);
  int o0 = (TGID_X / T) * rows;
  if (o0 >= H) return;  // uniform across the threadgroup
  int side = halves != 0 ? LANE >> 4 : 0;
  int lane = halves != 0 ? LANE & 15 : LANE;
  int o = o0 + side * QMV_ROWS;
  int nrows = imax(0, imin(QMV_ROWS, H - o));
  int s = SIMD_ID;  // the matrix of this SIMD-group
  // Routed slot s's expert, or the shared expert: pointers first, one copy of
  // qmv_rows.
  bool slot = s < K;
  int in = slot ? I : Is, b = slot ? bits : shared_bits, group = slot ? gs : shared_gs;
  ulong row = slot ? (ulong)ids[t * K + s] * (ulong)H + (ulong)o : (ulong)o;
  ulong wrow = row * (ulong)(in / 32 * b), srow = row * (ulong)(in / group);
  float acc[QMV_ROWS];
  qmv_rows_w(slot ? h + (ulong)(t * K + s) * (ulong)I : hs + (ulong)t * (ulong)Is, (slot ? w : shared_w) + wrow,
             (slot ? scales : shared_scales) + srow, (slot ? biases : shared_biases) + srow, nrows, in, b, group,
             lane, 0, 1, halves != 0 ? 16 : 32, acc);
  if (lane == 0) {
    UNROLL for (int r = 0; r < QMV_ROWS; r++) partial[(s * 2 + side) * QMV_ROWS + r] = acc[r];
  }
  BARRIER();
  if (s != 0 || LANE >= rows || o0 + LANE >= H) return;
  // Output row o0 + LANE is row LANE % QMV_ROWS of side LANE / QMV_ROWS: at
  // LANE past each SIMD-group's start in partial.
  float routed = 0.0f;
  for (int k = 0; k < K; k++)
    routed += bf16_to_f32(weights[t * K + k]) * round_bf16(partial[k * 2 * QMV_ROWS + LANE]);
  float shared = round_bf16(partial[K * 2 * QMV_ROWS + LANE]);
  float g = sigmoidf(bf16_to_f32(gate[t]));
  out[(ulong)t * (ulong)H + (ulong)(o0 + LANE)] = f32_to_bf16(round_bf16(routed) + g * shared);
}

// MOE_DOWN_WARP_ITEMS is how many items (SIMD-groups) a threadgroup of
// moe_down_warp_bf16 takes.
#ifndef MOE_DOWN_WARP_ITEMS
#define MOE_DOWN_WARP_ITEMS 4
#endif

// moe_down_warp_bf16: moe_down_bf16 at halves 1 (4- and 8-bit codes) with a
// threadgroup's work on one SIMD-group, for a launch of several tokens (a
// batch of replies): an item is token t's 2·QMV_ROWS output rows from o0,
// each half of the SIMD-group QMV_ROWS of them, walking the K routed slots
// and then the shared expert in turn, where moe_down_bf16 gives each slot a
// SIMD-group and combines their sums through threadgroup memory behind a
// barrier (ncu, a batched step of 8 rows on an H100: 8 instructions a code,
// its issue slots half busy, the memory 29%). Each slot's sums are
// moe_down_bf16's (qmv_rows_w on the half's 16 lanes) and the combine runs
// in slot order as there: the same bits. Every slot's rows are asked into
// L2 first, before the wait for h, so that the walk's loads wait on L2.
// ids_early as moe_down_bf16's.
// launch: grid(ceil(ceil(H, 2 * QMV_ROWS) * T, MOE_DOWN_WARP_ITEMS)) group(MOE_DOWN_WARP_ITEMS * 32)
KERNEL(moe_down_warp_bf16,
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
  if (ids_early == 0) GRID_WAIT();
  int item = TGID_X * MOE_DOWN_WARP_ITEMS + SIMD_ID;
  int t = item % T;  // tokens fastest: they share the shared expert's rows
  int o0 = (item / T) * 2 * QMV_ROWS;
  if (o0 >= H) return;  // no barrier below
  int side = LANE >> 4, lane = LANE & 15;
  int o = o0 + side * QMV_ROWS;
  int nrows = imax(0, imin(QMV_ROWS, H - o));
  // Every slot's rows (nrows rows, contiguous) into L2, a lane a line of its
  // half's.
  for (int s = 0; s <= K; s++) {
    bool slot = s < K;
    int in = slot ? I : Is, b = slot ? bits : shared_bits;
    ulong row = slot ? (ulong)ids[t * K + s] * (ulong)H + (ulong)o : (ulong)o;
    device const uchar *p = (device const uchar *)((slot ? w : shared_w) + row * (ulong)(in / 32 * b));
    for (int at = lane * 128; at < nrows * in / 32 * b * 4; at += 16 * 128) PREFETCH_L2(p + at);
  }
  float routed = 0.0f, shared = 0.0f;
  for (int s = 0; s <= K; s++) {
    // Slot s's pointers (moe_down_bf16's), then one copy of qmv_rows_w.
    bool slot = s < K;
    int in = slot ? I : Is, b = slot ? bits : shared_bits, group = slot ? gs : shared_gs;
    ulong row = slot ? (ulong)ids[t * K + s] * (ulong)H + (ulong)o : (ulong)o;
    ulong wrow = row * (ulong)(in / 32 * b), srow = row * (ulong)(in / group);
    float acc[QMV_ROWS];
    qmv_rows_w(slot ? h + (ulong)(t * K + s) * (ulong)I : hs + (ulong)t * (ulong)Is, (slot ? w : shared_w) + wrow,
               (slot ? scales : shared_scales) + srow, (slot ? biases : shared_biases) + srow, nrows, in, b, group,
               lane, 0, 1, 16, acc);
    float v = acc[0];  // this lane's row of its half's
    UNROLL for (int r = 1; r < QMV_ROWS; r++) {
      if (lane == r) v = acc[r];
    }
    if (slot)
      routed += bf16_to_f32(weights[t * K + s]) * round_bf16(v);
    else
      shared = round_bf16(v);
  }
  if (lane >= nrows) return;
  float g = sigmoidf(bf16_to_f32(gate[t]));
  out[(ulong)t * (ulong)H + (ulong)(o + lane)] = f32_to_bf16(round_bf16(routed) + g * shared);
}
