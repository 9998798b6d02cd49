// The CUDA builtins the kernels use, declared for clang's CUDA front end
// without a CUDA toolkit (tools/cudacheck.sh): NVRTC provides them at run
// time. Declarations only: the check parses and type-checks, never links.
#define __forceinline__ __attribute__((always_inline)) inline
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __align__(n) __attribute__((aligned(n)))
struct cudacheck_dim3 {
  unsigned x, y, z;
};
extern const __device__ cudacheck_dim3 threadIdx, blockIdx, blockDim, gridDim;
__device__ float __uint_as_float(unsigned);
__device__ unsigned __float_as_uint(float);
__device__ float __int_as_float(int);
__device__ int __float_as_int(float);
__device__ float __shfl_sync(unsigned, float, int);
__device__ int __shfl_sync(unsigned, int, int);
__device__ unsigned __shfl_sync(unsigned, unsigned, int);
__device__ float __shfl_xor_sync(unsigned, float, int);
__device__ int __shfl_xor_sync(unsigned, int, int);
__device__ unsigned __shfl_xor_sync(unsigned, unsigned, int);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ unsigned __match_any_sync(unsigned, int);
__device__ void __syncthreads();
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
__device__ int __popc(unsigned);
__device__ int __clz(int);
__device__ int __ffs(int);
__device__ unsigned __byte_perm(unsigned, unsigned, unsigned);
__device__ float expf(float);
__device__ float __expf(float);
__device__ float exp2f(float);
__device__ float logf(float);
__device__ float log2f(float);
__device__ float log1pf(float);
__device__ float powf(float, float);
__device__ float sqrtf(float);
__device__ float rsqrtf(float);
__device__ float fabsf(float);
__device__ float fmaxf(float, float);
__device__ float fminf(float, float);
__device__ float fmaf(float, float, float);
__device__ float tanhf(float);
__device__ float erff(float);
__device__ float sinf(float);
__device__ float cosf(float);
__device__ void sincosf(float, float *, float *);
__device__ void __sincosf(float, float *, float *);
__device__ float floorf(float);
__device__ float ceilf(float);
__device__ float roundf(float);
__device__ float truncf(float);
__device__ float copysignf(float, float);
__device__ float __fdividef(float, float);
__device__ int isnan(float);
__device__ int isinf(float);
__device__ unsigned long long clock64();
// The program compiles with --device-as-default-execution-space: every
// helper is a device function.
#pragma clang force_cuda_host_device begin
