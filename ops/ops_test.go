package ops_test

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/cpu"
	"bagel/ops"
)

// sineBF16s is n bf16 values (little-endian, truncated from f32) of v(i):
// test data whose every value differs.
func sineBF16s(n int, v func(i int) float64) []byte {
	b := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(float32(v(i)))>>16))
	}
	return b
}

// uploadBF16 puts bf16 data of shape on c's device.
func uploadBF16(t *testing.T, c *ops.Ctx, data []byte, shape ...int) ops.Tensor {
	t.Helper()
	x, err := ops.Upload(c, ops.BF16, shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one mentioning %q", want)
		}
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Fatalf("panic %v, want one mentioning %q", r, want)
		}
	}()
	f()
}

func TestShapeChecksPanic(t *testing.T) {
	dev := cpu.New(1)
	c := ops.NewCtx(dev, ops.NewArena(dev))
	x := c.Scratch.Get("x", ops.BF16, 2, 64)
	w := c.Scratch.Get("w", ops.BF16, 32)
	mustPanic(t, "rms_norm", func() { ops.RMSNorm(c, x, w, c.Scratch.Get("out", ops.BF16, 3, 64), 1e-6) })
	mustPanic(t, "add_bf16", func() { ops.Add(c, x, w, x) })
	mustPanic(t, "kv_append", func() {
		k := c.Scratch.Get("k", ops.BF16, 4, 1, 8)
		cache := c.Scratch.Get("cache", ops.BF16, 1, 2, 8)
		ops.KVAppend(c, k, k, cache, cache, 0)
	})
	mustPanic(t, "reshape", func() { x.Reshape(3, 5) })
	if got := dev.Counters().Dispatches; got != 0 {
		t.Errorf("%d dispatches recorded by calls that panicked", got)
	}
}

// TestArenaServesByName: two names are two buffers; after a Reset each name
// gets its own buffer again whatever the order of the requests, and a name
// taken twice while live panics (both would share one buffer).
func TestArenaServesByName(t *testing.T) {
	dev := cpu.New(1)
	a := ops.NewArena(dev)
	first := a.Get("first", ops.F32, 16)
	second := a.Get("second", ops.F32, 16)
	if first.Buf == second.Buf {
		t.Fatal("two live scratch tensors share a buffer")
	}
	mustPanic(t, `scratch "first" taken twice`, func() { a.Get("first", ops.F32, 8) })
	a.Reset()
	if again := a.Get("second", ops.F32, 4, 4); again.Buf != second.Buf {
		t.Error("a name did not get its buffer back after Reset")
	}
	if again := a.Get("first", ops.F32, 8); again.Buf != first.Buf {
		t.Error("a name taken after another did not get its own buffer")
	}
	if got := a.Taken(); !slices.Equal(got, []string{"second", "first"}) {
		t.Errorf("Taken = %q, want second, first", got)
	}
}

// freeCounter is a device that counts Free calls.
type freeCounter struct {
	backend.Device
	frees int
}

func (d *freeCounter) Free(b backend.Buffer) {
	d.frees++
	d.Device.Free(b)
}

// TestArenaFreesOutgrownBuffersAtReset: a slot that grows keeps its old
// buffer until Reset, when the work that used it has completed (on a GPU a
// free in the middle of a step waits for the device).
func TestArenaFreesOutgrownBuffersAtReset(t *testing.T) {
	dev := &freeCounter{Device: cpu.New(1)}
	a := ops.NewArena(dev)
	a.Get("a", ops.F32, 16)
	a.Get("b", ops.F32, 16)
	a.Reset()
	a.Get("a", ops.F32, 1<<20) // both slots outgrown within one step
	a.Get("b", ops.F32, 1<<20)
	if dev.frees != 0 {
		t.Fatalf("%d buffers freed while the step that outgrew them was being recorded", dev.frees)
	}
	a.Reset()
	if dev.frees != 2 {
		t.Fatalf("Reset freed %d outgrown buffers, want 2", dev.frees)
	}
	a.Get("a", ops.F32, 1<<20)
	a.Reset()
	if dev.frees != 2 {
		t.Errorf("%d frees after a step that grew nothing, want still 2", dev.frees)
	}
	a.Release()
	if dev.frees != 4 {
		t.Errorf("Release freed %d buffers in all, want 4", dev.frees)
	}
}

// TestArenaRepeatsItsAssignment checks that a step that takes fewer names,
// or the same names in another order, leaves every other name's buffer as it
// was (a replayed decode step after a verify or a prompt).
func TestArenaRepeatsItsAssignment(t *testing.T) {
	dev := cpu.New(1)
	a := ops.NewArena(dev)
	step := func(names ...string) map[string]any {
		bufs := map[string]any{}
		for i, n := range names {
			bufs[n] = a.Get(n, ops.F32, 8+8*i).Buf
		}
		a.Reset()
		return bufs
	}
	first := step("x", "y", "z", "w")
	step("w", "x") // another path: fewer names, another order
	third := step("x", "y", "z", "w")
	for n, b := range first {
		if third[n] != b {
			t.Errorf("%q got another buffer after a step of another path", n)
		}
	}
}

