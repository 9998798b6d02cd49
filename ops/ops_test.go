package ops_test

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"bagel/cpu"
	"bagel/ops"
)

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
	x := c.Scratch.Get(ops.BF16, 2, 64)
	w := c.Scratch.Get(ops.BF16, 32)
	mustPanic(t, "rms_norm", func() { ops.RMSNorm(c, x, w, c.Scratch.Get(ops.BF16, 3, 64), 1e-6) })
	mustPanic(t, "add_bf16", func() { ops.Add(c, x, w, x) })
	mustPanic(t, "kv_append", func() {
		k := c.Scratch.Get(ops.BF16, 4, 1, 8)
		cache := c.Scratch.Get(ops.BF16, 1, 2, 8)
		ops.KVAppend(c, k, k, cache, cache, 0)
	})
	mustPanic(t, "reshape", func() { x.Reshape(3, 5) })
	if got := dev.Counters().Dispatches; got != 0 {
		t.Errorf("%d dispatches recorded by calls that panicked", got)
	}
}

func TestArenaReusesBuffers(t *testing.T) {
	dev := cpu.New(1)
	a := ops.NewArena(dev)
	first := a.Get(ops.F32, 16)
	second := a.Get(ops.F32, 16)
	if first.Buf == second.Buf {
		t.Fatal("two live scratch tensors share a buffer")
	}
	a.Reset()
	again := a.Get(ops.F32, 4, 4)
	if again.Buf != first.Buf && again.Buf != second.Buf {
		t.Error("a buffer of the same size was not reused after Reset")
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
