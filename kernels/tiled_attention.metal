// Prompt attention on the matrix units (flash attention): a threadgroup takes
// FA_BQ queries of one q-head and walks their keys FA_BK at a time, scores
// S = Q·Kᵀ and O += P·V both as mma.sync products, with an online softmax in
// between (running max and sum a row, the output rescaled when the max grows).
// Two SIMD-groups share each 16 queries: both score them, each sums half of
// the head's values. A prompt chunk has few query tiles (512 tokens × 16
// q-heads: 128 threadgroups), and one SIMD-group holding all of D (the queries
// and a 16×256 output: 255 registers, spilling) left the matrix units idle
// (H200: 6% busy, 110 µs a layer for a 512-token chunk alone); halves take
// twice the SIMD-groups at half the registers for the output.
// The split-KV kernels of attention.metal give every query its own threadgroup,
// each reading the prefix's keys again (H200, 35B-A3B, a 2048-token prompt in
// chunks of 512: 1.17 ms an attention layer, 18% of the prompt's GPU time).
//
// Numerics: scores and the softmax in f32 as attention_bf16; the weights P
// are rounded to bf16 for the P·V product (f32 accumulation), their f32 values
// summed for the denominator. So the result differs from attention_bf16's by
// bf16 noise in P: its kernel cases compare with attention_bf16's reference.
//
// Only CUDA sm_80+ (MMA_WARP_NATIVE, qgemm.metal) has the tiled path, for
// D a multiple of 16; elsewhere (Metal, the embedded compute_75 PTX, other D)
// the kernel computes the same result one query row a SIMD-group, slowly: the
// engine picks it only where backend.MatrixUnits says the tiles run.

// FA_BQ queries a threadgroup (16 a pair of SIMD-groups), FA_BK keys a step; FA_LD
// bf16 a key row in threadgroup memory (16-byte rows, ldmatrix rows on
// distinct banks).
#define FA_BQ 64
#define FA_BK 32
#define FA_MAX_D 256
#define FA_THREADS 256
#define FA_LD (FA_MAX_D + 8)
#define FA_LOG2E 1.4426950408889634f
#define KERNEL_BOUNDS_attention_flash_bf16 BOUNDS(FA_THREADS, 1)

// fa_plain is the fallback: SIMD-group `simd` of `nsg` takes query rows
// simd, simd + nsg, ... of the tile, its lanes splitting the head's D values.
INLINE void fa_plain(device const bf16_t *q, device const bf16_t *kcache, device const bf16_t *vcache,
                     device bf16_t *out, int T, int Hq, int D, int Cap, int kvLen, float scale, int t0, int h,
                     int kvh, int lane, int simd, int nsg) {
  for (int r = simd; r < FA_BQ && t0 + r < T; r += nsg) {
    int t = t0 + r, pos = kvLen - T + t;
    device const bf16_t *qr = q + ((ulong)t * (ulong)Hq + (ulong)h) * (ulong)D;
    float qv[FA_MAX_D / 32], ov[FA_MAX_D / 32];
    UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
      int d = lane + 32 * i;
      qv[i] = d < D ? bf16_to_f32(qr[d]) : 0.0f;
      ov[i] = 0.0f;
    }
    float m = -1e30f, l = 0.0f;
    for (int j = 0; j <= pos; j++) {
      ulong row = ((ulong)kvh * (ulong)Cap + (ulong)j) * (ulong)D;
      float s = 0.0f;
      UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
        int d = lane + 32 * i;
        if (d < D) s += qv[i] * bf16_to_f32(kcache[row + (ulong)d]);
      }
      s = scale * simd_sum(s);
      float mNew = fmaxf(m, s), corr = expf(m - mNew), p = expf(s - mNew);
      l = l * corr + p;
      UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
        int d = lane + 32 * i;
        ov[i] = ov[i] * corr + (d < D ? p * bf16_to_f32(vcache[row + (ulong)d]) : 0.0f);
      }
      m = mNew;
    }
    device bf16_t *dst = out + ((ulong)t * (ulong)Hq + (ulong)h) * (ulong)D;
    UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
      int d = lane + 32 * i;
      if (d < D) dst[d] = f32_to_bf16(ov[i] / l);
    }
  }
}

