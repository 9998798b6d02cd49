//go:build linux

package cuda

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

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

// TestGPUIdleCountsTheHostsGaps: a host pause between two submits is idle
// time before a submit, and a pause between the graph segments of one submit
// (the host recording slowly) idle time inside it; without graphs (one
// measured unit a submit) nothing is idle inside. It bounds the idle time
// only from below, by the pause the GPU surely stood empty for (a busy
// machine only lengthens the gaps): how little idle back-to-back work adds,
// or how far over the pause a gap runs, is a wall-clock figure for bagel
// bench (its idle rows), not a test.
func TestGPUIdleCountsTheHostsGaps(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	const n, pause = 1 << 16, 30 * time.Millisecond
	x, _ := dev.Alloc(2 * n)
	y, _ := dev.Alloc(2 * n)
	add := func(enc backend.Encoder, count int) {
		for range count {
			args := []backend.Arg{backend.Buf(x, 0), backend.Buf(y, 0), backend.Buf(x, 0), backend.Int(n)}
			grid, group := kernels.Launch("add_bf16", args)
			enc.Dispatch("add_bf16", grid, group, args...)
		}
	}
	submit := func(enc backend.Encoder) {
		if err := enc.Submit(); err != nil {
			t.Fatal(err)
		}
		if err := dev.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // the second sight of the sequence builds the graphs
		enc := dev.Encoder()
		add(enc, 3*graphFirstSegment)
		submit(enc)
	}
	before0, inside0 := dev.GPUIdle()
	enc := dev.Encoder()
	add(enc, 3*graphFirstSegment)
	submit(enc)
	before1, inside1 := dev.GPUIdle()
	time.Sleep(pause)
	enc = dev.Encoder()
	add(enc, graphFirstSegment) // the first segment, launched as it fills
	time.Sleep(pause)
	add(enc, 2*graphFirstSegment)
	submit(enc)
	before2, inside2 := dev.GPUIdle()
	t.Logf("idle before submits %v, %v after the pause; inside %v, %v after the pause", before1-before0, before2-before1, inside1-inside0, inside2-inside1)
	if before0 < 0 || inside0 < 0 || before1 < before0 || inside1 < inside0 || before2 < before1 || inside2 < inside1 {
		t.Fatalf("idle time went negative or back: before %v, %v, %v; inside %v, %v, %v", before0, before1, before2, inside0, inside1, inside2)
	}
	if got := before2 - before1; got < pause*2/3 {
		t.Errorf("a %v pause before a submit measured as %v of idle before it", pause, got)
	}
	if !dev.useGraphs {
		if inside2 != inside0 {
			t.Errorf("one unit a submit (no graphs) measured %v of idle inside submits", inside2-inside0)
		}
		return
	}
	if got := inside2 - inside1; got < pause*2/3 {
		t.Errorf("a %v pause between a submit's segments measured as %v of idle between them", pause, got)
	}
}

// TestWriteTakesItsBytesAtOnce: Write may return before its copy has run on
// the stream (cuMemcpyHtoDAsync from pageable memory stages the bytes first),
// so the caller may reuse src at once: the device gets what src held at the
// call, after the work launched before it.
func TestWriteTakesItsBytesAtOnce(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	const n = 1 << 16
	x, _ := dev.Alloc(2 * n)
	y, _ := dev.Alloc(2 * n)
	enc := dev.Encoder()
	for range 200 { // keep the stream busy while the host writes
		args := []backend.Arg{backend.Buf(y, 0), backend.Buf(y, 0), backend.Buf(y, 0), backend.Int(n)}
		grid, group := kernels.Launch("add_bf16", args)
		enc.Dispatch("add_bf16", grid, group, args...)
	}
	if err := enc.Submit(); err != nil {
		t.Fatal(err)
	}
	src := make([]byte, 2*n)
	for i := range src {
		src[i] = byte(i * 7)
	}
	want := append([]byte(nil), src...)
	if err := dev.Write(x, 0, src); err != nil {
		t.Fatal(err)
	}
	for i := range src {
		src[i] = 0xff
	}
	got := make([]byte, 2*n)
	if err := dev.Read(x, 0, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("the device holds bytes written to src after Write returned")
	}
}
