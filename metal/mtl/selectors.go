package mtl

// The Objective-C selectors and classes the binding uses. objc_darwin.go
// registers each once at init (sel_registerName takes the runtime's global
// lock, so it is not done per call); sel and class look them up by name and
// panic on a name missing here. selectors_test.go scans the darwin sources and
// fails when a sel("...") or class("...") names something not in these tables,
// or when a table entry is no longer used.
var selectorNames = []string{
	// NSObject
	"alloc", "init", "retain", "release", "respondsToSelector:",
	// NSString, NSError
	"stringWithCString:encoding:", "UTF8String", "domain", "code", "localizedDescription",
	// MTLDevice
	"name", "maxBufferLength", "newCommandQueueWithMaxCommandBufferCount:",
	"newBufferWithLength:options:", "newBufferWithBytesNoCopy:length:options:deallocator:",
	"newLibraryWithSource:options:error:", "newComputePipelineStateWithFunction:error:",
	"newResidencySetWithDescriptor:error:", "recommendedMaxWorkingSetSize",
	// MTLCompileOptions
	"setLanguageVersion:", "languageVersion",
	// MTLLibrary, MTLFunction, MTLComputePipelineState
	"newFunctionWithName:", "maxTotalThreadsPerThreadgroup",
	// MTLBuffer
	"contents", "length",
	// MTLCommandQueue
	"commandBuffer", "addResidencySet:",
	// MTLCommandBuffer
	"computeCommandEncoder", "commit", "waitUntilCompleted", "status", "error",
	"GPUStartTime", "GPUEndTime",
	// MTLComputeCommandEncoder
	"setComputePipelineState:", "setBuffer:offset:atIndex:", "setBytes:length:atIndex:",
	"dispatchThreadgroups:threadsPerThreadgroup:", "endEncoding",
	// MTLResidencySetDescriptor, MTLResidencySet
	"setInitialCapacity:", "addAllocation:", "removeAllocation:", "requestResidency",
}

var classNames = []string{
	"NSString",
	"MTLCompileOptions",
	"MTLResidencySetDescriptor",
}