// fa_split_range is split s of a query's n keys for the split kernels on the
// matrix units: S ranges of c = ⌈n/S⌉ keys rounded up to a whole block of
// FA_BK, range s = [s·c, min(n, (s+1)·c)) (empty past n). Each query's own n,
// not the launch's: a speculative verify's token then sums its keys in the
// blocks its decode step did (every range starts on a multiple of FA_BK, so
// a tile walking several rows' ranges at once meets each row's blocks where
// that row alone would), and gets that step's bits.
INLINE void fa_split_range(int n, int S, int s, thread int *first, thread int *end) {
  int c = ((n + S - 1) / S + FA_BK - 1) / FA_BK * FA_BK;
  *first = imin(n, s * c);
  *end = imin(n, *first + c);
}

// fa_split_plain is fa_split's fallback, one row a SIMD-group at a time.
INLINE void fa_split_plain(device const bf16_t *q, device const bf16_t *kcache, device const bf16_t *vcache,
                           device float *partial, int T, int Hq, int Hkv, int D, int Cap, int kvLen, int S, int s,
                           int kvh, float scale, int lane, int simd, int nsg) {
  int G = Hq / Hkv;
  for (int r = simd; r < T * G; r += nsg) {
    int t = r / G, h = kvh * G + r % G, first, last;
    fa_split_range(kvLen - T + t + 1, S, s, &first, &last);
    device const bf16_t *qr = q + ((ulong)t * (ulong)Hq + (ulong)h) * (ulong)D;
    float qv[FA_MAX_D / 32], ov[FA_MAX_D / 32];
    UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
      int d = lane + 32 * i;
      qv[i] = d < D ? bf16_to_f32(qr[d]) : 0.0f;
      ov[i] = 0.0f;
    }
    float m = -3.0e38f, l = 0.0f;
    for (int j = first; j < last; j++) {
      ulong row = ((ulong)kvh * (ulong)Cap + (ulong)j) * (ulong)D;
      float sc = 0.0f;
      UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
        int d = lane + 32 * i;
        if (d < D) sc += qv[i] * bf16_to_f32(kcache[row + (ulong)d]);
      }
      sc = scale * simd_sum(sc);
      float mNew = fmaxf(m, sc), corr = expf(m - mNew), p = expf(sc - mNew);
      l = l * corr + p;
      UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
        int d = lane + 32 * i;
        ov[i] = ov[i] * corr + (d < D ? p * bf16_to_f32(vcache[row + (ulong)d]) : 0.0f);
      }
      m = mNew;
    }
    device float *dst = partial + (((ulong)t * (ulong)Hq + (ulong)h) * (ulong)S + (ulong)s) * (ulong)(D + 2);
    UNROLL for (int i = 0; i < FA_MAX_D / 32; i++) {
      int d = lane + 32 * i;
      if (d < D) dst[d] = ov[i];
    }
    if (lane == 0) {
      dst[D] = m;
      dst[D + 1] = l;
    }
  }
}

#if defined(MMA_WARP_NATIVE)
// cp_async16 copies 16 bytes from device to threadgroup memory without
// passing through registers; ok false fills them with zeros (src not read).
INLINE void cp_async16(threadgroup bf16_t *dst, device const bf16_t *src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(ok ? 16 : 0)
               : "memory");
}
INLINE void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// cp_async_wait_older waits for every committed group but the newest.
INLINE void cp_async_wait_older() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
INLINE void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// ldsm_x4_trans_at is ldsm_x4_at (qgemm.metal) with each 8×8 matrix
// transposed: B fragments of k16×n8 from rows that are k (a value row a key).
INLINE void ldsm_x4_trans_at(uint addr, thread uint *r) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// fa_mma: c (an m16n8 f32 accumulator) += a (m16k16 bf16) · b (k16n8 bf16).
INLINE void fa_mma(thread float *c, thread const uint *a, uint b0, uint b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// fa_pack2: two f32 as bf16x2 (lo first), rounded to nearest even.
INLINE uint fa_pack2(float lo, float hi) {
  uint v;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(v) : "f"(hi), "f"(lo));
  return v;
}

