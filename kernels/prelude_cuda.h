// Prelude for the CUDA backend: maps the portable kernel dialect (see
// prelude_metal.h for the list of macros) to CUDA C++, compiled at run time by
// NVRTC. No headers are included: NVRTC provides the CUDA builtins.
//
// The program is compiled with --device-as-default-execution-space, so helper
// functions need no __device__: NVRTC defines __device__ as a macro that
// expands to __attribute__((device)), which the `device` macro at the end of
// this file would empty wherever a helper is declared.
//
// Apple SIMD-groups and CUDA warps are both 32 lanes, so simd_* map to warp
// shuffles over the full mask; every lane of a warp must reach them.

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long long ulong;
typedef unsigned short bf16_t;

#define INLINE __forceinline__

// CVT_BF16: the device rounds f32 to bf16 itself (sm_80+: cvt.rn.bf16.f32,
// round to nearest even as common.h's integer rounding, subnormals kept), so
// common.h's f32_to_bf16 and round_bf16 take one instruction for the several
// of the integer rounding. The compute_75 PTX keeps the integer rounding.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define CVT_BF16 1
#endif
// UNROLL before a loop over a register array with a constant trip count: an
// array indexed by a loop variable that is not unrolled lives in local memory.
#define UNROLL _Pragma("unroll")
// NO_UNROLL keeps a loop rolled: one copy of its body where the copies would
// only cost instruction cache (a kernel's code is fetched cold at each launch).
#define NO_UNROLL _Pragma("unroll 1")

// A kernel asks for a register budget by defining KERNEL_BOUNDS_<name> as
// BOUNDS(threads per group, groups per multiprocessor): ptxas then keeps the
// registers low enough for that many groups (__launch_bounds__). Other kernels
// get none (the probe below expands to nothing for an undefined name); a
// global --maxrregcount instead made the decode GEMVs take every register it
// allowed, and run slower.
#define BOUNDS(threads, groups) ~, __launch_bounds__(threads, groups)
// MAXNREG(n) caps a kernel's registers a thread at n (CUDA 12.4's __maxnreg__),
// for a kernel whose threadgroup size varies; older compilers get no cap.
#if defined(__CUDACC_VER_MAJOR__) && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define MAXNREG(n) ~, __maxnreg__(n)
#else
#define MAXNREG(n) ~,
#endif
#define KERNEL_BOUNDS_SECOND(a, b, ...) b
#define KERNEL_BOUNDS_PROBE(x) KERNEL_BOUNDS_SECOND(x, , )
#define KERNEL_BOUNDS_OF(name) KERNEL_BOUNDS_PROBE(KERNEL_BOUNDS_##name)
#define KERNEL(name, ...) extern "C" __global__ void KERNEL_BOUNDS_OF(name) name(__VA_ARGS__)
#define BUFFER(type, name, index) type *name
#define PARAM(type, name, index) const type name

#define TGID_X ((int)blockIdx.x)
#define TID_X ((int)threadIdx.x)
#define TG_SIZE_X ((int)blockDim.x)
#define LANE ((int)(threadIdx.x & 31u))
#define SIMD_ID ((int)(threadIdx.x >> 5))
#define SIMD_COUNT ((int)(blockDim.x >> 5))

#define TG_MEM(type, name, n) __shared__ type name[n]
#define TG_MEM_ALIGNED16(type, name, n) __shared__ __align__(16) type name[n]
#define BARRIER() __syncthreads()
// SIMD_BARRIER orders a SIMD-group's threadgroup-memory writes before its
// lanes' later reads.
#define SIMD_BARRIER() __syncwarp()
#define DEVICE_BARRIER() __syncthreads()

INLINE float as_float(uint u) { return __uint_as_float(u); }
#ifdef CVT_BF16
// cvt_rn_bf16 is f rounded to bf16 by the device (a NaN becomes the canonical
// NaN: common.h's f32_to_bf16 keeps a NaN's bits itself).
INLINE bf16_t cvt_rn_bf16(float f) {
  bf16_t r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
}
#endif
// byte_f128(v, j) is 128 + byte j of v (j a constant 0..3), exactly, for a
// byte below 128 (a 4-bit code): one byte permute puts the byte in the
// mantissa under the exponent of 128 (bits 0x43000000), where a unit of bit 16
// is 1; a byte of 128 or more would reach the exponent.
#define byte_f128(v, j) __uint_as_float(__byte_perm((v), 0x43000000u, 0x7044u | ((uint)(j) << 8)))

