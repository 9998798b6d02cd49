package kernels

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
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

func TestEveryKernelHasALaunch(t *testing.T) {
	for _, name := range Names() {
		sig := Signatures()[name]
		if sig.launch.grid == nil || sig.launch.group == nil {
			t.Errorf("%s: no compiled launch", name)
		}
	}
}

// TestLaunchAnnotationErrors checks that a malformed annotation is refused with
// a message naming what is wrong, not compiled into a wrong launch.
func TestLaunchAnnotationErrors(t *testing.T) {
	sig := Signature{Name: "k", Params: []Param{{Name: "x", Buffer: true}, {Name: "N", Type: "int"}, {Name: "eps", Type: "float"}}}
	for text, want := range map[string]string{
		"":                       "no \"// launch:\" line",
		"elements(M)":            "M is neither",
		"elements(eps)":          "eps is neither",
		"rows(N)":                "rows takes",
		"grid(N) group(":         "want elements",
		"threads(N)":             "unknown form",
		"elements(floor(N, 2))":  "unknown function",
		"elements(single(N, 2))": "single takes 3 arguments",
		"elements(min(N, 2, 3))": "min takes 2 arguments",
		"elements(N +)":          "ends early",
		"grid(N) group(32) (N)":  "unexpected",
	} {
		sig.LaunchText = text
		_, err := compileLaunch(sig, map[string]int{"LIMIT": 4})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("launch %q: error %v, want one containing %q", text, err, want)
		}
	}
	sig.LaunchText, sig.RequiresText = "elements(N)", []string{"N < LIMIT"}
	if _, err := compileLaunch(sig, map[string]int{"LIMIT": 4}); err == nil || !strings.Contains(err.Error(), "want A <= B") {
		t.Errorf("requires with <: %v", err)
	}
}

func TestExpressions(t *testing.T) {
	env := exprEnv{params: map[string]int{"a": 0, "b": 1}, defines: map[string]int{"K": 8}}
	for src, want := range map[string]int{
		"a * b + K":      7*3 + 8,
		"a - b - 1":      3,
		"a / b * b":      6,
		"(a + b) * 2":    20,
		"ceil(a, 4) * 4": 8,
		"min(256, max(32, ceil(a * 40, 32) * 32))": 256,
		"max(32, ceil(a, 32) * 32)":                32,
		"single(1, a, b) * 32":                     7 * 32,
		"single(b, a, K)":                          8,
		"single(a - 6, 1, 2) + 1":                  2,
	} {
		e, err := compileExpr(src, env)
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if got := e([]int{7, 3}); got != want {
			t.Errorf("%q = %d, want %d", src, got, want)
		}
	}
}

// ints is a list of int32 scalar arguments; bufs, n buffer arguments (the
// launch geometry reads scalars only).
func ints(v ...int) []backend.Arg {
	var a []backend.Arg
	for _, x := range v {
		a = append(a, backend.Int(x))
	}
	return a
}

func bufs(n int) []backend.Arg { return make([]backend.Arg, n) }

func TestLaunchGeometry(t *testing.T) {
	cases := []struct {
		name        string
		args        []backend.Arg
		grid, group int
	}{
		{"qmatmul_bf16", append(bufs(5), ints(3, 2048, 8192, 4, 64)...), 3 * 2048, 64},
		{"qmatmul_gather_bf16", append(bufs(6), ints(2, 8, 2048, 512, 4, 64, 0)...), 16 * 128, 64},
		{"rms_norm_bf16", append(bufs(3), append(ints(5, 2048), backend.Float(1e-6))...), 5, 256},
		{"rms_norm_bf16", append(bufs(3), append(ints(5, 40), backend.Float(1e-6))...), 5, 64},
		{"attention_bf16", append(bufs(4), append(ints(3, 16, 2, 256, 4096, 100), backend.Float(0.0625))...), 48, 256},
		{"gdn_recurrence_bf16", append(bufs(7), ints(1, 16, 32, 128, 128, 0)...), 32 * 128 / (4 * Defines()["GDN_REC_ROWS"]), 128},
		{"add_bf16", append(bufs(3), ints(1000)...), 4, 256},
		{"router_topk_bf16", append(bufs(3), ints(7, 256, 8, 1)...), 7, 32},
		{"embed_dequant_bf16", append(bufs(5), ints(3, 2048, 4, 64)...), 24, 256},
		{"qmatmul_bf16_f32", append(bufs(5), ints(1, 2048, 248320, 4, 64)...), 62080, 64},
		{"rms_norm_gated_bf16", append(bufs(4), append(ints(32, 128), backend.Float(1e-6))...), 32, 128},
		{"add_rms_norm_bf16", append(bufs(5), append(ints(1, 2048), backend.Float(1e-6))...), 1, 256},
		{"split_qgate_bf16", append(bufs(3), ints(2, 16, 256)...), 32, 256},
		{"rope_neox_bf16", append(bufs(1), append(ints(3, 16, 256, 64, 9), backend.Float(1e7))...), 6, 256},
		{"kv_append_bf16", append(bufs(4), ints(1, 2, 256, 4096, 17)...), 2, 256},
		{"conv1d_silu_bf16", append(bufs(4), ints(1, 8192, 4)...), 32, 256},
		{"gdn_gates_bf16", append(bufs(6), ints(5, 32)...), 1, 256},
		{"moe_combine_bf16", append(bufs(3), ints(2, 8, 2048)...), 16, 256},
		{"add_sigmoid_scaled_bf16", append(bufs(4), ints(3, 2048)...), 24, 256},
	}
	for _, c := range cases {
		grid, group := Launch(c.name, c.args)
		if grid.X != c.grid || group.X != c.group || grid.Y != 1 || group.Y != 1 {
			t.Errorf("%s: grid %v group %v, want %d×%d", c.name, grid, group, c.grid, c.group)
		}
	}
}

