package kernels

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The kernel sources. common.h holds the helpers every kernel uses; the *.metal
// files are the kernels, appended in name order.
//
//go:embed prelude_metal.h prelude_cuda.h common.h *.metal
var sources embed.FS

// MetalSource is the library source for the Metal backend: prelude_metal.h,
// common.h and every kernel file.
func MetalSource() string { return assemble("prelude_metal.h") }

// CUDASource is the program source for the CUDA backend (NVRTC): prelude_cuda.h,
// common.h and every kernel file. Kernels are extern "C", so their names are
// the kernel names.
func CUDASource() string { return assemble("prelude_cuda.h") }

// SourceHash is the hex SHA-256 of CUDASource. The CUDA backend keys its compile
// cache by it, and the PTX embedded in cuda/ records the hash it was built from.
func SourceHash() string {
	sum := sha256.Sum256([]byte(CUDASource()))
	return hex.EncodeToString(sum[:])
}

// Files lists the kernel files (*.metal) in assembly order.
func Files() []string {
	names, err := fs.Glob(sources, "*.metal")
	if err != nil {
		panic(err)
	}
	slices.Sort(names)
	return names
}

// File returns one embedded file (a prelude, common.h or a kernel file).
func File(name string) string {
	b, err := sources.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("kernels: no embedded file %q", name))
	}
	return string(b)
}

// assemble joins prelude, the tuning overrides, common.h and the kernel files.
// #line directives keep compiler messages pointing at the file and line a
// reader can open.
func assemble(prelude string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "#line 1 %q\n", prelude)
	sb.WriteString(File(prelude))
	sb.WriteString("\n")
	for _, o := range tuning() {
		fmt.Fprintf(&sb, "#define %s %d\n", o.name, o.value)
	}
	for _, name := range append([]string{"common.h"}, Files()...) {
		fmt.Fprintf(&sb, "#line 1 %q\n", name)
		sb.WriteString(File(name))
		sb.WriteString("\n")
	}
	return sb.String()
}

// Param is one kernel argument as declared in the source.
type Param struct {
	Name   string
	Type   string // "const bf16_t", "uint", "int", "float", ...
	Buffer bool   // BUFFER (a device pointer) rather than PARAM (a scalar)
}

// Signature is a kernel's declaration: its name and arguments, in the order the
// source gives them, and its launch annotation (launch.go).
type Signature struct {
	Name   string
	File   string
	Params []Param
	// LaunchText and RequiresText are the "// launch:" and "// requires:" lines
	// of the comment right above the declaration.
	LaunchText   string
	RequiresText []string
	launch       launchPlan
}

