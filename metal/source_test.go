package metal

import (
	"regexp"
	"strings"
	"testing"

	"bagel/cpu"
	"bagel/kernels"
)

// TestLibrarySource checks the text compiled into the Metal library: the Metal
// prelude comes first and turns KERNEL into an MSL kernel function, and every
// kernel of the CPU reference is declared in it.
func TestLibrarySource(t *testing.T) {
	src := librarySource()
	if !strings.HasPrefix(src, `#line 1 "prelude_metal.h"`) {
		t.Fatalf("library source does not start with prelude_metal.h: %.60q", src)
	}
	if !strings.Contains(src, "#include <metal_stdlib>") {
		t.Error("no #include <metal_stdlib>")
	}
	if !regexp.MustCompile(`#define KERNEL\(name, \.\.\.\)\s*\\\s*kernel void name\(`).MatchString(src) {
		t.Error("the prelude does not define KERNEL(name, ...) as `kernel void name(`")
	}
	if strings.Contains(src, `#line 1 "prelude_cuda.h"`) {
		t.Error("the CUDA prelude is in the Metal source")
	}
	for _, f := range append([]string{"common.h"}, kernels.Files()...) {
		if !strings.Contains(src, `#line 1 "`+f+`"`) {
			t.Errorf("%s is not in the library source", f)
		}
	}
	for _, name := range cpu.Kernels() {
		if !regexp.MustCompile(`(?m)^KERNEL\(` + name + `,`).MatchString(src) {
			t.Errorf("kernel %s (in cpu.Kernels) is not declared with KERNEL in the Metal source", name)
		}
	}
}
