//go:build linux

package cuda

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// cuResult is a CUresult of the driver API; 0 is CUDA_SUCCESS.
type cuResult int32

// Device attributes (CUdevice_attribute) read by New.
const (
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
)

// driver holds the driver API entry points. The _v2 symbols are the ones the
// CUDA headers map the plain names to since CUDA 4 (64-bit sizes and pointers).
type driver struct {
	cuInit                    func(flags uint32) cuResult
	cuDriverGetVersion        func(v *int32) cuResult
	cuDeviceGetCount          func(n *int32) cuResult
	cuDeviceGet               func(dev *int32, ordinal int32) cuResult
	cuDeviceGetName           func(name *byte, n int32, dev int32) cuResult
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) cuResult
	cuDeviceTotalMem          func(bytes *uint64, dev int32) cuResult
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxRelease func(dev int32) cuResult
	cuCtxSetCurrent           func(ctx uintptr) cuResult
	cuStreamCreate            func(stream *uintptr, flags uint32) cuResult
	cuStreamDestroy           func(stream uintptr) cuResult
	cuStreamSynchronize       func(stream uintptr) cuResult
	cuMemAlloc                func(ptr *uint64, n uint64) cuResult
	cuMemFree                 func(ptr uint64) cuResult
	cuMemsetD8                func(ptr uint64, v uint8, n uint64) cuResult
	cuMemcpyHtoD              func(dst uint64, src unsafe.Pointer, n uint64) cuResult
	cuMemcpyHtoDAsync         func(dst uint64, src unsafe.Pointer, n uint64, stream uintptr) cuResult
	cuMemcpyDtoH              func(dst unsafe.Pointer, src uint64, n uint64) cuResult
	cuModuleLoadData          func(mod *uintptr, image unsafe.Pointer) cuResult
	cuModuleUnload            func(mod uintptr) cuResult
	cuModuleGetFunction       func(fn *uintptr, mod uintptr, name string) cuResult
	cuLaunchKernel            func(fn uintptr, gx, gy, gz, bx, by, bz, sharedBytes uint32, stream uintptr, params, extra unsafe.Pointer) cuResult
	cuEventCreate             func(ev *uintptr, flags uint32) cuResult
	cuEventRecord             func(ev, stream uintptr) cuResult
	cuEventElapsedTime        func(ms *float32, start, end uintptr) cuResult
	cuEventDestroy            func(ev uintptr) cuResult
	cuEventSynchronize        func(ev uintptr) cuResult
	cuMemAllocHost            func(ptr *unsafe.Pointer, n uint64) cuResult
	cuMemFreeHost             func(ptr unsafe.Pointer) cuResult
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uint64, n uint64, stream uintptr) cuResult
	cuGetErrorName            func(r cuResult, s *uintptr) cuResult
	cuGetErrorString          func(r cuResult, s *uintptr) cuResult

	// CUDA graphs (graph.go); nil when the driver lacks them, and then every
	// launch is direct.
	graphs   *graphAPI
	graphErr error // why graphs is nil
}

// graphAPI is the part of the driver API that builds and replays CUDA graphs.
type graphAPI struct {
	cuGraphCreate                  func(graph *uintptr, flags uint32) cuResult
	cuGraphDestroy                 func(graph uintptr) cuResult
	cuGraphAddKernelNode           func(node *uintptr, graph uintptr, deps *uintptr, numDeps uintptr, p *kernelNodeParams) cuResult
	cuGraphInstantiateWithFlags    func(exec *uintptr, graph uintptr, flags uint64) cuResult
	cuGraphExecKernelNodeSetParams func(exec, node uintptr, p *kernelNodeParams) cuResult
	cuGraphLaunch                  func(exec, stream uintptr) cuResult
	cuGraphExecDestroy             func(exec uintptr) cuResult
	// cuGraphAddDependencies_v2 (CUDA 12.3+) adds edges with edge data: the
	// programmatic edges of dependent launch. Nil on an older driver.
	cuGraphAddDependencies func(graph uintptr, from, to *uintptr, data *graphEdgeData, n uintptr) cuResult
}

// graphEdgeData is CUgraphEdgeData: an edge's ports and type.
type graphEdgeData struct {
	fromPort, toPort, kind uint8
	_                      [5]uint8
}

// A programmatic edge (CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC) from the
// programmatic port (CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC): the next kernel
// may start once every block of the previous one has exited (or triggered),
// and waits in griddepcontrol.wait (GRID_WAIT) for its completion.
var programmaticEdge = graphEdgeData{fromPort: 1, toPort: 0, kind: 1}

// kernelNodeParams is CUDA_KERNEL_NODE_PARAMS_v2 (72 bytes); the _v1 calls read
// its first 56 bytes, which are the v1 struct.
type kernelNodeParams struct {
	fn                     uintptr
	gridX, gridY, gridZ    uint32
	blockX, blockY, blockZ uint32
	sharedBytes            uint32
	_                      uint32
	params                 unsafe.Pointer // void**: one pointer per argument
	extra                  unsafe.Pointer
	kern                   uintptr // CUkernel: 0, fn is set
	ctx                    uintptr // 0: the current context
}

