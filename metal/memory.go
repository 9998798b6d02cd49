package metal

import (
	"fmt"
	"unsafe"

	"bagel/backend"
	"bagel/metal/mtl"
)

// buffer is device memory: one MTLBuffer for Alloc, one or more overlapping
// no-copy MTLBuffers for WrapHost (plan says which holds an offset).
type buffer struct {
	dev     *Device
	n       int
	plan    wrapPlan
	mtl     []mtl.Buffer // owned, one per plan span
	host    []byte       // the CPU view: the wrapped memory, or the shared buffer's contents
	wrapped bool
	freed   bool
}

func (b *buffer) Len() int { return b.n }

// Alloc returns n zero bytes of shared storage (the CPU and GPU address the
// same memory). The buffer joins the residency set.
func (d *Device) Alloc(n int) (backend.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("metal: alloc of %d bytes", n)
	}
	size := max(n, 4) // Metal has no empty buffers
	if size > d.maxLen {
		return nil, fmt.Errorf("metal: alloc of %d bytes exceeds the device's maxBufferLength %d", n, d.maxLen)
	}
	var b *buffer
	var err error
	mtl.WithPool(func() {
		mb := d.dev.NewBufferWithLength(size, mtl.ResourceStorageModeShared)
		if mb.IsNil() {
			err = fmt.Errorf("metal: out of memory allocating %d bytes", n)
			return
		}
		host := unsafe.Slice((*byte)(mb.Contents()), size)
		clear(host)
		b = &buffer{dev: d, n: n, mtl: []mtl.Buffer{mb}, host: host[:n],
			plan: wrapPlan{n: n, overlap: size, spans: []span{{0, size}}}}
		d.track(b)
	})
	return b, err
}

// WrapHost wraps data, which must stay mapped until the buffer is freed, with
// newBufferWithBytesNoCopy: no copy, the GPU reads the file's pages. The start
// is rounded down and the end up to the page; a region over maxBufferLength
// becomes overlapping buffers (pages.go). The buffers join the residency set.
func (d *Device) WrapHost(data []byte) (backend.Buffer, error) {
	b := &buffer{dev: d, n: len(data), host: data, wrapped: true}
	if len(data) == 0 {
		return b, nil
	}
	start := unsafe.Pointer(&data[0])
	plan, err := planWrap(uintptr(start), len(data), d.page, d.maxLen)
	if err != nil {
		return nil, fmt.Errorf("metal: wrapping %d bytes: %w", len(data), err)
	}
	b.plan = plan
	base := unsafe.Add(start, -plan.head)
	mtl.WithPool(func() {
		for _, s := range plan.spans {
			mb := d.dev.NewBufferWithBytesNoCopy(unsafe.Add(base, s.start), s.length, mtl.ResourceStorageModeShared)
			if mb.IsNil() {
				err = fmt.Errorf("metal: newBufferWithBytesNoCopy refused %d bytes at offset %d of a %d-byte region", s.length, s.start, len(data))
				return
			}
			b.mtl = append(b.mtl, mb)
		}
	})
	if err != nil {
		for _, mb := range b.mtl {
			mb.Release()
		}
		return nil, err
	}
	d.track(b)
	return b, nil
}

// track records a live buffer and adds it to the residency set (committed at
// the next Submit).
func (d *Device) track(b *buffer) {
	d.live[b] = struct{}{}
	if !d.residency.IsNil() {
		for _, mb := range b.mtl {
			d.residency.AddAllocation(mb)
		}
		d.residencyNew = true
	}
}

// commitResidency applies added and removed allocations and asks for them to
// be made resident; called before a command buffer is committed.
func (d *Device) commitResidency() {
	if d.residency.IsNil() || !d.residencyNew {
		return
	}
	d.residency.Commit()
	d.residency.RequestResidency()
	d.residencyNew = false
}

