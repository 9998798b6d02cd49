package mtl

import "fmt"

// NSError is a Cocoa error as a Go error: its domain, code and localized
// description (for a library that does not compile, the compiler's log).
type NSError struct {
	Op          string // what the backend was doing: "compiling the kernel library"
	Domain      string // "MTLLibraryErrorDomain", "MTLCommandBufferErrorDomain", ...
	Code        int
	Description string
}

func (e *NSError) Error() string {
	return formatNSError(e.Op, e.Domain, e.Code, e.Description)
}

// formatNSError is the text of an NSError: "metal: op: description (domain
// code N: name)". Codes of the domains Metal uses are named.
func formatNSError(op, domain string, code int, desc string) string {
	name := ""
	if names, ok := errorCodeNames[domain]; ok {
		if n, ok := names[code]; ok {
			name = ": " + n
		}
	}
	if desc == "" {
		desc = "no description"
	}
	return fmt.Sprintf("metal: %s: %s (%s code %d%s)", op, desc, domain, code, name)
}

// errorCodeNames names the codes of Metal's error domains (MTLLibrary.h,
// MTLCommandBuffer.h), so a log line says what a number means.
var errorCodeNames = map[string]map[int]string{
	"MTLLibraryErrorDomain": {
		1: "unsupported", 2: "internal", 3: "compile failure",
		4: "compile warning", 5: "function not found", 6: "file not found",
	},
	"MTLCommandBufferErrorDomain": {
		0: "none", 1: "internal", 2: "timeout (the GPU watchdog killed a long kernel)",
		3: "page fault (a kernel read or wrote outside its buffers)",
		4: "access revoked", 7: "not permitted", 8: "out of memory",
		9: "invalid resource", 10: "memoryless", 11: "device removed",
		12: "stack overflow",
	},
}

// CommandBufferStatus names MTLCommandBufferStatus values.
func CommandBufferStatus(s uint64) string {
	names := []string{"not enqueued", "enqueued", "committed", "scheduled", "completed", "error"}
	if s < uint64(len(names)) {
		return names[s]
	}
	return fmt.Sprintf("status %d", s)
}

// MTLCommandBufferStatus values the backend tests for.
const (
	StatusCompleted = 4
	StatusError     = 5
)