// Param returns the index of the argument called name, or -1.
func (s Signature) Param(name string) int {
	for i, p := range s.Params {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// Signatures parses every KERNEL(...) declaration of the kernel files and
// compiles its launch annotation. A malformed declaration panics (the package
// tests parse all of them).
var Signatures = sync.OnceValue(func() map[string]Signature {
	defines := Defines()
	sigs := map[string]Signature{}
	for _, file := range Files() {
		for _, sig := range parseKernels(file, File(file)) {
			if _, dup := sigs[sig.Name]; dup {
				panic(fmt.Sprintf("kernels: %s: kernel %s declared twice", file, sig.Name))
			}
			plan, err := compileLaunch(sig, defines)
			if err != nil {
				panic(fmt.Sprintf("kernels: %s: %s: %v", file, sig.Name, err))
			}
			sig.launch = plan
			sigs[sig.Name] = sig
		}
	}
	return sigs
})

// Defines returns every "#define NAME integer" of common.h and the kernel files:
// the fixed array sizes that launch annotations may name.
// It reads every kernel file: take what a hot path needs once, into a
// package variable (a decode step that called it per layer ran at 8 tok/s).
func Defines() map[string]int {
	defines := map[string]int{}
	for _, name := range append([]string{"common.h"}, Files()...) {
		for _, line := range strings.Split(File(name), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != "#define" {
				continue
			}
			if v, err := strconv.Atoi(f[2]); err == nil {
				defines[f[1]] = v
			}
		}
	}
	for _, o := range tuning() {
		defines[o.name] = o.value
	}
	return defines
}

// tuningEnv names the environment variable that overrides tunable kernel
// constants for a tuning run ("QMV_ROWS=4,QMV_SIMDGROUPS=2"): the sources
// define them under #ifndef, and the launch geometry reads the same values,
// so one binary can try several shapes on the GPU machine. Unset in normal use.
const tuningEnv = "BAGEL_KERNEL_TUNING"

type override struct {
	name  string
	value int
}

// tuning parses tuningEnv once; a malformed entry panics naming it.
var tuning = sync.OnceValue(func() []override {
	var out []override
	for _, kv := range strings.Split(os.Getenv(tuningEnv), ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		name, val, ok := strings.Cut(kv, "=")
		v, err := strconv.Atoi(val)
		if !ok || err != nil || v < 0 {
			panic(fmt.Sprintf("kernels: %s: %q is not NAME=non-negative integer", tuningEnv, kv))
		}
		out = append(out, override{name, v})
	}
	return out
})

// Names lists every kernel, sorted.
func Names() []string {
	var names []string
	for name := range Signatures() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// parseKernels reads the KERNEL(name, BUFFER(type, name, i), ..., PARAM(type,
// name, i)) declarations of one file. Buffers must come before scalars and the
// indices must count 0, 1, 2, ... (they are Metal's [[buffer(i)]] slots).
func parseKernels(file, src string) []Signature {
	var sigs []Signature
	rest := "\n" + src
	for {
		at := strings.Index(rest, "\nKERNEL(")
		if at < 0 {
			break
		}
		before := rest[:at]
		rest = rest[at+len("\nKERNEL("):]
		body, ok := balanced(rest)
		if !ok {
			panic(fmt.Sprintf("kernels: %s: unbalanced KERNEL(", file))
		}
		parts := splitTop(body)
		sig := Signature{Name: strings.TrimSpace(parts[0]), File: file}
		sig.LaunchText, sig.RequiresText = annotations(before)
		for i, p := range parts[1:] {
			p = strings.TrimSpace(p)
			var param Param
			switch {
			case strings.HasPrefix(p, "BUFFER("):
				param.Buffer = true
				p = p[len("BUFFER("):]
			case strings.HasPrefix(p, "PARAM("):
				p = p[len("PARAM("):]
			default:
				panic(fmt.Sprintf("kernels: %s: %s: argument %d is %q, want BUFFER(...) or PARAM(...)", file, sig.Name, i, p))
			}
			fields := strings.Split(strings.TrimSuffix(p, ")"), ",")
			if len(fields) != 3 || strings.TrimSpace(fields[2]) != fmt.Sprint(i) {
				panic(fmt.Sprintf("kernels: %s: %s: argument %d (%q) must be (type, name, %d)", file, sig.Name, i, p, i))
			}
			param.Type, param.Name = strings.TrimSpace(fields[0]), strings.TrimSpace(fields[1])
			if n := len(sig.Params); param.Buffer && n > 0 && !sig.Params[n-1].Buffer {
				panic(fmt.Sprintf("kernels: %s: %s: buffer %s after a scalar", file, sig.Name, param.Name))
			}
			if !param.Buffer && param.Type != "int" && param.Type != "float" {
				panic(fmt.Sprintf("kernels: %s: %s: scalar %s is %s, want int or float", file, sig.Name, param.Name, param.Type))
			}
			sig.Params = append(sig.Params, param)
		}
		sigs = append(sigs, sig)
	}
	return sigs
}

// annotations reads the "// launch:" and "// requires:" lines of the comment
// block that ends the text before a declaration.
func annotations(before string) (launch string, requires []string) {
	lines := strings.Split(before, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "//") {
			break
		}
		line = strings.TrimSpace(strings.TrimPrefix(line, "//"))
		if v, ok := strings.CutPrefix(line, "launch:"); ok {
			launch = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "requires:"); ok {
			requires = append([]string{strings.TrimSpace(v)}, requires...)
		}
	}
	return launch, requires
}

// balanced returns s up to the ')' that closes an already opened '('.
func balanced(s string) (string, bool) {
	depth := 1
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[:i], true
			}
		}
	}
	return "", false
}

// splitTop splits s at the commas outside parentheses.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}
