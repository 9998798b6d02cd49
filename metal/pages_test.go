package metal

import "testing"

func TestRounding(t *testing.T) {
	for _, c := range []struct{ in, down, up int }{
		{0, 0, 0}, {1, 0, pageSize}, {pageSize - 1, 0, pageSize}, {pageSize, pageSize, pageSize},
		{pageSize + 1, pageSize, 2 * pageSize}, {5*pageSize + 7, 5 * pageSize, 6 * pageSize},
	} {
		if got := roundDown(uintptr(c.in), pageSize); got != uintptr(c.down) {
			t.Errorf("roundDown(%d) = %d, want %d", c.in, got, c.down)
		}
		if got := roundUp(c.in, pageSize); got != c.up {
			t.Errorf("roundUp(%d) = %d, want %d", c.in, got, c.up)
		}
	}
}

func TestPlanWrapSingle(t *testing.T) {
	const base = 0x1_0000_0000 // page-aligned, like an mmap
	for _, c := range []struct {
		name       string
		addr       uintptr
		n          int
		head, span int
	}{
		{"aligned, whole pages", base, 4 * pageSize, 0, 4 * pageSize},
		{"aligned, ragged end", base, 4*pageSize + 3, 0, 5 * pageSize},
		{"unaligned start", base + 100, pageSize, 100, 2 * pageSize},
		{"one byte", base + pageSize - 1, 1, pageSize - 1, pageSize},
	} {
		p, err := planWrap(c.addr, c.n, pageSize, 1<<30)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.head != c.head || len(p.spans) != 1 || p.spans[0] != (span{0, c.span}) {
			t.Errorf("%s: head %d spans %v, want head %d and one span of %d", c.name, p.head, p.spans, c.head, c.span)
		}
		if i, local := p.resolve(7); i != 0 || local != c.head+7 {
			t.Errorf("%s: resolve(7) = (%d, %d), want (0, %d)", c.name, i, local, c.head+7)
		}
	}
	if p, err := planWrap(base, 0, pageSize, 1<<30); err != nil || len(p.spans) != 0 {
		t.Errorf("empty region: spans %v, err %v", p.spans, err)
	}
	if _, err := planWrap(base, 10, 3000, 1<<30); err == nil {
		t.Error("a page size that is not a power of two was accepted")
	}
}

// TestPlanWrapSplit checks, for regions over maxBufferLength, that the spans are
// page-aligned, no longer than the maximum, cover the region, and that every
// region of up to overlap bytes resolves to one span that holds all of it at the
// right address.
func TestPlanWrapSplit(t *testing.T) {
	const page = 16
	for _, c := range []struct {
		head, n, maxLen int
	}{
		{0, 1000, 160}, {5, 1000, 160}, {0, 161, 160}, {15, 4096, 64}, {0, 4096, 32}, {3, 999, 100},
	} {
		addr := uintptr(0x10000 + c.head)
		p, err := planWrap(addr, c.n, page, c.maxLen)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		total := roundUp(c.head+c.n, page)
		if len(p.spans) < 2 {
			t.Fatalf("%+v: %d spans, want a split", c, len(p.spans))
		}
		if p.overlap < c.maxLen/2-page {
			t.Errorf("%+v: overlap %d, want about half of %d", c, p.overlap, c.maxLen)
		}
		end := 0
		for i, s := range p.spans {
			if s.start%page != 0 || s.length%page != 0 || s.length > c.maxLen || s.length <= 0 {
				t.Errorf("%+v: span %d = %+v not page-aligned or over max", c, i, s)
			}
			if s.start > end {
				t.Errorf("%+v: gap before span %d", c, i)
			}
			end = max(end, s.start+s.length)
		}
		if end != total {
			t.Errorf("%+v: spans end at %d, want %d", c, end, total)
		}
		for off := 0; off <= c.n; off++ {
			i, local := p.resolve(off)
			s := p.spans[i]
			if s.start+local != c.head+off || local < 0 {
				t.Fatalf("%+v: resolve(%d) = span %d local %d: address off", c, off, i, local)
			}
			n := min(p.overlap, c.n-off)
			if local+n > s.length {
				t.Fatalf("%+v: %d bytes at %d overflow span %d (%+v, local %d)", c, n, off, i, s, local)
			}
			if !p.covers(off, n) {
				t.Fatalf("%+v: covers(%d, %d) false", c, off, n)
			}
		}
	}
	if _, err := planWrap(0, 100, 16, 16); err == nil {
		t.Error("maxLen of one page was accepted")
	}
}

// TestCoversRejectsStraddle: a region longer than the overlap may straddle.
func TestCoversRejectsStraddle(t *testing.T) {
	p, err := planWrap(0, 1000, 16, 160)
	if err != nil {
		t.Fatal(err)
	}
	if p.covers(p.stride-1, p.overlap+2) {
		t.Errorf("covers accepted %d bytes at %d with overlap %d", p.overlap+2, p.stride-1, p.overlap)
	}
}