func TestRowsViewsTheRightBytes(t *testing.T) {
	dev := cpu.New(1)
	c := ops.NewCtx(dev, ops.NewArena(dev))
	x, err := ops.Upload(c, ops.F32, []int{3, 2}, f32bytes(1, 2, 3, 4, 5, 6))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ops.ReadF32(c, x.Rows(1, 3))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0] != 3 || got[3] != 6 {
		t.Fatalf("rows 1..3 = %v, want [3 4 5 6]", got)
	}
	if dev.Counters().HostSyncs != 1 {
		t.Errorf("host syncs %d, want 1", dev.Counters().HostSyncs)
	}
}

func f32bytes(v ...float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, f := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
	}
	return out
}

// TestAddRMSNormIsAddThenNorm checks the fused residual add + norm against the
// two ops it replaces, bit for bit, with the sum written in place over a.
func TestAddRMSNormIsAddThenNorm(t *testing.T) {
	dev := cpu.New(1)
	c := ops.NewCtx(dev, ops.NewArena(dev))
	const R, N = 3, 200
	bf16s := func(n int, seed float64) []byte {
		return sineBF16s(n, func(i int) float64 { return float64(float32(math.Sin(seed*float64(i+1))) * 3) })
	}
	upload := func(data []byte, shape ...int) ops.Tensor { return uploadBF16(t, c, data, shape...) }
	aData, bData, wData := bf16s(R*N, 1.3), bf16s(R*N, 0.7), bf16s(N, 2.9)
	a1, a2, b, w := upload(aData, R, N), upload(aData, R, N), upload(bData, R, N), upload(wData, N)
	out1, out2 := c.Scratch.Get("out1", ops.BF16, R, N), c.Scratch.Get("out2", ops.BF16, R, N)
	ops.Add(c, a1, b, a1)
	ops.RMSNorm(c, a1, w, out1, 1e-6)
	ops.AddRMSNorm(c, a2, b, w, a2, out2, 1e-6)
	if err := ops.Submit(c); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]ops.Tensor{{a1, a2}, {out1, out2}} {
		want, err := ops.ReadBytes(c, pair[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := ops.ReadBytes(c, pair[1])
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("fused result differs from Add then RMSNorm")
		}
	}
	mustPanic(t, "add_rms_norm", func() { ops.AddRMSNorm(c, a1, w, w, a1, out1, 1e-6) })
}

// TestArenaScopes: Rewind makes the names taken after the mark free to take
// again (the same buffers, grown where a request is larger) and keeps the
// ones before it; a scope opened again rewinds to itself (a layer after a
// layer); a mark past the names live panics.
func TestArenaScopes(t *testing.T) {
	dev := cpu.New(1)
	a := ops.NewArena(dev)
	keep := a.Get("keep", ops.BF16, 16)
	mark := a.Mark()
	first := a.Get("first", ops.F32, 64)
	a.Rewind(mark)
	again := a.Get("first", ops.F32, 32)
	if again.Buf != first.Buf || again.Buf == keep.Buf {
		t.Errorf("after Rewind a name got another buffer")
	}
	mustPanic(t, `scratch "keep" taken twice`, func() { a.Get("keep", ops.BF16, 16) })
	a.Rewind(mark)
	if bigger := a.Get("first", ops.F32, 1<<16); bigger.Buf == first.Buf || bigger.Buf.Len() < 4<<16 {
		t.Errorf("a larger request after Rewind did not grow its buffer")
	}
	if n, _ := a.Allocations(); n != 3 {
		t.Errorf("%d buffers allocated, want 3 (two names, one grown)", n)
	}
	for range 3 { // three layers: each frees the one before
		a.Scope("layer")
		a.Get("layer.x", ops.F32, 16)
	}
	if !slices.Contains(a.Taken(), "keep") || a.Mark() != 4 { // keep, first, the scope, layer.x
		t.Errorf("after three scopes %d names live, want 4", a.Mark())
	}
	before := a.Held() // the outgrown buffer too, until Reset frees it
	a.Reset()
	if _, bytes := a.Allocations(); a.Held() != bytes || before <= bytes {
		t.Errorf("Held %d after Reset (%d before), the slots hold %d", a.Held(), before, bytes)
	}
	mustPanic(t, "arena rewound", func() { a.Rewind(a.Mark() + 1) })
}

// TestTiledAttentionFits: the tiled attention kernels are chosen on a device
// with matrix units (the CPU says so: it runs their references) for heads of a
// multiple of 16 values up to FA_MAX_D, and the tiled split for up to 64 rows
// (queries × q-heads) a kv-head.
func TestTiledAttentionFits(t *testing.T) {
	dev := cpu.New(1)
	c := ops.NewCtx(dev, ops.NewArena(dev))
	for _, tc := range []struct {
		t, hq, hkv, d int
		flash, split  bool
	}{
		{1, 16, 2, 256, true, true}, {8, 16, 2, 256, true, true}, {9, 16, 2, 256, true, false},
		{1, 4, 2, 80, true, true}, {1, 4, 2, 36, false, false}, {1, 4, 2, 512, false, false}, {1, 6, 4, 256, true, false},
	} {
		if got := ops.FlashAttention(c, tc.d); got != tc.flash {
			t.Errorf("FlashAttention(d=%d) = %v, want %v", tc.d, got, tc.flash)
		}
		if got := ops.SplitKVTiledFits(c, tc.t, tc.hq, tc.hkv, tc.d); got != tc.split {
			t.Errorf("SplitKVTiledFits(t=%d, hq=%d, hkv=%d, d=%d) = %v, want %v", tc.t, tc.hq, tc.hkv, tc.d, got, tc.split)
		}
	}
}

