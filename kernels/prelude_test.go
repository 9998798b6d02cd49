package kernels

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The thread-position macros and SIMD-group functions must mean the same on
// both backends. Each row below states the meaning and the definition each
// prelude must have for it; the test compares the preludes' text with the
// table, so a change to either prelude has to come with a change to the table,
// where the reviewer sees both sides together.
//
// What this cannot prove: that the hardware agrees with the table — that an
// Apple GPU's SIMD-group is 32 wide (SIMD_COUNT assumes 32 on Metal as on
// CUDA; Apple documents threadExecutionWidth 32 for its GPUs, and a kernel may
// check it), that Metal's simd_sum adds in the same order as the CUDA
// butterfly (the sums may differ in the last bit; the kernel tests compare
// with tolerances), or what happens with inactive lanes (CUDA's full mask
// requires every lane of the warp to reach the call; Metal reduces over the
// active ones, so the results agree only where the dialect's rule "every lane
// reaches them" holds). Only a kernel test on each GPU shows those.
var preludeSemantics = []struct {
	name, meaning string
	// metal: the macro's definition in prelude_metal.h; metalAttr: the Metal
	// attribute of the kernel argument it reads (declared by KERNEL), "" if none.
	metal, metalAttr string
	cuda             string // the definition in prelude_cuda.h
}{
	{"TGID_X", "index of the threadgroup (block) in the 1-D grid",
		"((int)bagel_tgid.x)", "threadgroup_position_in_grid", "((int)blockIdx.x)"},
	{"TID_X", "index of the thread in its threadgroup",
		"((int)bagel_tid.x)", "thread_position_in_threadgroup", "((int)threadIdx.x)"},
	{"TG_SIZE_X", "threads in the threadgroup",
		"((int)bagel_tgsize.x)", "threads_per_threadgroup", "((int)blockDim.x)"},
	{"LANE", "lane in the 32-wide SIMD-group (warp)",
		"((int)bagel_lane)", "thread_index_in_simdgroup", "((int)(threadIdx.x & 31u))"},
	{"SIMD_ID", "index of the SIMD-group (warp) in the threadgroup",
		"((int)bagel_simd)", "simdgroup_index_in_threadgroup", "((int)(threadIdx.x >> 5))"},
	{"SIMD_COUNT", "SIMD-groups (warps) in the threadgroup, 32 threads each",
		"((int)(bagel_tgsize.x / 32))", "threads_per_threadgroup", "((int)(blockDim.x >> 5))"},
}

// simdFunctions: on Metal these are metal_stdlib's own (the prelude must not
// define them); on CUDA the prelude defines them as full-warp shuffles, a
// butterfly for the reductions so that every lane gets the result, as on Metal.
var simdFunctions = []struct{ name, meaning, cuda string }{
	{"simd_sum", "sum of v over the SIMD-group, in every lane",
		"INLINE float simd_sum(float v) { for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o); return v; }"},
	{"simd_max", "maximum of v over the SIMD-group, in every lane",
		"INLINE float simd_max(float v) { for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o)); return v; }"},
	{"simd_shuffle_xor", "v of lane LANE ^ mask",
		"INLINE float simd_shuffle_xor(float v, uint mask) { return __shfl_xor_sync(0xffffffffu, v, (int)mask); }" +
			"INLINE int simd_shuffle_xor(int v, uint mask) { return __shfl_xor_sync(0xffffffffu, v, (int)mask); }" +
			"INLINE uint simd_shuffle_xor(uint v, uint mask) { return __shfl_xor_sync(0xffffffffu, v, (int)mask); }"},
	{"simd_shuffle", "v of lane lane",
		"INLINE float simd_shuffle(float v, ushort lane) { return __shfl_sync(0xffffffffu, v, (int)lane); }" +
			"INLINE uint simd_shuffle(uint v, ushort lane) { return __shfl_sync(0xffffffffu, v, (int)lane); }"},
}

func TestPreludesAgreeOnThreadPositions(t *testing.T) {
	metal, cuda := preludeDefines(t, "prelude_metal.h"), preludeDefines(t, "prelude_cuda.h")
	kernelDef := squash(metal["KERNEL"])
	for _, row := range preludeSemantics {
		if got := squash(metal[row.name]); got != squash(row.metal) {
			t.Errorf("%s (%s): Metal defines %q, the table says %q", row.name, row.meaning, metal[row.name], row.metal)
		}
		if got := squash(cuda[row.name]); got != squash(row.cuda) {
			t.Errorf("%s (%s): CUDA defines %q, the table says %q", row.name, row.meaning, cuda[row.name], row.cuda)
		}
		// The Metal macro reads a KERNEL argument; that argument must carry the
		// attribute that gives it the meaning.
		arg := regexp.MustCompile(`bagel_\w+`).FindString(row.metal)
		if want := squash(arg + "[[" + row.metalAttr + "]]"); !strings.Contains(kernelDef, want) {
			t.Errorf("%s: KERNEL does not declare %s [[%s]]: %s", row.name, arg, row.metalAttr, metal["KERNEL"])
		}
	}
}

func TestPreludesAgreeOnSIMDFunctions(t *testing.T) {
	metalSrc, cudaSrc := squash(stripComments(File("prelude_metal.h"))), squash(File("prelude_cuda.h"))
	stub, err := os.ReadFile("metal_stub/metal_stdlib")
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range simdFunctions {
		if strings.Contains(metalSrc, fn.name+"(") {
			t.Errorf("%s (%s): prelude_metal.h mentions it; Metal's own must be used", fn.name, fn.meaning)
		}
		if !strings.Contains(cudaSrc, squash(fn.cuda)) {
			t.Errorf("%s (%s): prelude_cuda.h does not define it as the table says:\n%s", fn.name, fn.meaning, fn.cuda)
		}
		if !strings.Contains(string(stub), " "+fn.name+"(") {
			t.Errorf("%s: the <metal_stdlib> stub does not declare it", fn.name)
		}
	}
}

// preludeDefines maps each #define of a prelude to its body (function-like
// macros with their parameter list), continuation lines joined.
func preludeDefines(t *testing.T, file string) map[string]string {
	t.Helper()
	defs := map[string]string{}
	text := strings.ReplaceAll(File(file), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "#define ")
		if !ok {
			continue
		}
		end := strings.IndexAny(rest, " (")
		if end < 0 {
			defs[rest] = ""
			continue
		}
		defs[rest[:end]] = strings.TrimSpace(rest[end:])
	}
	if len(defs) == 0 {
		t.Fatalf("%s: no #define found", file)
	}
	return defs
}

// squash removes white space, so that formatting does not matter.
func squash(s string) string { return strings.Join(strings.Fields(s), "") }
