// Package kernels holds the GPU kernels in one portable dialect (*.metal, compiled
// as MSL through prelude_metal.h and as CUDA C++ through prelude_cuda.h) and, for
// each kernel, its launch geometry: ops asks Launch for the grid and threadgroup of a
// dispatch so that the geometry lives beside the kernel that depends on it.
package kernels

import "bagel/backend"

// Launch returns the grid (in threadgroups) and threadgroup size for kernel name
// called with args (buffers then scalars, as kernels/README.md lists them).
// The CPU backend ignores the result.
func Launch(name string, args []backend.Arg) (grid, group backend.Dim3) {
	if f, ok := geometry[name]; ok {
		return f(args)
	}
	return backend.Dim3{X: 1, Y: 1, Z: 1}, backend.Dim3{X: 1, Y: 1, Z: 1}
}

// geometry maps a kernel name to its launch geometry; filled by the kernel files.
var geometry = map[string]func(args []backend.Arg) (grid, group backend.Dim3){}