// fa_load issues the copies of keys (or values) j0..j0+FA_BK of one kv-head
// into dst [FA_BK][FA_LD]; rows at or past n are zeros.
INLINE void fa_load(threadgroup bf16_t *dst, device const bf16_t *cache, ulong head, int j0, int n, int D, int tid) {
  int per = D / 8;  // 16-byte pieces a row
  for (int i = tid; i < FA_BK * per; i += FA_THREADS) {
    int r = i / per, c = (i % per) * 8;
    bool ok = j0 + r < n;
    cp_async16(dst + r * FA_LD + c, cache + (head + (ulong)(ok ? j0 + r : 0)) * (ulong)D + (ulong)c, ok);
  }
}

// fa_acc is a lane's share of its SIMD-group's 16 rows: the output's half
// (blocks db0.. of 16, two 8-wide m16n8 accumulators each, unnormalised), and
// for rows g and g + 8 the running max (log2 units) and sum. The m16n8
// accumulator layout: lane 4g + qd holds rows g (c[0], c[1]) and g + 8 (c[2],
// c[3]), columns 2qd and 2qd + 1 of its 8.
struct fa_acc {
  float o[FA_MAX_D / 16][4];
  float m[2], l[2];
};

// fa_core runs a SIMD-group's 16 rows (a pair of SIMD-groups: simd and simd
// + 4, the first and the second half of the output's 16-wide blocks) over
// keys kfirst..kend−1 of one kv-head (head: its first cache row). The lane's
// rows g and g + 8 take their queries from q + qoff[i] (−1: no row) and see
// the keys lo[i]..pos[i]; live says the SIMD-group has a row, wlast is its
// rows' newest key. A block of keys none of a row's leaves its sums as they
// were, bit for bit (scale 1, nothing added). Every thread of the
// threadgroup calls it (it loads and waits together).
INLINE void fa_core(thread fa_acc &a, device const bf16_t *q, thread const long *qoff, thread const int *lo,
                    thread const int *pos,
                    bool live, int wlast, device const bf16_t *kcache, device const bf16_t *vcache,
                    threadgroup bf16_t *Ks, threadgroup bf16_t *Vs, ulong head, int kfirst, int kend, int D,
                    float scale, int tid, int lane, int simd) {
  int qd = lane & 3, mi = lane >> 3, r8 = lane & 7;
  int nkb = D / 16;
  int half = (nkb + 1) / 2, db0 = (simd >> 2) * half, ndb = imin(nkb, db0 + half) - db0;  // its output blocks
  // The queries as A fragments, for all of D: a[0..3] = rows g, g + 8 at
  // columns 2qd.., then the same at 2qd + 8.
  uint qa[FA_MAX_D / 16][4];
  UNROLL for (int kb = 0; kb < FA_MAX_D / 16; kb++) {
    UNROLL for (int i = 0; i < 4; i++) {
      long at = qoff[i & 1];
      int col = 16 * kb + 2 * qd + 8 * (i >> 1);
      qa[kb][i] = kb < nkb && at >= 0 ? *(device const uint *)(q + at + col) : 0u;
    }
  }
  UNROLL for (int nb = 0; nb < FA_MAX_D / 16; nb++)
    for (int i = 0; i < 4; i++) a.o[nb][i] = 0.0f;
  a.m[0] = a.m[1] = -1e30f;
  a.l[0] = a.l[1] = 0.0f;
  float sl = scale * FA_LOG2E;  // scores in log2 units: exp2 below
  // The lane's ldmatrix rows at block 0: keys as B rows (n), values as B
  // columns (k, transposed); bytes are added per block.
  uint kLane = smem_u32(Ks + ((mi >> 1) * 8 + r8) * FA_LD + (mi & 1) * 8);
  uint vLane = smem_u32(Vs + ((mi & 1) * 8 + r8) * FA_LD + 16 * db0 + (mi >> 1) * 8);
  fa_load(Ks, kcache, head, kfirst, kend, D, tid);
  cp_async_commit();
  fa_load(Vs, vcache, head, kfirst, kend, D, tid);
  cp_async_commit();
  for (int j0 = kfirst; j0 < kend; j0 += FA_BK) {
    bool on = live && j0 <= wlast;  // a SIMD-group whose rows precede the block skips it (uniform)
    cp_async_wait_older();          // the keys
    BARRIER();
    float s[FA_BK / 8][4];
    UNROLL for (int nb = 0; nb < FA_BK / 8; nb++)
      for (int i = 0; i < 4; i++) s[nb][i] = 0.0f;
    if (on) {
      UNROLL for (int kb = 0; kb < FA_MAX_D / 16; kb++) {
        if (kb >= nkb) continue;
        UNROLL for (int j = 0; j < FA_BK / 16; j++) {
          uint b[4];
          ldsm_x4_at(kLane + (uint)(2 * (16 * j * FA_LD + 16 * kb)), b);
          fa_mma(s[2 * j], qa[kb], b[0], b[1]);
          fa_mma(s[2 * j + 1], qa[kb], b[2], b[3]);
        }
      }
    }
    BARRIER();  // every SIMD-group is done with the keys
    if (j0 + FA_BK < kend) fa_load(Ks, kcache, head, j0 + FA_BK, kend, D, tid);
    cp_async_commit();  // (empty at the end: the waits count groups)
    uint pa[FA_BK / 16][4];
    if (on) {
      float mx[2] = {a.m[0], a.m[1]};
      UNROLL for (int nb = 0; nb < FA_BK / 8; nb++)
        for (int i = 0; i < 4; i++) {
          int key = j0 + 8 * nb + 2 * qd + (i & 1), row = i >> 1;
          float v = key >= lo[row] && key <= pos[row] && key < kend ? s[nb][i] * sl : -3.0e38f;  // exp2 of it less the max: 0
          s[nb][i] = v;
          mx[row] = fmaxf(mx[row], v);
        }
      float corr[2], sum[2] = {0.0f, 0.0f};
      UNROLL for (int row = 0; row < 2; row++) {
        mx[row] = fmaxf(mx[row], simd_shuffle_xor(mx[row], 1));
        mx[row] = fmaxf(mx[row], simd_shuffle_xor(mx[row], 2));
        corr[row] = exp2f(a.m[row] - mx[row]);
        a.m[row] = mx[row];
      }
      UNROLL for (int nb = 0; nb < FA_BK / 8; nb++)
        for (int i = 0; i < 4; i++) {
          float p = exp2f(s[nb][i] - mx[i >> 1]);
          s[nb][i] = p;
          sum[i >> 1] += p;
        }
      UNROLL for (int row = 0; row < 2; row++) a.l[row] = a.l[row] * corr[row] + sum[row];  // a lane's share
      UNROLL for (int nb = 0; nb < FA_MAX_D / 16; nb++)
        for (int i = 0; i < 4; i++) a.o[nb][i] *= corr[i >> 1];
      // P as A fragments: the accumulators of key blocks 2kb and 2kb + 1 are
      // the halves of key block kb's fragment.
      UNROLL for (int kb = 0; kb < FA_BK / 16; kb++) {
        pa[kb][0] = fa_pack2(s[2 * kb][0], s[2 * kb][1]);
        pa[kb][1] = fa_pack2(s[2 * kb][2], s[2 * kb][3]);
        pa[kb][2] = fa_pack2(s[2 * kb + 1][0], s[2 * kb + 1][1]);
        pa[kb][3] = fa_pack2(s[2 * kb + 1][2], s[2 * kb + 1][3]);
      }
    }
    cp_async_wait_older();  // the values
    BARRIER();
    if (on) {
      UNROLL for (int kb = 0; kb < FA_BK / 16; kb++)
        for (int db = 0; db < FA_MAX_D / 32; db++) {
          if (db >= ndb) continue;
          uint b[4];
          ldsm_x4_trans_at(vLane + (uint)(2 * (16 * kb * FA_LD + 16 * db)), b);
          fa_mma(a.o[2 * db], pa[kb], b[0], b[1]);
          fa_mma(a.o[2 * db + 1], pa[kb], b[2], b[3]);
        }
    }
    BARRIER();  // every SIMD-group is done with the values
    if (j0 + FA_BK < kend) fa_load(Vs, vcache, head, j0 + FA_BK, kend, D, tid);
    cp_async_commit();
  }
  cp_async_wait_all();  // no copy outlives the threadgroup (an empty range's zero fills)
  UNROLL for (int row = 0; row < 2; row++) {
    a.l[row] += simd_shuffle_xor(a.l[row], 1);
    a.l[row] += simd_shuffle_xor(a.l[row], 2);
  }
}