// TestRequiresRefuseShapes checks that a shape over a kernel's fixed arrays
// panics naming the kernel and the limit, instead of launching.
func TestRequiresRefuseShapes(t *testing.T) {
	defines := Defines()
	for _, c := range []struct {
		name, limit string
		args        []backend.Arg
	}{
		{"attention_bf16", "ATTN_MAX_D", append(bufs(4), append(ints(1, 16, 2, defines["ATTN_MAX_D"]+32, 64, 1), backend.Float(1))...)},
		{"conv1d_silu_bf16", "CONV_MAX_K", append(bufs(4), ints(1, 64, defines["CONV_MAX_K"]+1)...)},
		{"gdn_recurrence_bf16", "GDN_MAX_DK", append(bufs(7), ints(1, 1, 1, defines["GDN_MAX_DK"]+1, 8, 0)...)},
		{"router_topk_bf16", "ROUTER_MAX_E", append(bufs(3), ints(1, defines["ROUTER_MAX_E"]+1, 8, 1)...)},
	} {
		if defines[c.limit] == 0 {
			t.Errorf("#define %s not found", c.limit)
		}
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), c.limit) || !strings.Contains(fmt.Sprint(r), c.name) {
					t.Errorf("%s over %s: panic %v, want one naming both", c.name, c.limit, r)
				}
			}()
			Launch(c.name, c.args)
		}()
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
	CheckArgs("test", "add_bf16", sig, []backend.Arg{dummy, dummy, dummy, backend.Int(7)})
	if b := ScalarBits(backend.Int(7)); b != 7 {
		t.Errorf("int 7 as bits %#x", b)
	}
	if b := ScalarBits(backend.Float(-2)); b != 0xc0000000 {
		t.Errorf("float -2 as bits %#x", b)
	}
	if b := ScalarBits(dummy); b != 0 {
		t.Errorf("a buffer as bits %#x", b)
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

// TestEveryKernelWaitsForTheGrid: under programmatic dependent launch a kernel
// may start before the one before it has finished, so every kernel calls
// GRID_WAIT() (or GRID_WAIT_COMPUTE(), which does not let the next kernel
// start early), itself or through qmv_rows (which waits once its first
// weights are in flight), qmv_multi (which calls qmv_rows) or gdn_rec_rows
// (which waits once its state rows are loading).
func TestEveryKernelWaitsForTheGrid(t *testing.T) {
	src := CUDASource()
	names := slices.Sorted(maps.Keys(Signatures()))
	for i, name := range names {
		start := strings.Index(src, "KERNEL("+name+",")
		if start < 0 {
			t.Fatalf("%s: no KERNEL declaration in the source", name)
		}
		body := src[start:]
		if end := strings.Index(body[1:], "\nKERNEL("); end >= 0 {
			body = body[:end+1]
		}
		if !strings.Contains(body, "GRID_WAIT();") && !strings.Contains(body, "GRID_WAIT_COMPUTE();") && !strings.Contains(body, "qmv_rows(") && !strings.Contains(body, "qmv_multi(") && !strings.Contains(body, "qmm_tile(") && !strings.Contains(body, "qmm_multi(") && !strings.Contains(body, "gdn_rec_rows<") {
			t.Errorf("%s (kernel %d) never calls GRID_WAIT()", name, i)
		}
	}
}

// TestMetalArgumentLimit: Metal binds a kernel's buffers and scalars to
// [[buffer(0)]] .. [[buffer(30)]], so no kernel may take more than 31.
func TestMetalArgumentLimit(t *testing.T) {
	for name, sig := range Signatures() {
		if len(sig.Params) > 31 {
			t.Errorf("%s takes %d buffers and scalars; Metal binds at most 31", name, len(sig.Params))
		}
	}
}

// TestGDNChunkILP: gdn_chunk_bf16 reduces GDN_CHUNK_ILP tokens of a chunk at
// a time and reads the zeroed tile rows past the chunk's end, so the chunk
// must be whole steps of them.
func TestGDNChunkILP(t *testing.T) {
	d := Defines()
	if d["GDN_CHUNK_ILP"] < 1 || d["GDN_CHUNK"]%d["GDN_CHUNK_ILP"] != 0 {
		t.Errorf("GDN_CHUNK %d is not a multiple of GDN_CHUNK_ILP %d", d["GDN_CHUNK"], d["GDN_CHUNK_ILP"])
	}
}

// TestAttentionSplitConstants: attention_split_f32's staging and head slots
// cover their blocks exactly (the constants are written out for Metal's
// fixed-size arrays).
func TestAttentionSplitConstants(t *testing.T) {
	d := Defines()
	if staged, block := d["ATTN_SPLIT_PIECES"]*d["ATTN_SIMDGROUPS"]*32*8, d["ATTN_SPLIT_KEYS"]*d["ATTN_MAX_D"]; staged != block {
		t.Errorf("ATTN_SPLIT_PIECES stages %d dims a block, want ATTN_SPLIT_KEYS·ATTN_MAX_D = %d", staged, block)
	}
	if slots := d["ATTN_GROUP_SLOTS"] * d["ATTN_SIMDGROUPS"]; slots != d["ATTN_MAX_GROUP"] {
		t.Errorf("ATTN_GROUP_SLOTS covers %d q-heads, want ATTN_MAX_GROUP = %d", slots, d["ATTN_MAX_GROUP"])
	}
}
