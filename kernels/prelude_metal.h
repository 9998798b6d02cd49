// Prelude for the Metal backend: maps the portable kernel dialect to native MSL.
// Every kernels/*.metal file is appended to this text and compiled as one library.
//
// The dialect (see docs in prelude_cuda.h for the CUDA side):
//   KERNEL(name, args...)      a kernel; its arguments are BUFFER and PARAM entries.
//   BUFFER(type, name, index)  a device pointer, bound at [[buffer(index)]].
//   PARAM(type, name, index)   a scalar passed by value (setBytes on Metal).
//   TGID_X, TID_X, TG_SIZE_X, LANE, SIMD_ID, SIMD_COUNT
//                              threadgroup id, thread id in the threadgroup,
//                              threadgroup size, lane in the SIMD-group (warp),
//                              SIMD-group index and count in the threadgroup.
//   TG_MEM(type, name, n)      a threadgroup (shared) array in a kernel body.
//   TG_MEM_ALIGNED16(type, name, n)
//                              the same, starting at a 16-byte boundary.
//   BARRIER()                  threadgroup barrier over threadgroup memory.
//   DEVICE_BARRIER()           threadgroup barrier that also orders device memory.
//   bf16_t, load/store helpers, simd_sum/simd_max/simd_shuffle_xor, imin/imax,
//   and the C math names (expf, logf, ...) mapped to precise Metal math.
#include <metal_stdlib>
using namespace metal;

typedef ushort bf16_t;

#define INLINE inline
// UNROLL before a loop over a register array with a constant trip count (see
// prelude_cuda.h).
#define UNROLL _Pragma("clang loop unroll(full)")
// NO_UNROLL: see prelude_cuda.h.
#define NO_UNROLL _Pragma("clang loop unroll(disable)")

// BOUNDS: see prelude_cuda.h; Metal sizes its registers itself.
#define BOUNDS(threads, groups) ~,
#define MAXNREG(n) ~,

#define KERNEL(name, ...)                                                 \
  kernel void name(__VA_ARGS__,                                           \
                   uint3 bagel_tgid [[threadgroup_position_in_grid]],     \
                   uint3 bagel_tid [[thread_position_in_threadgroup]],    \
                   uint3 bagel_tgsize [[threads_per_threadgroup]],        \
                   uint bagel_lane [[thread_index_in_simdgroup]],         \
                   uint bagel_simd [[simdgroup_index_in_threadgroup]])
#define BUFFER(type, name, index) device type *name [[buffer(index)]]
#define PARAM(type, name, index) constant type &name [[buffer(index)]]

#define TGID_X ((int)bagel_tgid.x)
#define TID_X ((int)bagel_tid.x)
#define TG_SIZE_X ((int)bagel_tgsize.x)
#define LANE ((int)bagel_lane)
#define SIMD_ID ((int)bagel_simd)
#define SIMD_COUNT ((int)(bagel_tgsize.x / 32))

#define TG_MEM(type, name, n) threadgroup type name[n]
// Threadgroup allocations start 16-byte aligned on Metal.
#define TG_MEM_ALIGNED16(type, name, n) threadgroup type name[n]
#define BARRIER() threadgroup_barrier(mem_flags::mem_threadgroup)
#define SIMD_BARRIER() simdgroup_barrier(mem_flags::mem_threadgroup)
#define DEVICE_BARRIER() \
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup)

// Precise math: Metal compiles with fast math by default; the CPU reference is exact.
#define expf(x) metal::precise::exp(x)
#define logf(x) metal::precise::log(x)
#define sqrtf(x) metal::precise::sqrt(x)
#define rsqrtf(x) metal::precise::rsqrt(x)
#define cosf(x) metal::precise::cos(x)
#define sinf(x) metal::precise::sin(x)
#define powf(x, y) metal::precise::pow(x, y)
#define tanhf(x) metal::precise::tanh(x)
#define fmaxf(x, y) metal::fmax(x, y)
#define fminf(x, y) metal::fmin(x, y)
#define fabsf(x) metal::fabs(x)

INLINE float as_float(uint u) { return as_type<float>(u); }
#define fmaf(a, b, c) metal::fma(a, b, c)
// byte_f128(v, j): see prelude_cuda.h; here a shift and a mask.
INLINE float byte_f128(uint v, uint j) {
  uint b = j < 2u ? v << (16u - 8u * j) : v >> (8u * j - 16u);
  return as_type<float>((b & 0x00ff0000u) | 0x43000000u);
}

// u32x4 is four words moved as one 16-byte load or store (16-byte aligned).
typedef uint4 u32x4;
INLINE u32x4 u32x4_zero() { return uint4(0u); }
INLINE u32x4 u32x4_make(uint x, uint y, uint z, uint w) {
  uint4 v;
  v.x = x;
  v.y = y;
  v.z = z;
  v.w = w;
  return v;
}
INLINE uint as_uint(float f) { return as_type<uint>(f); }
// simd_ballot_bits: bit l set where lane l's b holds (Apple's SIMD-groups
// are 32 lanes: the vote's low word).
INLINE uint simd_ballot_bits(bool b) { return (uint)((simd_vote::vote_t)simd_ballot(b)); }
INLINE int popcount_u32(uint v) { return (int)popcount(v); }
// GRID_WAIT(): see prelude_cuda.h. Metal orders the dispatches of a command
// buffer itself; there is nothing to wait for.
#define GRID_WAIT()
#define GRID_WAIT_COMPUTE()

// ALIGNED16(p) says p may be read in 16-byte pieces (u32x4). MSL has no
// pointer-to-integer conversion, so Metal keeps the 4-byte paths for now; the
// host knows each tensor's offset and could pass it (planned).
// PREFETCH_L2(p): see prelude_cuda.h; nothing here (planned: Metal has no
// prefetch instruction; a load whose result is unused may do).
#define PREFETCH_L2(p)
#define ALIGNED16(p) false
