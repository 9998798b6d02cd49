package kernels

import (
	"strings"
	"testing"
)

// knownMSLViolations are violations of the Metal source that a kernel change
// must fix (kernel sources are not changed without a GPU run to rebuild
// cuda/ptx), by "rule position". Empty: the source follows every rule.
var knownMSLViolations = map[string]string{}

func TestMetalSourceFollowsMSLRules(t *testing.T) {
	vs, err := checkMSL(MetalSource())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if todo, ok := knownMSLViolations[v.rule+" "+v.pos]; ok {
			t.Logf("known, skipped: %v (TODO: %s)", v, todo)
			continue
		}
		t.Error(v)
	}
}

// TestScannerSeesTheMetalSource guards the rules against passing vacuously: the
// scanner must find every kernel, the helpers, the Metal branch of qgemm.metal
// and not its CUDA branch.
func TestScannerSeesTheMetalSource(t *testing.T) {
	s, err := scanMetal(MetalSource())
	if err != nil {
		t.Fatal(err)
	}
	fns := functions(s.code)
	kernels, helpers := map[string]bool{}, map[string]bool{}
	for _, fn := range fns {
		if fn.kernel {
			kernels[fn.name] = true
		} else {
			helpers[fn.name] = true
		}
	}
	for _, name := range Names() {
		if !kernels[name] {
			t.Errorf("kernel %s not found by the scanner", name)
		}
	}
	if len(kernels) != len(Names()) {
		t.Errorf("scanner found %d kernels, the source declares %d", len(kernels), len(Names()))
	}
	for _, name := range []string{"bf16_to_f32", "tg_sum", "qcode", "mma_16x16x16", "qg_fetch_w"} {
		if !helpers[name] {
			t.Errorf("helper %s not found by the scanner", name)
		}
	}
	for _, tok := range s.code {
		if tok.text == "asm" || tok.text == "__shfl_xor_sync" {
			t.Errorf("%s: CUDA-only %s in the Metal branch", tok.pos, tok.text)
		}
	}
	code := joinTokens(s.code)
	if !strings.Contains(code, "simdgroup_multiply_accumulate") {
		t.Error("the Metal branch of qgemm.metal (simdgroup_multiply_accumulate) is missing")
	}
}

// TestMSLRulesCatchBrokenSnippets appends one deliberately broken snippet per
// case to the real source and requires its rule to report it in the snippet.
func TestMSLRulesCatchBrokenSnippets(t *testing.T) {
	cases := []struct{ rule, snippet string }{
		{"address-space", "INLINE float first(const float *p) { return p[0]; }"},
		{"address-space", "INLINE void bump(thread int &n, int &m) { n++; m++; }"},
		{"address-space", "KERNEL(bad_raw_pointer, BUFFER(float, out, 0), PARAM(int, n, 1), float *extra) { out[0] = extra[0]; }"},
		{"address-space", "#undef BUFFER\n#define BUFFER(type, name, index) type *name [[buffer(index)]]"},
		{"no-double", "INLINE float twice(float x) { double y = x; return (float)(2 * y); }"},
		{"no-double", "#define ACC_T double"},
		{"float-literal", "INLINE float half_of(float x) { return x * 0.5; }"},
		{"float-literal", "INLINE float tiny() { return 1e-6; }"},
		{"no-recursion", "INLINE int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }"},
		{"no-recursion", "INLINE int ping(int n);\nINLINE int pong(int n) { return n ? ping(n - 1) : 0; }\nINLINE int ping(int n) { return n ? pong(n - 1) : 1; }"},
		{"no-recursion", "#define AGAIN(n) again(n)\nINLINE int again(int n) { return n ? AGAIN(n - 1) : 0; }"},
		{"no-function-pointer", "INLINE float apply(float (*f)(float), float x) { return f(x); }"},
		{"no-function-pointer", "INLINE float pick(bool s, float x) { return (s ? sigmoidf : siluf)(x); }"},
		{"no-function-pointer", "typedef float (*unary_fn)(float);"},
		{"no-function-pointer", "template <int N> INLINE int times(int x) { return N * x; }\nINLINE int pick2(bool s, int x) { return (s ? times<1> : times<2>)(x); }"},
		{"attribute", "KERNEL(bad_attr, BUFFER(float, out, 0), uint lane [[thread_index_in_simd_group]]) { out[0] = 0.0f; }"},
		{"attribute", "INLINE [[gnu::always_inline]] float f1(float x) { return x; }"},
		{"attribute", "__device__ float cuda_helper(float x) { return x; }"},
		{"attribute", "INLINE float sync(float x) { __syncthreads(); return x; }"},
		{"type-name", "INLINE int halve(int n) { int half = n / 2; return half; }"},
		{"type-name", "INLINE int lanes(int n) { for (int half = 0; half < n; half++) {} return n; }"},
		{"type-name", "INLINE float mid(float x, float half) { return x * half; }"},
		{"type-name", "struct pair_of { float float2; };"},
	}
	for _, c := range cases {
		src := MetalSource() + "\n#line 1 \"broken.metal\"\n" + c.snippet + "\n"
		vs, err := checkMSL(src)
		if err != nil {
			t.Fatalf("%q: %v", c.snippet, err)
		}
		caught := false
		for _, v := range vs {
			if v.rule == c.rule && strings.HasPrefix(v.pos, "broken.metal:") {
				caught = true
				t.Logf("caught: %v", v)
			}
		}
		if !caught {
			t.Errorf("rule %s missed %q (reported: %v)", c.rule, c.snippet, vs)
		}
	}
}

// TestMSLRulesAllowTemplateCalls: calling a function template with its
// arguments (`f<2>(x)`) is a call, not a function pointer.
func TestMSLRulesAllowTemplateCalls(t *testing.T) {
	snippet := "template <int N, int M> INLINE int scaled(int x) { return N * x + M; }\n" +
		"INLINE int uses(int x) { return scaled<2, 1>(x) + scaled<(3 > 2), 0>(x); }"
	vs, err := checkMSL(MetalSource() + "\n#line 1 \"template.metal\"\n" + snippet + "\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if strings.HasPrefix(v.pos, "template.metal:") {
			t.Errorf("a template call reported: %v", v)
		}
	}
}

// TestScannerConditionals checks the #if evaluation the rules rely on to drop
// CUDA-only text.
func TestScannerConditionals(t *testing.T) {
	src := `#define A 3
#if defined(__METAL_VERSION__) && A >= 3
metal_yes
#elif 1
elif_no
#else
else_no
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
cuda_no
#else
cuda_else_yes
#endif
#ifndef A
ifndef_no
#endif
#ifdef A
ifdef_yes /* a comment
over lines */ after_comment_yes
#endif
`
	s, err := scanMetal(src)
	if err != nil {
		t.Fatal(err)
	}
	got := joinTokens(s.code)
	if want := "metal_yes cuda_else_yes ifdef_yes after_comment_yes"; got != want {
		t.Errorf("active code %q, want %q", got, want)
	}
}