// u32x4 is four words moved as one 16-byte load or store (16-byte aligned).
struct __align__(16) u32x4 {
  uint x, y, z, w;
};
INLINE u32x4 u32x4_zero() {
  u32x4 v = {0u, 0u, 0u, 0u};
  return v;
}
INLINE u32x4 u32x4_make(uint x, uint y, uint z, uint w) {
  u32x4 v = {x, y, z, w};
  return v;
}
INLINE uint as_uint(float f) { return __float_as_uint(f); }
// GRID_WAIT() waits until the kernels launched before this one have finished
// and their writes are visible. Launched in order on a stream it returns at
// once; in a graph whose kernels are joined by programmatic edges (Hopper's
// programmatic dependent launch, graph_linux.go), a kernel's blocks start while
// the previous kernel drains, and must call it before touching memory that
// kernel writes or reads (the weights may be read before it). Every kernel
// calls it; sm_90 and later only.
//
// After the wait a block also lets the next kernel launch
// (griddepcontrol.launch_dependents): once every block of this kernel has
// passed its wait, the next kernel's blocks take the room left on the SMs and
// start their weight loads while this kernel computes, so a decode step's
// small kernels no longer each pay DRAM latency and a launch ramp in turn
// (H200, 35B-A3B: 2.86 → 2.58 ms a token). Only one kernel runs ahead: its own
// blocks trigger after their wait, that is after this kernel has finished.
// So when a kernel's blocks run at all, the kernel two launches back has
// finished and its writes are visible: a kernel may read before its wait what
// that one or an earlier one wrote (moe_down_bf16 reads the router's expert
// ids, two launches back, to start loading its experts' weights), never what
// the kernel just before it writes.
// GRID_WAIT_COMPUTE() waits without the trigger: the compute-bound prompt
// kernels (GEMMs, the chunked GDN rule) lose more to blocks parked beside them
// than they gain (prefill 2048: 260 ms with the trigger, 251 without it there,
// 248 with none). PDL_TRIGGER 0 (common.h) turns the trigger off everywhere.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define GRID_WAIT()                                                      \
  do {                                                                   \
    asm volatile("griddepcontrol.wait;" ::: "memory");                   \
    if (PDL_TRIGGER) asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); \
  } while (0)
#define GRID_WAIT_COMPUTE() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define GRID_WAIT()
#define GRID_WAIT_COMPUTE()
#endif

// PREFETCH_L2(p) asks for the 128-byte line at p to be brought into L2 and
// waits for nothing: a later load of it then pays L2's latency, not DRAM's.
#define PREFETCH_L2(p) asm volatile("prefetch.global.L2 [%0];" ::"l"(p))

// ALIGNED16(p) says p may be read in 16-byte pieces (u32x4).
#define ALIGNED16(p) ((((ulong)(p)) & 15ull) == 0ull)

INLINE float simd_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
INLINE float simd_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
INLINE float simd_shuffle_xor(float v, uint mask) { return __shfl_xor_sync(0xffffffffu, v, (int)mask); }
INLINE int simd_shuffle_xor(int v, uint mask) { return __shfl_xor_sync(0xffffffffu, v, (int)mask); }
INLINE uint simd_shuffle_xor(uint v, uint mask) { return __shfl_xor_sync(0xffffffffu, v, (int)mask); }
INLINE float simd_shuffle(float v, ushort lane) { return __shfl_sync(0xffffffffu, v, (int)lane); }
INLINE uint simd_shuffle(uint v, ushort lane) { return __shfl_sync(0xffffffffu, v, (int)lane); }
// simd_ballot_bits: bit l set where lane l's b holds (a 32-lane SIMD-group).
INLINE uint simd_ballot_bits(bool b) { return __ballot_sync(0xffffffffu, b); }
INLINE int popcount_u32(uint v) { return __popc(v); }

// Address-space qualifiers of the dialect mean nothing to CUDA (pointers are
// generic). They are defined last: defining `device` before any CUDA text would
// break `__device__`.
#define device
#define constant
#define thread
#define threadgroup