// noMatrixUnits is a device that says it has no matrix units (as Metal does).
type noMatrixUnits struct{ backend.Device }

func (noMatrixUnits) MatrixUnits() bool { return false }

// TestTiledGEMVFits: the matrix-unit GEMVs take 4-bit weights in groups of 64
// or 128 on a device with matrix units, and nothing else; the answer has no
// token count in it, so a step and a verify take the same kernel.
func TestTiledGEMVFits(t *testing.T) {
	dev := cpu.New(1)
	c := ops.NewCtx(dev, ops.NewArena(dev))
	for _, tc := range []struct {
		bits, gs, experts int
		want              bool
	}{
		{4, 64, 0, true}, {4, 128, 0, true}, {4, 32, 0, false}, {8, 64, 0, false}, {3, 64, 0, false}, {4, 64, 8, false},
	} {
		w := ops.QLinear{Name: "w", In: 2048, Out: 16, Bits: tc.bits, GroupSize: tc.gs, Experts: tc.experts}
		if got := ops.TiledGEMV(c, w); got != tc.want {
			t.Errorf("TiledGEMV(%d-bit, groups of %d, %d experts) = %v, want %v", tc.bits, tc.gs, tc.experts, got, tc.want)
		}
	}
	if !ops.TiledGEMVs(c) {
		t.Error("TiledGEMVs on the CPU backend (which runs the reference) = false")
	}
	plain := ops.NewCtx(noMatrixUnits{dev}, ops.NewArena(dev))
	if ops.TiledGEMVs(plain) || ops.TiledGEMV(plain, ops.QLinear{Bits: 4, GroupSize: 64}) {
		t.Error("a device without matrix units takes the tiled GEMV")
	}
	mustPanic(t, "tiled GEMV", func() {
		ops.QMatmulTiled(c, ops.Tensor{}, ops.QLinear{Name: "router", Bits: 8, GroupSize: 64}, ops.Tensor{})
	})
}

// TestTiledExpertsFit: which experts the matrix-unit MoE kernels take (4-bit
// in groups of 64 or 128, routed and shared alike, at most 8 experts a token
// for the down projection's 16 tokens), on which devices; never a token count.
func TestTiledExpertsFit(t *testing.T) {
	dev := cpu.New(1)
	c := ops.NewCtx(dev, ops.NewArena(dev))
	expert := func(bits, gs, experts int) ops.QLinear {
		return ops.QLinear{Name: "w", In: 2048, Out: 512, Bits: bits, GroupSize: gs, Experts: experts}
	}
	for _, tc := range []struct {
		gate, shared ops.QLinear
		want         bool
	}{
		{expert(4, 64, 256), expert(4, 64, 0), true}, {expert(4, 128, 64), expert(4, 128, 0), true},
		{expert(8, 64, 256), expert(8, 64, 0), false}, {expert(4, 32, 256), expert(4, 32, 0), false},
		{expert(4, 64, 256), expert(4, 128, 0), false}, // the shared expert quantized otherwise
	} {
		if got := ops.MoEUpTiledFits(c, tc.gate, tc.shared, tc.shared); got != tc.want {
			t.Errorf("MoEUpTiledFits(%d-bit/%d, shared %d-bit/%d) = %v, want %v", tc.gate.Bits, tc.gate.GroupSize, tc.shared.Bits, tc.shared.GroupSize, got, tc.want)
		}
	}
	down, shared := ops.QLinear{Name: "down", In: 512, Out: 2048, Bits: 4, GroupSize: 64, Experts: 256}, ops.QLinear{Name: "shared", In: 512, Out: 2048, Bits: 4, GroupSize: 64}
	if !ops.MoEDownTiledFits(c, down, shared, 8) || ops.MoEDownTiledFits(c, down, shared, 9) {
		t.Error("MoEDownTiledFits should take 8 experts a token and refuse 9 (16 tokens of 9 slots pass its 128)")
	}
	shared8 := shared
	shared8.Bits = 8
	if ops.MoEDownTiledFits(c, down, shared8, 8) {
		t.Error("MoEDownTiledFits takes an 8-bit shared expert")
	}
	plain := ops.NewCtx(noMatrixUnits{dev}, ops.NewArena(dev))
	if ops.MoEUpTiledFits(plain, expert(4, 64, 256), expert(4, 64, 0), expert(4, 64, 0)) || ops.MoEDownTiledFits(plain, down, shared, 8) {
		t.Error("a device without matrix units takes the tiled experts")
	}
}