// fa_tiled: the tile's queries t0.. of q-head h (16 a pair of SIMD-groups),
// normalised into out as bf16.
INLINE void fa_tiled(device const bf16_t *q, device const bf16_t *kcache, device const bf16_t *vcache,
                     device bf16_t *out, threadgroup bf16_t *Ks, threadgroup bf16_t *Vs, int T, int Hq, int D,
                     int Cap, int kvLen, float scale, int t0, int h, int kvh, int tid, int lane, int simd) {
  int g = lane >> 2, qd = lane & 3;
  int w0 = t0 + 16 * (simd & 3);  // the SIMD-group's first query
  long qoff[2];
  int pos[2];
  UNROLL for (int row = 0; row < 2; row++) {
    int t = w0 + g + 8 * row;
    qoff[row] = t < T ? ((long)t * (long)Hq + (long)h) * (long)D : -1;
    pos[row] = kvLen - T + t;  // it sees keys 0..pos
  }
  fa_acc a;
  int lo[2] = {0, 0};
  fa_core(a, q, qoff, lo, pos, w0 < T, kvLen - T + w0 + 15, kcache, vcache, Ks, Vs, (ulong)kvh * (ulong)Cap, 0,
          kvLen - T + imin(t0 + FA_BQ, T), D, scale, tid, lane, simd);
  int nkb = D / 16, half = (nkb + 1) / 2, db0 = (simd >> 2) * half, ndb = imin(nkb, db0 + half) - db0;
  UNROLL for (int row = 0; row < 2; row++) {
    if (qoff[row] < 0) continue;
    float inv = 1.0f / a.l[row];
    device bf16_t *dst = out + qoff[row] + 16 * db0;
    UNROLL for (int nb = 0; nb < FA_MAX_D / 16; nb++) {
      if (nb >= 2 * ndb) continue;
      *(device uint *)(dst + 8 * nb + 2 * qd) = fa_pack2(a.o[nb][2 * row] * inv, a.o[nb][2 * row + 1] * inv);
    }
  }
}

