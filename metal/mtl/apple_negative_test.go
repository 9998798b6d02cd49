package mtl

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// bindingPrelude declares what the snippets of TestAppleCheckCatches use, as
// mtl_darwin.go and runtime_darwin.go do.
const bindingPrelude = `package mtl
type Device struct{ id objc.ID }
type Buffer struct{ id objc.ID }
type CommandBuffer struct{ id objc.ID }
type ComputeCommandEncoder struct{ id objc.ID }
type CompileOptions struct{ id objc.ID }
`

// checkSnippet runs the check on the prelude plus src.
func checkSnippet(t *testing.T, api *appleAPI, src string) []error {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "snippet.go", bindingPrelude+src, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := readBinding(fset, []*ast.File{file})
	if err != nil {
		return []error{err}
	}
	if len(b.sends) == 0 && len(b.names) == 0 {
		t.Fatal("the snippet sends nothing")
	}
	_, errs := checkBinding(api, b)
	return errs
}

// TestAppleCheckCatches breaks calls of the binding on purpose, one defect
// each, and expects the check to report it; each correct version passes, so the
// failure comes from the defect.
func TestAppleCheckCatches(t *testing.T) {
	api := loadTestAPI(t)
	cases := []struct {
		name, good, bad, want string
	}{
		{"misspelled selector",
			`func (b Buffer) Length() int { return int(objc.Send[uint64](b.id, sel("length"))) }`,
			`func (b Buffer) Length() int { return int(objc.Send[uint64](b.id, sel("lenght"))) }`,
			`selector "lenght" is not in Apple's headers`},
		{"misspelled selector in respondsTo",
			`func (d Device) S() bool { return respondsTo(d.id, "newResidencySetWithDescriptor:error:") }`,
			`func (d Device) S() bool { return respondsTo(d.id, "newResidencySetWithDescriptor:") }`,
			`selector "newResidencySetWithDescriptor:" is not in Apple's headers`},
		{"misspelled class",
			`func N() CompileOptions { return CompileOptions{class("MTLCompileOptions").Send(sel("alloc")).Send(sel("init"))} }`,
			`func N() CompileOptions { return CompileOptions{class("MTLCompileOption").Send(sel("alloc")).Send(sel("init"))} }`,
			`class MTLCompileOption is not in Apple's headers`},
		{"argument missing",
			`func (e ComputeCommandEncoder) SetBuffer(b Buffer, off, index int) { e.id.Send(sel("setBuffer:offset:atIndex:"), b.id, uint64(off), uint64(index)) }`,
			`func (e ComputeCommandEncoder) SetBuffer(b Buffer, off, index int) { e.id.Send(sel("setBuffer:offset:atIndex:"), b.id, uint64(off)) }`,
			`2 arguments for a selector of 3`},
		{"MTLSize by pointer",
			`func (e ComputeCommandEncoder) D(grid, group Size) { e.id.Send(sel("dispatchThreadgroups:threadsPerThreadgroup:"), grid, group) }`,
			`func (e ComputeCommandEncoder) D(grid, group Size) { e.id.Send(sel("dispatchThreadgroups:threadsPerThreadgroup:"), unsafe.Pointer(&grid), group) }`,
			`argument 1 is a Go pointer, MTLComputeCommandEncoder.hpp: MTL::ComputeCommandEncoder::dispatchThreadgroups passes a C MTL::Size`},
		{"32-bit integer for NSUInteger",
			`func (e ComputeCommandEncoder) SetBuffer(b Buffer, off, index int) { e.id.Send(sel("setBuffer:offset:atIndex:"), b.id, uint64(off), uint64(index)) }`,
			`func (e ComputeCommandEncoder) SetBuffer(b Buffer, off, index int) { e.id.Send(sel("setBuffer:offset:atIndex:"), b.id, uint64(off), uint32(index)) }`,
			`argument 3 is a Go uint32 (no C counterpart)`},
		{"NSError** passed as the object",
			`func (d Device) P(f objc.ID) objc.ID { var errID objc.ID; return d.id.Send(sel("newComputePipelineStateWithFunction:error:"), f, unsafe.Pointer(&errID)) }`,
			`func (d Device) P(f objc.ID) objc.ID { var errID objc.ID; return d.id.Send(sel("newComputePipelineStateWithFunction:error:"), f, errID) }`,
			`argument 2 is a Go object, MTLDevice.hpp: MTL::Device::newComputePipelineState passes a C NS::Error**`},
		{"double result read as an integer",
			`func (c CommandBuffer) T() float64 { return objc.Send[float64](c.id, sel("GPUStartTime")) }`,
			`func (c CommandBuffer) T() uint64 { return objc.Send[uint64](c.id, sel("GPUStartTime")) }`,
			`result read as a Go uint64, MTLCommandBuffer.hpp: MTL::CommandBuffer::GPUStartTime returns a C CFTimeInterval`},
		{"void result used as an object",
			`func (c CommandBuffer) Commit() { c.id.Send(sel("commit")) }`,
			`func (c CommandBuffer) Commit() objc.ID { return c.id.Send(sel("commit")) }`,
			`result read as a Go objc.ID`},
		{"selector sent to the wrong class",
			`func (c CommandBuffer) Commit() { c.id.Send(sel("commit")) }`,
			`func (b Buffer) Commit() { b.id.Send(sel("commit")) }`,
			`no metal-cpp method sends it to MTL::Buffer`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, err := range checkSnippet(t, api, c.good) {
				t.Errorf("correct version: %v", err)
			}
			errs := checkSnippet(t, api, c.bad)
			var all []string
			for _, err := range errs {
				all = append(all, err.Error())
			}
			if !strings.Contains(strings.Join(all, "\n"), c.want) {
				t.Errorf("want an error containing %q, got %q", c.want, all)
			}
		})
	}
}
