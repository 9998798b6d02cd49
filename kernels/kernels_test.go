package kernels

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"bagel/backend"
)

func TestSignaturesMatchREADME(t *testing.T) {
	sigs := Signatures()
	rows, err := Contract()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("no kernels parsed from README.md")
	}
	inREADME := map[string]bool{}
	for _, row := range rows {
		inREADME[row.Name] = true
		sig, ok := sigs[row.Name]
		if !ok {
			t.Errorf("%s: in README.md, no KERNEL in kernels/*.metal", row.Name)
			continue
		}
		var bufs, scalars []ContractArg
		for _, p := range sig.Params {
			if p.Buffer {
				bufs = append(bufs, ContractArg{Name: p.Name})
			} else {
				scalars = append(scalars, ContractArg{Name: p.Name, F32: p.Type == "float"})
			}
		}
		if fmt.Sprint(bufs) != fmt.Sprint(row.Buffers) {
			t.Errorf("%s: buffers %v, README.md says %v", row.Name, bufs, row.Buffers)
		}
		if fmt.Sprint(scalars) != fmt.Sprint(row.Scalars) {
			t.Errorf("%s: scalars (name, f32) %v, README.md says %v", row.Name, scalars, row.Scalars)
		}
	}
	for name := range sigs {
		if !inREADME[name] {
			t.Errorf("%s: kernel has no row in README.md", name)
		}
	}
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