// fa_split: a kv-head's rows r = t·G + g (query t at position kvLen − T + t,
// q-head kvh·G + g; 16 a pair of SIMD-groups, r < T·G) over split s of their
// own keys (fa_split_range; the tile walks the rows' union, kfirst..kend−1),
// written as split s's partials: [Σ e^(score−m)·v | m | Σ e^(score−m)] (m in
// the scores' units; a row that sees none of the keys: o = 0, m = −3e38,
// l = 0).
INLINE void fa_split(device const bf16_t *q, device const bf16_t *kcache, device const bf16_t *vcache,
                     device float *partial, threadgroup bf16_t *Ks, threadgroup bf16_t *Vs, int T, int Hq, int Hkv,
                     int D, int Cap, int kvLen, int S, int s, int kvh, int kfirst, int kend, float scale, int tid,
                     int lane, int simd) {
  int g = lane >> 2, qd = lane & 3, G = Hq / Hkv, R = T * G;
  int r0 = 16 * (simd & 3);  // the SIMD-group's first row
  long qoff[2];
  int lo[2], pos[2], hrow[2], trow[2];
  UNROLL for (int row = 0; row < 2; row++) {
    int r = r0 + g + 8 * row, end;
    trow[row] = r / G;
    hrow[row] = kvh * G + r % G;
    qoff[row] = r < R ? ((long)trow[row] * (long)Hq + (long)hrow[row]) * (long)D : -1;
    fa_split_range(kvLen - T + trow[row] + 1, S, s, &lo[row], &end);
    pos[row] = end - 1;
  }
  fa_acc a;
  fa_core(a, q, qoff, lo, pos, r0 < R, kvLen - T + imin(r0 + 15, R - 1) / G, kcache, vcache, Ks, Vs,
          (ulong)kvh * (ulong)Cap, kfirst, kend, D, scale, tid, lane, simd);
  int nkb = D / 16, half = (nkb + 1) / 2, db0 = (simd >> 2) * half, ndb = imin(nkb, db0 + half) - db0;
  UNROLL for (int row = 0; row < 2; row++) {
    if (qoff[row] < 0) continue;
    bool none = a.l[row] == 0.0f;
    device float *dst = partial + (((ulong)trow[row] * (ulong)Hq + (ulong)hrow[row]) * (ulong)S + (ulong)s) * (ulong)(D + 2);
    UNROLL for (int nb = 0; nb < FA_MAX_D / 16; nb++) {
      if (nb >= 2 * ndb) continue;
      int d = 16 * db0 + 8 * nb + 2 * qd;
      dst[d] = a.o[nb][2 * row];
      dst[d + 1] = a.o[nb][2 * row + 1];
    }
    if (db0 == 0 && qd == 0) {
      dst[D] = none ? -3.0e38f : a.m[row] * (1.0f / FA_LOG2E);
      dst[D + 1] = a.l[row];
    }
  }
}
#endif

