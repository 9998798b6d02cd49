package ops

import "testing"

func TestPrefillSplits(t *testing.T) {
	for _, c := range []struct{ capacity, t, hq, d, want int }{
		{1024, 512, 16, 256, 1},   // short context: one range
		{8192, 512, 16, 256, 2},   // one per 4096 keys of capacity
		{32768, 512, 16, 256, 4},  // at most 4
		{32768, 4096, 16, 256, 1}, // a chunk whose partials would pass 64 MB at more ranges
	} {
		if got := prefillSplits(c.capacity, c.t, c.hq, c.d); got != c.want {
			t.Errorf("prefillSplits(capacity %d, %d tokens) = %d, want %d", c.capacity, c.t, got, c.want)
		}
	}
}
