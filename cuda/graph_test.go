//go:build linux

package cuda

import (
	"encoding/binary"
	"runtime"
	"testing"

	"bagel/backend"
	"bagel/kernels"
)

// TestGraphReplay submits the same sequence of launches four times with one
// argument (a buffer offset) changing between submits: the first runs kernel by
// kernel, the second builds the graph, the later ones update it in place. Each
// result must be the sum the launches make, and a host write recorded in the
// middle of a sequence must land between the launches before and after it.
func TestGraphReplay(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	if !dev.useGraphs {
		t.Skipf("graphs off: %s", dev.Describe())
	}
	const n, steps = 1024, 10
	bf16s := func(v float32, count int) []byte {
		b := make([]byte, 2*count)
		for i := range count {
			binary.LittleEndian.PutUint16(b[2*i:], backend.F32ToBF16(v))
		}
		return b
	}
	x, _ := dev.Alloc(2 * n)
	y, _ := dev.Alloc(4 * n) // [1.0 × n | 2.0 × n]
	if err := dev.Write(y, 0, append(bf16s(1, n), bf16s(2, n)...)); err != nil {
		t.Fatal(err)
	}
	read := func() float32 {
		got := make([]byte, 2*n)
		if err := dev.Read(x, 0, got); err != nil {
			t.Fatal(err)
		}
		first := backend.BF16ToF32(binary.LittleEndian.Uint16(got))
		for i := range n {
			if v := backend.BF16ToF32(binary.LittleEndian.Uint16(got[2*i:])); v != first {
				t.Fatalf("element %d is %v, element 0 %v", i, v, first)
			}
		}
		return first
	}
	addAll := func(enc backend.Encoder, yOff int) {
		for range steps {
			args := []backend.Arg{backend.Buf(x, 0), backend.Buf(y, yOff), backend.Buf(x, 0), backend.Int(n)}
			grid, group := kernels.Launch("add_bf16", args)
			enc.Dispatch("add_bf16", grid, group, args...)
		}
	}
	want := float32(0)
	for submit, yOff := range []int{0, 2 * n, 0, 2 * n} {
		enc := dev.Encoder()
		addAll(enc, yOff)
		if err := enc.Submit(); err != nil {
			t.Fatal(err)
		}
		want += steps * float32(1+yOff/(2*n))
		if got := read(); got != want {
			t.Fatalf("submit %d: x = %v, want %v", submit, got, want)
		}
	}
	if g := dev.Counters().GraphLaunches; g != 3 {
		t.Errorf("%d graph launches, want 3 (the first sight launches directly)", g)
	}
	if dev.TotalGPUTime() <= 0 {
		t.Errorf("no GPU time measured (%v)", dev.TotalGPUTime())
	}

	enc := dev.Encoder()
	addAll(enc, 0)
	if err := dev.Write(x, 0, bf16s(0, n)); err != nil { // after the 10 adds
		t.Fatal(err)
	}
	addAll(enc, 2*n)
	if err := enc.Submit(); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != 2*steps {
		t.Fatalf("write between recorded launches: x = %v, want %v", got, 2*steps)
	}
}

func TestSegmentLimitsGrowToTheSegment(t *testing.T) {
	var got []int
	for n := range 6 {
		got = append(got, segmentLimit(n))
	}
	first := graphFirstSegment
	if got[0] != first || got[5] != graphSegment {
		t.Fatalf("segment limits %v: want %d first and %d in the end", got, first, graphSegment)
	}
	for n := 1; n < len(got); n++ {
		if got[n] < got[n-1] || got[n] > 2*got[n-1] {
			t.Fatalf("segment limits %v: each at most twice the one before, never less", got)
		}
	}
}