// attention_flash_bf16: attention_bf16 (the same arguments and result, up to
// bf16 rounding of the softmax weights) for a prompt's many queries. Query
// tiles of FA_BQ tokens of one q-head; the last tiles (the most keys) first.
// launch: grid(ceil(T, FA_BQ) * Hq) group(FA_THREADS)
// requires: D <= FA_MAX_D
KERNEL(attention_flash_bf16,
       BUFFER(const bf16_t, q, 0),
       BUFFER(const bf16_t, kcache, 1),
       BUFFER(const bf16_t, vcache, 2),
       BUFFER(bf16_t, out, 3),
       PARAM(int, T, 4),
       PARAM(int, Hq, 5),
       PARAM(int, Hkv, 6),
       PARAM(int, D, 7),
       PARAM(int, Cap, 8),
       PARAM(int, kvLen, 9),
       PARAM(float, scale, 10)) {
  GRID_WAIT_COMPUTE();
  int tiles = (T + FA_BQ - 1) / FA_BQ;
  int h = TGID_X % Hq, t0 = (tiles - 1 - TGID_X / Hq) * FA_BQ;
  int kvh = h / (Hq / Hkv);
#if defined(MMA_WARP_NATIVE)
  TG_MEM_ALIGNED16(bf16_t, Ks, FA_BK * FA_LD);
  TG_MEM_ALIGNED16(bf16_t, Vs, FA_BK * FA_LD);
  if (D % 16 == 0) {  // uniform
    fa_tiled(q, kcache, vcache, out, Ks, Vs, T, Hq, D, Cap, kvLen, scale, t0, h, kvh, TID_X, LANE, SIMD_ID);
    return;
  }
#endif
  fa_plain(q, kcache, vcache, out, T, Hq, D, Cap, kvLen, scale, t0, h, kvh, LANE, SIMD_ID, SIMD_COUNT);
}

