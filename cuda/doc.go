// Package cuda is the NVIDIA backend: purego over the driver API (libcuda.so.1)
// and NVRTC (libnvrtc.so), with no cgo and no CUDA toolkit needed at build time.
//
// Kernels are the portable ones of kernels/ (kernels.CUDASource). At first use
// the device compiles them with NVRTC for its compute capability (sm_90 on
// H100/H200) and caches the cubin on disk under os.UserCacheDir()/bagel/cuda,
// keyed by the hash of source, architecture and options. Where NVRTC is absent
// (a machine with only the driver), the PTX embedded in this package (cuda/ptx,
// built from the same sources by `make ptx`) is JIT-compiled by the driver.
//
// Threading: the CUDA context is current on one OS thread. Every call on a
// Device, New included, must come from one goroutine locked to its OS thread
// with runtime.LockOSThread; the engine's device goroutine guarantees this, and
// tests lock the test goroutine. Calls from another thread fail with
// CUDA_ERROR_INVALID_CONTEXT.
//
// Ordering: kernels are launched on one stream as they are dispatched, so the
// GPU starts while the host records; Submit returns the first launch error of
// the encoder and counts a command buffer. Write and Alloc's zero fill are
// ordered after earlier launches (the stream is a blocking one, which
// synchronises with the legacy default stream that cuMemcpyHtoD uses); Read
// waits for the stream and counts a host sync.
package cuda
