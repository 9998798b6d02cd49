package ops_test

import (
	"fmt"
	"math"
	"testing"

	"bagel/cpu"
	"bagel/ops"
)

// TestAttendVerifyIsItsSteps: a verify's attention (ops.Attend of T queries
// past the split keys, on the split kernels of the matrix units) gives each
// query the bits its decode step gave it (Attend of that query alone over
// its own keys): past 128 keys (the 35B-A3B's heads, 4 ranges), across the
// 128 keys from which steps split, and for more queries than one tiled
// launch takes (16 q-heads over 2: 8 a launch). On the CPU's reference
// kernels: the ranges, the threshold and the launches are the host's and
// the kernels' choice alike on every backend.
func TestAttendVerifyIsItsSteps(t *testing.T) {
	const hq, hkv, d, capacity = 16, 2, 128, 256
	dev := cpu.New(1)
	c := ops.NewCtx(dev, ops.NewArena(dev))
	c.Plan = ops.Plan{SplitKV: true, SplitKVTiled: true}
	if !ops.SplitKVTiledFits(c, 1, hq, hkv, d) {
		t.Fatal("the CPU runs no tiled split")
	}
	bf16s := func(n int, seed float64) []byte {
		return sineBF16s(n, func(i int) float64 {
			return float64(float32(math.Sin(seed*float64(i+1)+0.3*float64(i%7))) * 2)
		})
	}
	upload := func(data []byte, shape ...int) ops.Tensor { return uploadBF16(t, c, data, shape...) }
	keys, values := upload(bf16s(hkv*capacity*d, 1.7), hkv, capacity, d), upload(bf16s(hkv*capacity*d, 0.9), hkv, capacity, d)
	scale := float32(1 / math.Sqrt(d))
	row := hq * d * 2
	for _, tc := range []struct{ kvLen, n int }{{165, 5}, {130, 5}, {170, 10}, {140, 16}} {
		t.Run(fmt.Sprintf("%d keys, %d queries", tc.kvLen, tc.n), func(t *testing.T) {
			qData := bf16s(tc.n*hq*d, 0.37+float64(tc.kvLen))
			attend := func(q []byte, n, kvLen int) []byte {
				c.Scratch.Reset()
				out := c.Scratch.Get("attend.out", ops.BF16, n, hq, d)
				ops.Attend(c, upload(q, n, hq, d), keys, values, out, kvLen, scale, ops.SplitPartial(c, n, capacity, hq, d), ops.Tensor{})
				if err := ops.Submit(c); err != nil {
					t.Fatal(err)
				}
				b, err := ops.ReadBytes(c, out)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			verify := attend(qData, tc.n, tc.kvLen)
			for i := range tc.n {
				step := attend(qData[i*row:(i+1)*row], 1, tc.kvLen-tc.n+i+1)
				if string(step) != string(verify[i*row:(i+1)*row]) {
					t.Errorf("query %d (%d keys): the verify's output differs from its step's", i, tc.kvLen-tc.n+i+1)
				}
			}
		})
	}
}
