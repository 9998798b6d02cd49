package mtl

import (
	"structs"
	"unsafe"
)

// The API of the package, shared by its two implementations, chosen by build
// constraint: the purego/objc binding of Metal.framework (mtl_darwin.go,
// runtime_darwin.go; darwin without the tag metalsim) and the simulator that
// runs each dispatch with the CPU backend's kernel of the same name (sim_*.go;
// every other build, and darwin with -tags metalsim). Each Metal object is a
// small value type (an objc.ID, or a pointer to the simulated object) whose
// zero value is nil. The interfaces below spell out every method the backend
// may call; the assertions make a method that one implementation lacks or
// types differently a compile error on that side.

// SimulatorEnv is the environment variable that turns the simulator on
// (BAGEL_METAL_SIM=1); the simulator's Enabled is the one place it is read.
const SimulatorEnv = "BAGEL_METAL_SIM"

// ResourceStorageModeShared is MTLResourceStorageModeShared |
// MTLResourceCPUCacheModeDefaultCache | default hazard tracking: memory the CPU
// and GPU both address (unified memory).
const ResourceStorageModeShared = 0

// Size is MTLSize: a grid or threadgroup extent (three NSUIntegers, 24 bytes:
// passed by reference under the arm64 ABI, which purego handles).
type Size struct {
	_                    structs.HostLayout
	Width, Height, Depth uint64
}

type deviceAPI interface {
	Name() string
	MaxBufferLength() uint64
	RecommendedMaxWorkingSetSize() uint64
	NewCommandQueueWithMaxCommandBufferCount(n int) CommandQueue
	NewBufferWithLength(n int, options uint64) Buffer
	NewBufferWithBytesNoCopy(p unsafe.Pointer, n int, options uint64) Buffer
	NewLibraryWithSource(src string, opts CompileOptions) (Library, error)
	NewComputePipelineStateWithFunction(f Function) (ComputePipelineState, error)
	SupportsResidencySets() bool
	NewResidencySetWithDescriptor(initialCapacity int) (ResidencySet, error)
	Release()
	IsNil() bool
}

type compileOptionsAPI interface {
	SetLanguageVersion(v uint64)
	LanguageVersion() uint64
	Release()
}

type libraryAPI interface {
	NewFunctionWithName(name string) Function
	Release()
}

type functionAPI interface {
	Release()
	IsNil() bool
}

type pipelineAPI interface {
	MaxTotalThreadsPerThreadgroup() int
	Release()
}

type bufferAPI interface {
	IsNil() bool
	Contents() unsafe.Pointer
	Length() int
	Release()
}

type commandQueueAPI interface {
	CommandBuffer() CommandBuffer
	AddResidencySet(s ResidencySet)
	Release()
}

type commandBufferAPI interface {
	IsNil() bool
	ComputeCommandEncoder() ComputeCommandEncoder
	Commit()
	WaitUntilCompleted()
	Status() uint64
	Error() error
	GPUStartTime() float64
	GPUEndTime() float64
	Retain() CommandBuffer
	Release()
}

type computeEncoderAPI interface {
	SetComputePipelineState(p ComputePipelineState)
	SetBuffer(b Buffer, off, index int)
	SetBytes(p unsafe.Pointer, n, index int)
	DispatchThreadgroups(grid, group Size)
	EndEncoding()
	Retain() ComputeCommandEncoder
	Release()
}

type residencySetAPI interface {
	AddAllocation(b Buffer)
	RemoveAllocation(b Buffer)
	Commit()
	RequestResidency()
	Release()
	IsNil() bool
}

var (
	_ deviceAPI         = Device{}
	_ compileOptionsAPI = CompileOptions{}
	_ libraryAPI        = Library{}
	_ functionAPI       = Function{}
	_ pipelineAPI       = ComputePipelineState{}
	_ bufferAPI         = Buffer{}
	_ commandQueueAPI   = CommandQueue{}
	_ commandBufferAPI  = CommandBuffer{}
	_ computeEncoderAPI = ComputeCommandEncoder{}
	_ residencySetAPI   = ResidencySet{}

	// The package functions: Load makes Metal (or the simulator) usable and
	// must succeed before any other call; Enabled says whether the backend
	// should register at all (always on macOS; the simulator only when
	// BAGEL_METAL_SIM=1); PageSize is the page newBufferWithBytesNoCopy
	// aligns to; Simulated is a constant of each implementation.
	_ func() error          = Load
	_ func() bool           = Enabled
	_ func() int            = PageSize
	_ func(func())          = WithPool
	_ func() Device         = CreateSystemDefaultDevice
	_ func() CompileOptions = NewCompileOptions
	_ bool                  = Simulated
)