// own checks that n bytes at off lie inside b, a live buffer of d, and inside
// one of its Metal buffers.
func (d *Device) own(b backend.Buffer, off, n int) (*buffer, error) {
	buf, ok := b.(*buffer)
	switch {
	case !ok || buf == nil:
		return nil, fmt.Errorf("buffer %T is not a metal buffer", b)
	case buf.dev != d:
		return nil, fmt.Errorf("buffer belongs to another device")
	case buf.freed:
		return nil, fmt.Errorf("buffer was freed")
	case off < 0 || n < 0 || off > buf.n || n > buf.n-off:
		return nil, fmt.Errorf("%d bytes at offset %d outside a buffer of %d", n, off, buf.n)
	case n > 0 && !buf.plan.covers(off, n):
		return nil, fmt.Errorf("%d bytes at offset %d straddle the split of a wrapped region (overlap %d)", n, off, buf.plan.overlap)
	}
	return buf, nil
}

// Contents is the CPU address the GPU sees for byte off of b: the MTLBuffer
// that resolves off, its contents pointer plus the offset inside it. For a
// wrapped mmap it equals the mapping's address plus off (the no-copy test).
func (d *Device) Contents(b backend.Buffer, off int) (unsafe.Pointer, error) {
	buf, err := d.own(b, off, 0)
	if err != nil {
		return nil, err
	}
	if len(buf.mtl) == 0 {
		return nil, fmt.Errorf("metal: empty buffer")
	}
	var p unsafe.Pointer
	mtl.WithPool(func() {
		i, local := buf.plan.resolve(off)
		p = unsafe.Add(buf.mtl[i].Contents(), local)
	})
	return p, nil
}

// Write copies src into b at off in the order of the device's work: after
// every dispatch recorded or submitted before it (they may read or write b),
// before every dispatch recorded after it, as CUDA's copies on its stream
// are. Behind work not yet finished a small write is staged (stageWrite: a
// copy recorded after that work, no wait); a larger one commits the recorded
// work and waits for the GPU (a host sync), then copies. With the GPU idle it
// copies at once.
func (d *Device) Write(b backend.Buffer, off int, src []byte) error {
	buf, err := d.own(b, off, len(src))
	if err != nil {
		return fmt.Errorf("metal: write: %w", err)
	}
	if len(src) == 0 {
		return nil
	}
	if d.open != nil || len(d.inFlight) > 0 {
		if staged, err := d.stageWrite(b, off, src); staged || err != nil {
			return err
		}
		if err := d.submitOpen(); err != nil {
			return err
		}
	}
	if len(d.inFlight) > 0 {
		d.counters.HostSyncs++
		if err := d.wait(); err != nil {
			return err
		}
	}
	copy(buf.host[off:], src)
	return nil
}

// Read commits the open encoder's recorded work, waits for every submitted
// command buffer, then copies from b at off into dst. A host sync; it reports
// a failed command buffer.
func (d *Device) Read(b backend.Buffer, off int, dst []byte) error {
	buf, err := d.own(b, off, len(dst))
	if err != nil {
		return fmt.Errorf("metal: read: %w", err)
	}
	if err := d.submitOpen(); err != nil {
		return err
	}
	d.counters.HostSyncs++
	if err := d.wait(); err != nil {
		return err
	}
	copy(dst, buf.host[off:off+len(dst)])
	return nil
}

// Free releases b's Metal buffers (a command buffer still using them keeps
// them alive until it completes) and removes them from the residency set.
// The wrapped memory itself belongs to the caller, who unmaps it afterwards.
func (d *Device) Free(b backend.Buffer) {
	buf, ok := b.(*buffer)
	if !ok || buf == nil || buf.freed || buf.dev != d {
		return
	}
	mtl.WithPool(func() {
		for _, mb := range buf.mtl {
			if !d.residency.IsNil() {
				d.residency.RemoveAllocation(mb)
				d.residencyNew = true
			}
			mb.Release()
		}
	})
	delete(d.live, buf)
	buf.freed, buf.mtl, buf.host = true, nil, nil
}
