// Package mtl is a thin 1:1 binding over Apple's Metal through purego and its
// objc package, with no cgo: one Go type per Metal object (Device,
// CommandQueue, Buffer, Library, Function, ComputePipelineState,
// CommandBuffer, ComputeCommandEncoder, ResidencySet, CompileOptions), each one
// objc.ID, methods named after their selectors. The backend (package metal)
// sits on top.
//
// Load opens Metal.framework with purego.Dlopen and registers every selector
// and class the binding sends to, once, from the tables in selectors.go (a
// Linux test checks the tables against the darwin sources, and apple_test.go
// every send against Apple's metal-cpp headers in testdata).
//
// Ownership follows Cocoa: an object returned by a method whose name begins
// with new, alloc or copy (and by MTLCreateSystemDefaultDevice) is owned (+1)
// and is given back with Release; every other returned object is autoreleased
// and is retained (Retain) when kept past the enclosing pool (WithPool).
//
// Threading: Metal objects may be used from any thread, but an autorelease pool
// belongs to the thread that pushed it; callers run each unit of work in
// WithPool on one goroutine locked to its OS thread.
//
// NSErrors become *NSError (domain, code, description); Metal's error codes are
// named in the message.
//
// The API is implemented twice (api.go lists it and checks both): the binding
// (mtl_darwin.go, runtime_darwin.go) on macOS, and a simulator (sim_*.go) on
// every other system and on macOS with -tags metalsim. The simulator runs each
// dispatch with the CPU backend's kernel of the pipeline's name, on a goroutine
// of its queue, and panics (messages start "metal simulator:") where Metal
// asserts or the behaviour is undefined: see ../README.md for its rules.
//
// Nothing here has run on a Mac yet: see ../README.md.
package mtl
