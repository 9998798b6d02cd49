package metal

import "fmt"

// pageSize is the VM page of Apple silicon (16 KiB). newBufferWithBytesNoCopy
// requires a page-aligned pointer and a length that is a whole number of pages.
// The backend asks the OS for the real value (os.Getpagesize) and passes it to
// planWrap; tests use this constant.
const pageSize = 16 << 10

// roundDown rounds v down to a multiple of align (a power of two).
func roundDown(v, align uintptr) uintptr { return v &^ (align - 1) }

// roundUp rounds n up to a multiple of align (a power of two).
func roundUp(n, align int) int { return (n + align - 1) &^ (align - 1) }

// span is one MTLBuffer of a wrapped host region: length bytes starting start
// bytes after the page-aligned base. Both are multiples of the page.
type span struct {
	start, length int
}

// wrapPlan says how a host region of n bytes at address addr is covered by
// no-copy buffers.
//
// The region is widened to whole pages: base = addr rounded down to the page,
// head = addr − base, total = head+n rounded up to the page. (For an mmap'd file
// head is 0 and the widening stays inside the mapping, which covers whole pages.)
//
// When total fits in maxLen (the device's maxBufferLength) there is one span.
// Otherwise spans of length spanLen = maxLen (rounded down to the page) start
// every stride = spanLen/2 (rounded down to the page) bytes, so consecutive
// spans overlap by spanLen−stride ≥ maxLen/2 bytes. A tensor is bound by the
// offset of its first byte only (backend.Arg has no length), so resolve picks
// the span in which that offset lies within the first stride bytes: any tensor of
// at most overlap bytes then lies wholly inside that span. Half of
// maxBufferLength is gigabytes on every Apple GPU, far above the largest tensor
// of a checkpoint (MLX shards are ≤ 5 GB in total), so no tensor straddles a
// split. The price is memory address space only: overlapping spans alias the
// same pages, nothing is copied.
type wrapPlan struct {
	head    int // bytes from the page-aligned base to the caller's first byte
	n       int // the caller's length
	stride  int // distance between span starts (0 with one span)
	overlap int // bytes shared by consecutive spans; the largest region resolve guarantees
	spans   []span
}

// planWrap plans the no-copy buffers for n bytes at addr with the given page
// size and maximum buffer length.
func planWrap(addr uintptr, n, page, maxLen int) (wrapPlan, error) {
	if page <= 0 || page&(page-1) != 0 {
		return wrapPlan{}, fmt.Errorf("page size %d is not a power of two", page)
	}
	base := roundDown(addr, uintptr(page))
	p := wrapPlan{head: int(addr - base), n: n}
	if n == 0 {
		return p, nil
	}
	total := roundUp(p.head+n, page)
	spanLen := int(roundDown(uintptr(maxLen), uintptr(page)))
	if total <= spanLen {
		p.spans = []span{{0, total}}
		p.overlap = total
		return p, nil
	}
	p.stride = int(roundDown(uintptr(spanLen/2), uintptr(page)))
	if p.stride == 0 {
		return wrapPlan{}, fmt.Errorf("maxBufferLength %d is under two pages of %d bytes", maxLen, page)
	}
	p.overlap = spanLen - p.stride
	for start := 0; ; start += p.stride {
		length := min(spanLen, total-start)
		p.spans = append(p.spans, span{start, length})
		if start+length >= total {
			break
		}
	}
	return p, nil
}

// resolve maps byte offset off of the caller's region to (span index, byte
// offset inside that span). off must lie in [0, n].
func (p wrapPlan) resolve(off int) (index, local int) {
	pos := p.head + off
	if len(p.spans) <= 1 {
		return 0, pos
	}
	index = min(pos/p.stride, len(p.spans)-1)
	return index, pos - p.spans[index].start
}

// covers reports whether n bytes at off lie wholly inside the span resolve
// picks for off; the backend checks it wherever it knows a length.
func (p wrapPlan) covers(off, n int) bool {
	if len(p.spans) == 0 {
		return off == 0 && n == 0
	}
	i, local := p.resolve(off)
	return local+n <= p.spans[i].length
}
