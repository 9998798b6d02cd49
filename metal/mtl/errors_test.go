package mtl

import "testing"

func TestFormatNSError(t *testing.T) {
	for _, c := range []struct {
		op, domain string
		code       int
		desc, want string
	}{
		{"compiling the kernel library", "MTLLibraryErrorDomain", 3,
			"program_source:12:5: error: use of undeclared identifier 'x'",
			"metal: compiling the kernel library: program_source:12:5: error: use of undeclared identifier 'x' (MTLLibraryErrorDomain code 3: compile failure)"},
		{"command buffer", "MTLCommandBufferErrorDomain", 3, "Caused GPU Address Fault Error",
			"metal: command buffer: Caused GPU Address Fault Error (MTLCommandBufferErrorDomain code 3: page fault (a kernel read or wrote outside its buffers))"},
		{"x", "NSCocoaErrorDomain", 42, "", "metal: x: no description (NSCocoaErrorDomain code 42)"},
	} {
		err := &NSError{Op: c.op, Domain: c.domain, Code: c.code, Description: c.desc}
		if got := err.Error(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

func TestCommandBufferStatus(t *testing.T) {
	if CommandBufferStatus(StatusCompleted) != "completed" || CommandBufferStatus(StatusError) != "error" {
		t.Error("status names out of step with MTLCommandBufferStatus")
	}
	if CommandBufferStatus(9) != "status 9" {
		t.Errorf("unknown status reads %q", CommandBufferStatus(9))
	}
}
