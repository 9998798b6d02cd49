// Package metal is the Apple GPU backend: a backend.Device over Metal, built on
// the thin binding in metal/mtl (purego and its objc package, no cgo). Off
// macOS the same code runs on mtl's simulator when BAGEL_METAL_SIM=1 (each
// dispatch runs the CPU backend's kernel of that name); without it New says
// that Metal needs macOS.
//
//   - Kernels: one library compiled at New from kernels.MetalSource (the
//     portable kernels through prelude_metal.h) with MSL 3.1 set explicitly and
//     read back; compile errors carry the Metal compiler's log. Pipelines are
//     made at a kernel's first dispatch and cached by name.
//   - Memory: Alloc makes shared-storage buffers (unified memory, the CPU reads
//     them in place). WrapHost wraps a caller's memory, an mmap'd safetensors
//     file, without a copy: see pages.go for page rounding and for how a file
//     larger than the device's maxBufferLength is split into overlapping
//     buffers so that every tensor still lies inside one.
//   - Residency: one MTLResidencySet (macOS 15+, switch "residency-set") holds
//     every wrapped and allocated buffer and is attached to the queue.
//   - Submission: an Encoder records into one command buffer with one compute
//     encoder; Submit commits without waiting; at most 64 command buffers (or
//     BAGEL_MAX_COMMAND_BUFFERS) are in flight; Read waits. Each completed
//     command buffer's GPU time is kept (GPUTime).
//
// Threading: New and every method run on one goroutine locked to its OS thread
// (the engine's device goroutine); each method is one autorelease pool.
//
// Nothing in this package has run on a Mac yet, only on the simulator;
// README.md says what that means.
package metal
