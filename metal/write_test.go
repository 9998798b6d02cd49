package metal

import (
	"encoding/binary"
	"runtime"
	"slices"
	"testing"

	"bagel/backend"
	"bagel/kernels"
)

// fillWords records dst's words [at, at+n) = v in e, uncommitted.
func fillWords(e backend.Encoder, dst backend.Buffer, at, n, v int) {
	args := []backend.Arg{backend.Buf(dst, 4*at), backend.Int(n), backend.Int(v)} // dst, N, value
	grid, group := kernels.Launch("fill_u32", args)
	e.Dispatch("fill_u32", grid, group, args...)
}

// words reads b's first n words.
func words(t *testing.T, dev *Device, b backend.Buffer, n int) []int {
	t.Helper()
	raw := make([]byte, 4*n)
	if err := dev.Read(b, 0, raw); err != nil {
		t.Fatal(err)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = int(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func wordBytes(v ...int) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(x))
	}
	return out
}

// TestWriteComesAfterRecordedWork: a Write lands in program order among
// dispatches recorded and not yet committed, as on CUDA's stream: after those
// recorded before it, under those recorded after it. A small write behind
// them, or behind a command buffer in flight, is staged (no host sync); more
// writes than the staging slots and a write of odd bytes still land in
// order; an encoder's first dispatch commits another encoder's recorded work
// first.
func TestWriteComesAfterRecordedWork(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	b, err := dev.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}

	e := dev.Encoder()
	fillWords(e, b, 0, 16, 7)
	syncs := dev.Counters().HostSyncs
	if err := dev.Write(b, 8, wordBytes(5, 5)); err != nil {
		t.Fatal(err)
	}
	if n := dev.Counters().HostSyncs - syncs; n != 0 {
		t.Errorf("a small write behind recorded work took %d host syncs, want 0 (staged)", n)
	}
	fillWords(e, b, 3, 2, 9) // recorded after the write: over its second word
	if err := e.Submit(); err != nil {
		t.Fatal(err)
	}
	want := []int{7, 7, 5, 9, 9, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}
	if got := words(t, dev, b, 16); !slices.Equal(got, want) {
		t.Errorf("words %v, want %v", got, want)
	}

	// Behind a command buffer in flight and nothing recorded: staged in an
	// encoder of its own, committed by the read.
	e = dev.Encoder()
	fillWords(e, b, 0, 16, 8)
	if err := e.Submit(); err != nil {
		t.Fatal(err)
	}
	syncs = dev.Counters().HostSyncs
	if err := dev.Write(b, 0, wordBytes(6)); err != nil {
		t.Fatal(err)
	}
	if n := dev.Counters().HostSyncs - syncs; n != 0 {
		t.Errorf("a small write behind a command buffer in flight took %d host syncs, want 0 (staged)", n)
	}
	if got := words(t, dev, b, 2); got[0] != 6 || got[1] != 8 {
		t.Errorf("a write behind a command buffer in flight: words %v, want 6 8", got)
	}

	// More writes behind one recorded fill than there are staging slots.
	e = dev.Encoder()
	fillWords(e, b, 0, 16, 1)
	for i := range stagedWriteSlots + 3 {
		if err := dev.Write(b, 4*i, wordBytes(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Submit(); err != nil {
		t.Fatal(err)
	}
	got := words(t, dev, b, 16)
	for i := range 16 {
		w := 1
		if i < stagedWriteSlots+3 {
			w = 100 + i
		}
		if got[i] != w {
			t.Errorf("after %d writes behind a fill: word %d is %d, want %d (all: %v)", stagedWriteSlots+3, i, got[i], w, got)
			break
		}
	}

	// Bytes that are not whole words cannot be staged: the recorded fill is
	// committed and waited for first.
	e = dev.Encoder()
	fillWords(e, b, 0, 16, 0x01010101)
	if err := dev.Write(b, 1, []byte{0xaa, 0xbb, 0xcc}); err != nil {
		t.Fatal(err)
	}
	if err := e.Submit(); err != nil {
		t.Fatal(err)
	}
	if got := words(t, dev, b, 2); got[0] != 0xccbbaa01 || got[1] != 0x01010101 {
		t.Errorf("odd bytes behind a fill: words %#x %#x, want 0xccbbaa01 0x1010101", got[0], got[1])
	}

	// Two encoders: the second one's first dispatch commits the first's.
	first, second := dev.Encoder(), dev.Encoder()
	fillWords(first, b, 0, 16, 3)
	fillWords(second, b, 0, 16, 4)
	if err := second.Submit(); err != nil {
		t.Fatal(err)
	}
	if err := first.Submit(); err != nil { // committed already: nothing left
		t.Fatal(err)
	}
	if got := words(t, dev, b, 1); got[0] != 4 {
		t.Errorf("the second encoder's fill gave %d, want 4 (the first encoder's work ran after it)", got[0])
	}
}

// TestReadCommitsRecordedWork: a Read, and a Synchronize, after dispatches
// recorded and not yet committed see what they wrote (the open encoder's work
// is committed first), as CUDA's Read after its recorded launches does.
func TestReadCommitsRecordedWork(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev := openOrSkip(t)
	b, err := dev.Alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	e := dev.Encoder()
	fillWords(e, b, 0, 4, 11)
	if got := words(t, dev, b, 4); !slices.Equal(got, []int{11, 11, 11, 11}) {
		t.Errorf("a read after a recorded fill: %v, want the fill's 11s", got)
	}
	e = dev.Encoder()
	fillWords(e, b, 0, 4, 12)
	if err := dev.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if got := b.(*buffer).host[0]; got != 12 {
		t.Errorf("after a recorded fill and Synchronize the buffer holds %d, want 12", got)
	}
	if err := e.Submit(); err != nil { // committed already: nothing left
		t.Fatal(err)
	}
}
