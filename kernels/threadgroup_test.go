package kernels

import (
	"fmt"
	"strings"
	"testing"
)

// TestEveryKernelFitsMetalThreadgroupMemory evaluates every kernel's TG_MEM
// arrays as Metal compiles them and holds the total to 32 KiB, logging each
// kernel's bytes and arrays.
func TestEveryKernelFitsMetalThreadgroupMemory(t *testing.T) {
	arrays := MetalThreadgroupArrays()
	for _, name := range Names() {
		list, ok := arrays[name]
		if !ok {
			t.Errorf("kernel %s not found in the Metal source's kernel bodies", name)
			continue
		}
		var parts []string
		for _, a := range list {
			parts = append(parts, fmt.Sprintf("%s %s[%d] %d", a.Type, a.Name, a.Count, a.Bytes))
		}
		t.Logf("%-28s %6d bytes  %s", name, MetalThreadgroupBytes(name), strings.Join(parts, ", "))
	}
	if len(arrays) != len(Names()) {
		t.Errorf("threadgroup arrays of %d kernels, the source declares %d", len(arrays), len(Names()))
	}
	for _, over := range ThreadgroupOverLimit(arrays, MetalThreadgroupLimit) {
		t.Errorf("real kernel over Metal's limit: %s", over)
	}
}

// TestThreadgroupBytesUseTheMetalBranch pins values that depend on the
// evaluation: qgemm's tile (QG_SMEM floats of the Metal branch, 16-byte
// aligned) plus 128 row indices, moe_sort's 1025-int arrays padded to the
// granule, gdn_chunk_bf16's bf16 arrays at 2 bytes.
func TestThreadgroupBytesUseTheMetalBranch(t *testing.T) {
	for kernel, want := range map[string]int{
		"qgemm_bf16":     6912*4 + 128*4,
		"moe_sort_i32":   2*4112 + 1024*4 + 4096*4,
		"gdn_chunk_bf16": 2*(32*128*2) + 2*(32*32*4) + 3*(32*16*4) + 2*(32*4),
		"add_bf16":       0,
	} {
		if got := MetalThreadgroupBytes(kernel); got != want {
			t.Errorf("%s: %d bytes, want %d", kernel, got, want)
		}
	}
	// QG_BK is 32 on Metal and 64 on CUDA (Defines() reads the file's last
	// definition, CUDA's): the evaluation must take the Metal one.
	s, err := scanMetal(MetalSource())
	if err != nil {
		t.Fatal(err)
	}
	if got := integerMacros(s.macros)["QG_BK"]; got != 32 {
		t.Errorf("QG_BK on Metal = %d, want 32", got)
	}
}

// TestThreadgroupCheckCatchesOversized appends deliberately broken kernels to
// the real source: an array over the limit must be named, and arrays the
// count would miss must be errors rather than silently uncounted.
func TestThreadgroupCheckCatchesOversized(t *testing.T) {
	const over = `
#define TOO_BIG (MOE_SORT_CHUNK * 2 + 1)
KERNEL(tg_oversized_f32, BUFFER(float, out, 0)) {
  TG_MEM(float, big, TOO_BIG);
  TG_MEM(bf16_t, small, 8);
  out[0] = big[0] + (float)small[0];
}
`
	arrays, err := metalThreadgroupArrays(MetalSource() + over)
	if err != nil {
		t.Fatal(err)
	}
	got := ThreadgroupOverLimit(arrays, MetalThreadgroupLimit)
	want := "tg_oversized_f32: 32800 bytes of threadgroup memory, Metal allows 32768" // 8193 floats → 32784, + 16
	if len(got) != 1 || got[0] != want {
		t.Errorf("over the limit: %q, want [%q]", got, want)
	}

	for _, c := range []struct{ name, src, wantErr string }{
		{"in a helper", "INLINE void h() {\n  TG_MEM(float, x, 4);\n}\n", "not a kernel"},
		{"raw threadgroup array", "KERNEL(k_raw_f32, BUFFER(float, out, 0)) {\n  threadgroup float x[4];\n}\n", "without TG_MEM"},
		{"unknown size name", "KERNEL(k_name_f32, BUFFER(float, out, 0)) {\n  TG_MEM(float, x, NO_SUCH_DEFINE);\n}\n", "NO_SUCH_DEFINE"},
		{"unknown element type", "KERNEL(k_type_f32, BUFFER(float, out, 0)) {\n  TG_MEM(mystery_t, x, 4);\n}\n", "mystery_t"},
	} {
		if _, err := metalThreadgroupArrays(MetalSource() + c.src); err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.wantErr)
		}
	}
}

// TestThreadgroupDefinesFollowTheBranch: a size defined differently per
// backend takes the Metal side's value.
func TestThreadgroupDefinesFollowTheBranch(t *testing.T) {
	const src = `
#if defined(__METAL_VERSION__)
#define SIDE 100
#else
#define SIDE 9999
#endif
#define TWICE (SIDE * 2)
KERNEL(k_branch_f32, BUFFER(float, out, 0)) {
  TG_MEM(float, x, TWICE);
}
`
	arrays, err := metalThreadgroupArrays(src)
	if err != nil {
		t.Fatal(err)
	}
	if a := arrays["k_branch_f32"]; len(a) != 1 || a[0].Count != 200 || a[0].Bytes != 800 {
		t.Errorf("arrays %+v, want 200 floats, 800 bytes", a)
	}
}