// attention_split_mma_f32: split-KV attention's first half (attention_merge_bf16
// is the second) on the matrix units for decode and short verifies: one
// threadgroup a (kv-head, range) runs all T·G rows of the kv-head's q-heads
// (G = Hq/Hkv) as fa_split, each row's keys cut into S ranges by
// fa_split_range (its own keys, in whole blocks: a row's partials are those
// of a launch of its query alone), written as attention_split_f32's partials. Where
// attention_split_f32 gives each query head a SIMD-group and sums every key's
// products over the lanes (at 32K, 82 µs an attention layer on an H200: its
// instructions, not the 67 MB of keys and values, bound it), here two
// mma.sync products a block of 32 keys serve all eight heads of a group.
// launch: grid(Hkv * S) group(FA_THREADS)
// requires: D <= FA_MAX_D
// requires: T * Hq <= Hkv * FA_BQ
KERNEL(attention_split_mma_f32,
       BUFFER(const bf16_t, q, 0),
       BUFFER(const bf16_t, kcache, 1),
       BUFFER(const bf16_t, vcache, 2),
       BUFFER(float, partial, 3),
       PARAM(int, T, 4),
       PARAM(int, Hq, 5),
       PARAM(int, Hkv, 6),
       PARAM(int, D, 7),
       PARAM(int, Cap, 8),
       PARAM(int, kvLen, 9),
       PARAM(int, S, 10),
       PARAM(float, scale, 11)) {
  GRID_WAIT();
  int kvh = TGID_X / S, s = TGID_X % S;
  // The rows' ranges only grow with their keys: the union is the first
  // row's start to the last row's end.
  int kfirst, kend, unused;
  fa_split_range(kvLen - T + 1, S, s, &kfirst, &unused);
  fa_split_range(kvLen, S, s, &unused, &kend);
#if defined(MMA_WARP_NATIVE)
  TG_MEM_ALIGNED16(bf16_t, Ks, FA_BK * FA_LD);
  TG_MEM_ALIGNED16(bf16_t, Vs, FA_BK * FA_LD);
  if (D % 16 == 0) {  // uniform
    fa_split(q, kcache, vcache, partial, Ks, Vs, T, Hq, Hkv, D, Cap, kvLen, S, s, kvh, kfirst, kend, scale, TID_X, LANE,
             SIMD_ID);
    return;
  }
#endif
  fa_split_plain(q, kcache, vcache, partial, T, Hq, Hkv, D, Cap, kvLen, S, s, kvh, scale, LANE, SIMD_ID,
                 SIMD_COUNT);
}

// attention_split_mma_batch_f32: attention_split_mma_f32 of one query for
// each of B sequences (a batched decode step): row r of q [B, Hq, D] over the
// keys 0..seqs[r, 1] of slot seqs[r, 0]'s caches (i32 [B, 3] as
// attention_batch_bf16 takes it; the slots' caches [Hkv, Cap, D] lie stride
// elements apart from kcache and vcache, slot 0's) into row r of partial [B,
// Hq, S, D+2], as a launch of it alone computes it; only the rows of split
// keys or more.
// launch: grid(B * Hkv * S) group(FA_THREADS)
// requires: D <= FA_MAX_D
// requires: Hq <= Hkv * FA_BQ
KERNEL(attention_split_mma_batch_f32,
       BUFFER(const bf16_t, q, 0),
       BUFFER(const bf16_t, kcache, 1),
       BUFFER(const bf16_t, vcache, 2),
       BUFFER(const int, seqs, 3),
       BUFFER(float, partial, 4),
       PARAM(int, B, 5),
       PARAM(int, Hq, 6),
       PARAM(int, Hkv, 7),
       PARAM(int, D, 8),
       PARAM(int, Cap, 9),
       PARAM(int, S, 10),
       PARAM(int, split, 11),
       PARAM(int, stride, 12),
       PARAM(float, scale, 13)) {
  GRID_WAIT();
  int r = TGID_X / (Hkv * S), item = TGID_X % (Hkv * S);
  if (r >= B) return;
  int kvLen = seqs[3 * r + 1] + 1;
  if (kvLen < split) return;  // uniform across the threadgroup
  ulong at = (ulong)seqs[3 * r] * (ulong)stride;
  device const bf16_t *qr = q + (ulong)r * (ulong)(Hq * D);
  device float *pr = partial + (ulong)r * (ulong)(Hq * S * (D + 2));
  int kvh = item / S, s = item % S;
  int kfirst, kend;
  fa_split_range(kvLen, S, s, &kfirst, &kend);
#if defined(MMA_WARP_NATIVE)
  TG_MEM_ALIGNED16(bf16_t, Ks, FA_BK * FA_LD);
  TG_MEM_ALIGNED16(bf16_t, Vs, FA_BK * FA_LD);
  if (D % 16 == 0) {  // uniform
    fa_split(qr, kcache + at, vcache + at, pr, Ks, Vs, 1, Hq, Hkv, D, Cap, kvLen, S, s, kvh, kfirst, kend, scale, TID_X,
             LANE, SIMD_ID);
    return;
  }
#endif
  fa_split_plain(qr, kcache + at, vcache + at, pr, 1, Hq, Hkv, D, Cap, kvLen, S, s, kvh, scale, LANE,
                 SIMD_ID, SIMD_COUNT);
}
