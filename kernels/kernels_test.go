package kernels

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"bagel/backend"
)

// readmeKernels parses the table of README.md: kernel name → buffer names and
// scalar names ("same" rows inherit from the row above).
func readmeKernels(t *testing.T) map[string][2][]string {
	t.Helper()
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][2][]string{}
	var prev [2][]string
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cols := strings.Split(strings.ReplaceAll(line, `\|`, "/"), "|")
		name := strings.Trim(strings.TrimSpace(cols[1]), "`")
		var cur [2][]string
		for c, col := range []string{cols[2], cols[3]} {
			col = strings.TrimSpace(col)
			if strings.HasPrefix(col, "same") {
				cur[c] = prev[c]
				continue
			}
			for _, item := range splitOutside(col) {
				f := strings.Fields(item)
				if len(f) > 0 {
					cur[c] = append(cur[c], strings.TrimSuffix(f[0], ","))
				}
			}
		}
		rows[name] = cur
		prev = cur
	}
	return rows
}

// splitOutside splits at commas outside [] and ().
func splitOutside(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[', '(':
			depth++
		case ']', ')':
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

func TestSignaturesMatchREADME(t *testing.T) {
	sigs := Signatures()
	readme := readmeKernels(t)
	if len(readme) == 0 {
		t.Fatal("no kernels parsed from README.md")
	}
	for name, want := range readme {
		sig, ok := sigs[name]
		if !ok {
			t.Errorf("%s: in README.md, no KERNEL in kernels/*.metal", name)
			continue
		}
		var bufs, scalars []string
		for _, p := range sig.Params {
			if p.Buffer {
				bufs = append(bufs, p.Name)
			} else {
				scalars = append(scalars, p.Name)
			}
		}
		// A "same" column repeats the row above (qmatmul_bf16_f32 differs from
		// qmatmul_bf16 in the output's dtype only, not in names).
		if strings.Join(bufs, " ") != strings.Join(want[0], " ") {
			t.Errorf("%s: buffers %v, README.md says %v", name, bufs, want[0])
		}
		if strings.Join(scalars, " ") != strings.Join(want[1], " ") {
			t.Errorf("%s: scalars %v, README.md says %v", name, scalars, want[1])
		}
		for _, p := range sig.Params {
			if !p.Buffer {
				isF32 := strings.Contains(readmeScalarType(t, name, p.Name), "f32")
				if (p.Type == "float") != isF32 {
					t.Errorf("%s: scalar %s is %s in the source, README.md f32=%v", name, p.Name, p.Type, isF32)
				}
			}
		}
	}
	for name := range sigs {
		if _, ok := readme[name]; !ok {
			t.Errorf("%s: kernel has no row in README.md", name)
		}
	}
}

// readmeScalarType is the README's text for scalar name of kernel ("eps f32").
func readmeScalarType(t *testing.T, kernel, name string) string {
	text, _ := os.ReadFile("README.md")
	var prev string
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cols := strings.Split(strings.ReplaceAll(line, `\|`, "/"), "|")
		col := strings.TrimSpace(cols[3])
		if strings.HasPrefix(col, "same") {
			col = prev
		}
		prev = col
		if strings.Trim(strings.TrimSpace(cols[1]), "`") != kernel {
			continue
		}
		for _, item := range splitOutside(col) {
			if f := strings.Fields(item); len(f) > 0 && f[0] == name {
				return item
			}
		}
	}
	return ""
}

func TestEveryKernelHasGeometry(t *testing.T) {
	for _, name := range Names() {
		if _, ok := geometry[name]; !ok {
			t.Errorf("%s: no launch geometry in kernels/geometry.go", name)
		}
	}
	for name := range geometry {
		if _, ok := Signatures()[name]; !ok {
			t.Errorf("%s: geometry for a kernel that does not exist", name)
		}
	}
}

func TestLaunchGeometry(t *testing.T) {
	ints := func(v ...int) []backend.Arg {
		var a []backend.Arg
		for _, x := range v {
			a = append(a, backend.Int(x))
		}
		return a
	}
	bufs := func(n int) []backend.Arg { return make([]backend.Arg, n) }
	cases := []struct {
		name        string
		args        []backend.Arg
		grid, group int
	}{
		{"qmatmul_bf16", append(bufs(5), ints(3, 2048, 8192, 4, 64)...), 3 * 1024, 256},
		{"qmatmul_gather_bf16", append(bufs(6), ints(2, 8, 2048, 512, 4, 64, 0)...), 16 * 64, 256},
		{"rms_norm_bf16", append(bufs(3), append(ints(5, 2048), backend.Float(1e-6))...), 5, 256},
		{"rms_norm_bf16", append(bufs(3), append(ints(5, 40), backend.Float(1e-6))...), 5, 64},
		{"attention_bf16", append(bufs(4), append(ints(3, 16, 2, 256, 4096, 100), backend.Float(0.0625))...), 48, 256},
		{"gdn_recurrence_bf16", append(bufs(5), ints(1, 16, 32, 128, 128)...), 32 * 32, 128},
		{"add_bf16", append(bufs(3), ints(1000)...), 4, 256},
		{"router_topk_bf16", append(bufs(3), ints(7, 256, 8, 1)...), 7, 32},
	}
	for _, c := range cases {
		grid, group := Launch(c.name, c.args)
		if grid.X != c.grid || group.X != c.group || grid.Y != 1 || group.Y != 1 {
			t.Errorf("%s: grid %v group %v, want %d×%d", c.name, grid, group, c.grid, c.group)
		}
	}
}

// TestDefinesMatchGo checks the fixed array sizes of the .metal files against the
// Go constants that Launch uses to refuse shapes that do not fit.
func TestDefinesMatchGo(t *testing.T) {
	want := map[string]int{
		"ATTN_MAX_D":      AttentionMaxHeadDim,
		"ATTN_PER_LANE":   AttentionMaxHeadDim / 32,
		"ATTN_SIMDGROUPS": AttentionSimdGroups,
		"CONV_MAX_K":      ConvMaxKernel,
		"GDN_MAX_DK":      GDNMaxKeyDim,
		"GDN_PER_LANE":    GDNMaxKeyDim / 32,
		"ROUTER_MAX_E":    RouterMaxExperts,
	}
	src := MetalSource()
	for name, v := range want {
		m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)$`).FindStringSubmatch(src)
		if m == nil {
			t.Errorf("#define %s not found", name)
			continue
		}
		if got, _ := strconv.Atoi(m[1]); got != v {
			t.Errorf("#define %s %d, Go says %d", name, got, v)
		}
	}
}

func TestSourcesAssemble(t *testing.T) {
	for _, src := range []string{MetalSource(), CUDASource()} {
		for _, name := range Names() {
			if !strings.Contains(src, "KERNEL("+name+",") {
				t.Errorf("assembled source lacks %s", name)
			}
		}
	}
	cu := CUDASource()
	// The address-space macros must come after everything else of the CUDA prelude.
	prelude := File("prelude_cuda.h")
	if i, j := strings.Index(prelude, "#define device"), strings.LastIndex(prelude, "__"); i < 0 || i < j {
		t.Errorf("prelude_cuda.h must define `device` after its last CUDA builtin")
	}
	if len(SourceHash()) != 64 || !strings.HasPrefix(cu, "#line 1 \"prelude_cuda.h\"") {
		t.Errorf("unexpected CUDA source layout")
	}
}

// TestFloatLiteralsAreSingle keeps double precision out of the kernels: Metal
// has no double, and on CUDA an unsuffixed 1.0 makes the expression f64.
func TestFloatLiteralsAreSingle(t *testing.T) {
	literal := regexp.MustCompile(`(^|[^\w.])(\d+\.\d*|\.\d+)([eE][-+]?\d+)?([fF]?)`)
	for _, name := range append([]string{"common.h"}, Files()...) {
		for i, line := range strings.Split(File(name), "\n") {
			if c := strings.Index(line, "//"); c >= 0 {
				line = line[:c]
			}
			for _, m := range literal.FindAllStringSubmatch(line, -1) {
				if m[4] == "" {
					t.Errorf("%s:%d: float literal %s%s without f suffix", name, i+1, m[2], m[3])
				}
			}
			if regexp.MustCompile(`\bdouble\b`).MatchString(line) {
				t.Errorf("%s:%d: double in a kernel", name, i+1)
			}
		}
	}
}

func TestCheckArgs(t *testing.T) {
	sig := Signatures()["add_bf16"]
	dummy := backend.Buf(nil, 0)
	bits := CheckArgs("test", "add_bf16", sig, []backend.Arg{dummy, dummy, dummy, backend.Int(7)})
	if bits[3] != 7 {
		t.Errorf("scalar bits %v", bits)
	}
	for name, args := range map[string][]backend.Arg{
		"count": {dummy, dummy, dummy},
		"kind":  {dummy, dummy, dummy, backend.Float(7)},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "add_bf16") {
					t.Errorf("%s: panic %v, want one naming the kernel", name, r)
				}
			}()
			CheckArgs("test", "add_bf16", sig, args)
		}()
	}
}
