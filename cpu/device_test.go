package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"bagel/backend"
	"bagel/kernels"
)

func TestCounters(t *testing.T) {
	d := newTestDevice()
	a := bf16Buf(t, d, []float32{1, 2})
	b := bf16Buf(t, d, []float32{3, 4})
	if c := d.Counters(); c != (backend.Counters{}) {
		t.Fatalf("after Alloc and Write: %+v, want zeros", c)
	}
	enc := d.Encoder()
	for range 3 {
		enc.Dispatch("add_bf16", backend.Dim3{}, backend.Dim3{}, arg(a), arg(b), arg(a), backend.Int(2))
	}
	if err := enc.Submit(); err != nil {
		t.Fatal(err)
	}
	if err := d.Encoder().Submit(); err != nil {
		t.Fatal(err)
	}
	got := readBF16(t, d, a, 2)
	if got[0] != 10 || got[1] != 14 {
		t.Fatalf("a = %v after three in-place adds, want [10 14]", got)
	}
	if c, want := d.Counters(), (backend.Counters{Dispatches: 3, CommandBuffers: 2, HostSyncs: 1}); c != want {
		t.Fatalf("counters %+v, want %+v", c, want)
	}
}

func TestDispatchPanics(t *testing.T) {
	d := newTestDevice()
	small := bf16Buf(t, d, make([]float32, 3))
	big := bf16Buf(t, d, make([]float32, 8))
	run := func(kernel string, args ...backend.Arg) func() {
		return func() { dispatch(d, kernel, args...) }
	}
	mustPanic(t, run("no_such_kernel"), "no_such_kernel")
	mustPanic(t, run("add_bf16", arg(big), arg(big), backend.Int(4)), "add_bf16", "3 arguments, want 4")
	mustPanic(t, run("add_bf16", arg(big), backend.Int(1), arg(big), backend.Int(4)), "add_bf16", "(b)", "want a buffer")
	mustPanic(t, run("add_bf16", arg(big), arg(big), arg(big), backend.Float(4)), "add_bf16", "(N)", "int32")
	mustPanic(t, run("rms_norm_bf16", arg(big), arg(big), arg(big), backend.Int(1), backend.Int(4), backend.Int(0)),
		"rms_norm_bf16", "(eps)", "f32")
	mustPanic(t, run("add_bf16", arg(big), arg(small), arg(big), backend.Int(4)), "add_bf16", "(b)", "needs 4 elements")
	mustPanic(t, run("add_bf16", arg(big), backend.Buf(big, 10), arg(big), backend.Int(4)), "add_bf16", "(b)", "offset 10")
	mustPanic(t, run("add_bf16", arg(big), backend.Buf(big, 17), arg(big), backend.Int(1)), "add_bf16", "(b)", "offset 17")
	mustPanic(t, run("add_bf16", arg(big), arg(big), arg(big), backend.Int(-1)), "add_bf16", "(N)", "negative")
	mustPanic(t, run("add_bf16", arg(big), arg(foreign{}), arg(big), backend.Int(1)), "add_bf16", "(b)", "not a cpu buffer")

	d.Free(small)
	mustPanic(t, run("add_bf16", arg(big), arg(small), arg(big), backend.Int(1)), "add_bf16", "(b)", "freed")
	if err := d.Read(small, 0, make([]byte, 1)); err == nil {
		t.Fatal("Read of a freed buffer succeeded")
	}
	if err := d.Write(big, 15, make([]byte, 2)); err == nil {
		t.Fatal("Write past the end succeeded")
	}
}

type foreign struct{}

func (foreign) Len() int { return 64 }

// TestWrapHostUnaligned runs kernels on caller memory at odd addresses, as an
// mmap'd file gives them, and sees the results in that memory without a copy.
func TestWrapHostUnaligned(t *testing.T) {
	d := newTestDevice()
	host := make([]byte, 64)
	buf, err := d.WrapHost(host[1:]) // odd base address
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []float32{1, 2, 3, 4} { // a bf16 [4] at byte 0, b bf16 [4] at byte 8
		binary.LittleEndian.PutUint16(host[1+2*i:], backend.F32ToBF16(v))
		binary.LittleEndian.PutUint16(host[1+8+2*i:], backend.F32ToBF16(10*v))
	}
	dispatch(d, "add_bf16", backend.Buf(buf, 0), backend.Buf(buf, 8), backend.Buf(buf, 16), backend.Int(4))
	for i, want := range []float32{11, 22, 33, 44} {
		if got := backend.BF16ToF32(binary.LittleEndian.Uint16(host[1+16+2*i:])); got != want {
			t.Fatalf("out[%d] = %v in host memory, want %v", i, got, want)
		}
	}

	// f32 outputs at an address that is 1 mod 4: g and beta of gdn_gates.
	a := bf16Buf(t, d, []float32{0})
	aLog := f32Buf(t, d, []float32{0})
	dispatch(d, "gdn_gates_bf16", arg(a), arg(a), arg(aLog), arg(a), backend.Buf(buf, 24), backend.Buf(buf, 28), backend.Int(1), backend.Int(1))
	var gBeta [2]float32
	for i := range gBeta {
		gBeta[i] = math.Float32frombits(binary.LittleEndian.Uint32(host[1+24+4*i:]))
	}
	if gBeta[1] != 0.5 || gBeta[0] < 0.5 || gBeta[0] > 0.501 {
		t.Fatalf("g, beta = %v in host memory, want ≈0.5009, 0.5", gBeta)
	}
}

func TestParallelCoversAndCarriesPanics(t *testing.T) {
	a := &args{kernel: "test", threads: 4}
	seen := make([]int, 1000)
	a.parallel(len(seen), 1<<20, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			seen[i]++
		}
	})
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("item %d ran %d times", i, n)
		}
	}
	mustPanic(t, func() {
		a.parallel(100, 1<<20, func(lo, hi int) {
			if lo > 0 {
				panic("boom in a worker")
			}
		})
	}, "boom in a worker")
}

// TestRegistryMatchesDeclarations checks that the registry has a Go reference
// for exactly the kernels declared in kernels/*.metal (whose arguments the
// references read by name; kernels' own tests hold README.md to the same
// declarations).
func TestRegistryMatchesDeclarations(t *testing.T) {
	if !slices.Equal(kernels.Names(), Kernels()) {
		t.Errorf("declared kernels %v\nregistry %v", kernels.Names(), Kernels())
	}
}

// TestArgsByName checks that references read arguments by their declared
// names, and that reading a name the declaration lacks panics naming it.
func TestArgsByName(t *testing.T) {
	sig := kernels.Signatures()["add_bf16"]
	d := New(1)
	buf, _ := d.Alloc(8)
	a := newArgs("add_bf16", sig, []backend.Arg{backend.Buf(buf, 0), backend.Buf(buf, 0), backend.Buf(buf, 0), backend.Int(4)}, 1)
	if a.intArg("N") != 4 || a.name(3) != "N" {
		t.Errorf("N = %d (%s)", a.intArg("N"), a.name(3))
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `no argument named "M"`) {
			t.Errorf("panic %v, want one naming the missing argument", r)
		}
	}()
	a.intArg("M")
}
