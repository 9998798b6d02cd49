// Package ops is the backend-neutral operation layer: one function per operation
// (ops.RMSNorm, ops.QMatmul, ...). Each checks shapes and dtypes, picks the kernel
// (name with dtype suffix, kernels/README.md) and records it on the context's
// encoder with the launch geometry from package kernels. The model composes these
// functions and never sees a backend type beyond Tensor's buffer.
//
// A shape or dtype mismatch here is a programmer error and panics; the engine
// recovers it on the device goroutine and reports it.
package ops

import (
	"fmt"

	"bagel/backend"
)

// Tensor is a dense row-major region of a device buffer.
type Tensor struct {
	Buf   backend.Buffer
	Off   int // bytes from the start of Buf
	DType backend.DType
	Shape []int
}

// Elements is the product of the shape.
func (t Tensor) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Bytes is the size of the region.
func (t Tensor) Bytes() int { return t.Elements() * t.DType.Size() }

// Arg is the tensor as a kernel argument.
func (t Tensor) Arg() backend.Arg { return backend.Buf(t.Buf, t.Off) }

// Rows views rows [from, to) of the outermost dimension.
func (t Tensor) Rows(from, to int) Tensor {
	if from < 0 || to > t.Shape[0] || from > to {
		panic(fmt.Sprintf("ops: rows [%d,%d) of shape %v", from, to, t.Shape))
	}
	rowBytes := t.Bytes() / t.Shape[0]
	shape := append([]int{to - from}, t.Shape[1:]...)
	return Tensor{Buf: t.Buf, Off: t.Off + from*rowBytes, DType: t.DType, Shape: shape}
}

// Reshape views the same elements under another shape.
func (t Tensor) Reshape(shape ...int) Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n != t.Elements() {
		panic(fmt.Sprintf("ops: reshape %v to %v", t.Shape, shape))
	}
	return Tensor{Buf: t.Buf, Off: t.Off, DType: t.DType, Shape: append([]int(nil), shape...)}
}

func (t Tensor) String() string { return fmt.Sprintf("%v%v", t.DType, t.Shape) }

// QLinear is an MLX affine-quantized weight: codes [experts?, Out, In*Bits/32] u32
// with scales and biases [experts?, Out, In/GroupSize] bf16. Experts is 0 for a 2-D layer.
type QLinear struct {
	Name            string // checkpoint module path, for messages
	W, Scales, Bias Tensor
	Bits, GroupSize int
	Out, In         int
	Experts         int
}

// appendArgs appends the weight's three buffers (codes, scales, biases).
func (q QLinear) appendArgs(args []backend.Arg) []backend.Arg {
	return append(args, q.W.Arg(), q.Scales.Arg(), q.Bias.Arg())
}

// format is the bits and group size as one scalar, bits + 256·GroupSize, the
// way the multi-matrix kernels take them (common.h qfmt_bits, qfmt_gs: a launch
// of four matrices would pass Metal's 31 arguments with two scalars each).
func (q QLinear) format() int { return q.Bits + 256*q.GroupSize }

// fail panics with a programmer error's message. The checks call it as
// `if !cond { fail(...) }` rather than through a check(cond, format, args...)
// helper, whose arguments would be boxed on every call, the check passing or
// not: a dozen heap allocations a dispatch (BenchmarkDecodeStepHost: 870 →
// 411 ns a dispatch on the dev machine); in the branch they are boxed only
// when it fails.
func fail(format string, a ...any) {
	panic("ops: " + fmt.Sprintf(format, a...))
}

// checkDTypeIn is checkDType for the tensor what of op, the two joined only
// when the check fails.
func checkDTypeIn(op, what string, t Tensor, want backend.DType) {
	if t.DType != want {
		panic(fmt.Sprintf("ops: %s %s: tensor is %v, want %v", op, what, t.DType, want))
	}
}

func checkDType(name string, t Tensor, want backend.DType) {
	if t.DType != want { // not fail's arguments: they would be boxed on every call
		panic(fmt.Sprintf("ops: %s: tensor is %v, want %v", name, t.DType, want))
	}
}