// loadGraphAPI binds the graph entry points, preferring the _v2 names that the
// CUDA 12.3+ headers map the plain ones to. A missing one leaves graphs off.
func loadGraphAPI(lib uintptr) (*graphAPI, error) {
	g := &graphAPI{}
	syms := []struct {
		fn    any
		names []string
	}{
		{&g.cuGraphCreate, []string{"cuGraphCreate"}},
		{&g.cuGraphDestroy, []string{"cuGraphDestroy"}},
		{&g.cuGraphAddKernelNode, []string{"cuGraphAddKernelNode_v2", "cuGraphAddKernelNode"}},
		{&g.cuGraphInstantiateWithFlags, []string{"cuGraphInstantiateWithFlags"}},
		{&g.cuGraphExecKernelNodeSetParams, []string{"cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams"}},
		{&g.cuGraphLaunch, []string{"cuGraphLaunch"}},
		{&g.cuGraphExecDestroy, []string{"cuGraphExecDestroy"}},
	}
	if register(&g.cuGraphAddDependencies, lib, "cuGraphAddDependencies_v2") != nil {
		g.cuGraphAddDependencies = nil
	}
	for _, s := range syms {
		var err error
		for _, name := range s.names {
			if err = register(s.fn, lib, name); err == nil {
				break
			}
		}
		if err != nil {
			return nil, fmt.Errorf("libcuda.so.1 lacks %s: %w", s.names[0], err)
		}
	}
	return g, nil
}

// loadDriver opens libcuda.so.1 and binds the entry points. A missing library
// is the "no CUDA driver" case the engine answers by falling back to the CPU.
func loadDriver() (*driver, error) {
	var lib uintptr
	var errs []string
	for _, name := range []string{"libcuda.so.1", "libcuda.so"} {
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			lib = h
			break
		}
		errs = append(errs, err.Error())
	}
	if lib == 0 {
		return nil, fmt.Errorf("cuda: no CUDA driver (libcuda.so.1 not loadable: %v)", errs)
	}
	d := &driver{}
	syms := []struct {
		fn   any
		name string
	}{
		{&d.cuInit, "cuInit"},
		{&d.cuDriverGetVersion, "cuDriverGetVersion"},
		{&d.cuDeviceGetCount, "cuDeviceGetCount"},
		{&d.cuDeviceGet, "cuDeviceGet"},
		{&d.cuDeviceGetName, "cuDeviceGetName"},
		{&d.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
		{&d.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
		{&d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
		{&d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
		{&d.cuCtxSetCurrent, "cuCtxSetCurrent"},
		{&d.cuStreamCreate, "cuStreamCreate"},
		{&d.cuStreamDestroy, "cuStreamDestroy_v2"},
		{&d.cuStreamSynchronize, "cuStreamSynchronize"},
		{&d.cuMemAlloc, "cuMemAlloc_v2"},
		{&d.cuMemFree, "cuMemFree_v2"},
		{&d.cuMemsetD8, "cuMemsetD8_v2"},
		{&d.cuMemcpyHtoD, "cuMemcpyHtoD_v2"},
		{&d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
		{&d.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
		{&d.cuModuleLoadData, "cuModuleLoadData"},
		{&d.cuModuleUnload, "cuModuleUnload"},
		{&d.cuModuleGetFunction, "cuModuleGetFunction"},
		{&d.cuLaunchKernel, "cuLaunchKernel"},
		{&d.cuEventCreate, "cuEventCreate"},
		{&d.cuEventRecord, "cuEventRecord"},
		{&d.cuEventElapsedTime, "cuEventElapsedTime"},
		{&d.cuEventDestroy, "cuEventDestroy_v2"},
		{&d.cuEventSynchronize, "cuEventSynchronize"},
		{&d.cuMemAllocHost, "cuMemAllocHost_v2"},
		{&d.cuMemFreeHost, "cuMemFreeHost"},
		{&d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
		{&d.cuGetErrorName, "cuGetErrorName"},
		{&d.cuGetErrorString, "cuGetErrorString"},
	}
	for _, s := range syms {
		if err := register(s.fn, lib, s.name); err != nil {
			return nil, fmt.Errorf("cuda: no CUDA driver: libcuda.so.1 lacks %s (driver too old?): %w", s.name, err)
		}
	}
	d.graphs, d.graphErr = loadGraphAPI(lib)
	return d, nil
}

// register binds one symbol, turning purego's panic on a missing one into an error.
func register(fn any, lib uintptr, name string) (err error) {
	if _, err := purego.Dlsym(lib, name); err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	purego.RegisterLibFunc(fn, lib, name)
	return nil
}

// check turns a CUresult into an error naming the call (and, where given, the
// kernel), e.g. "cuda: cuLaunchKernel (attention_bf16): CUDA_ERROR_INVALID_VALUE: invalid argument".
func (d *driver) check(r cuResult, call string, kernel string) error {
	if r == 0 {
		return nil
	}
	var name, desc uintptr
	d.cuGetErrorName(r, &name)
	d.cuGetErrorString(r, &desc)
	where := call
	if kernel != "" {
		where += " (" + kernel + ")"
	}
	return fmt.Errorf("cuda: %s: %s (%d): %s", where, cString(name, fmt.Sprint("CUDA error")), int(r), cString(desc, "unknown error"))
}

// cString copies a NUL-terminated C string; fallback when p is NULL.
func cString(p uintptr, fallback string) string {
	if p == 0 {
		return fallback
	}
	var b []byte
	for i := uintptr(0); ; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(nil), p+i)) // C memory owned by the driver
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}
