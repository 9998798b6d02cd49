package ops

import (
	"encoding/binary"
	"fmt"
	"math"

	"bagel/backend"
)

// DType is an element type; it and the constants below are re-exported so the
// model names them without importing backend.
type DType = backend.DType

// Element types.
const (
	F32  = backend.F32
	BF16 = backend.BF16
	F16  = backend.F16
	U32  = backend.U32
	I32  = backend.I32
)

// BF16ToF32 and F32ToBF16 convert host values (loaders that fix a checkpoint's
// layout at load, e.g. the norm shift of raw Hugging Face files).
var (
	BF16ToF32 = backend.BF16ToF32
	F32ToBF16 = backend.F32ToBF16
)

// WrapHost makes a device view of host memory that outlives it (an mmap'd
// checkpoint file): no copy on CPU and Metal, an upload on CUDA. The result is a
// byte region (U32 elements, rounded down); take typed views with View.
func WrapHost(c *Ctx, data []byte) (Tensor, error) {
	b, err := c.Dev.WrapHost(data)
	if err != nil {
		return Tensor{}, err
	}
	return Tensor{Buf: b, DType: U32, Shape: []int{len(data) / 4}}, nil
}

// WrapHostAligned is WrapHost asking a copying backend to put byte anchor of
// data on a 16-byte boundary (backend.AlignedWrapper); the others wrap as is.
func WrapHostAligned(c *Ctx, data []byte, anchor int) (Tensor, error) {
	aw, ok := c.Dev.(backend.AlignedWrapper)
	if !ok {
		return WrapHost(c, data)
	}
	b, err := aw.WrapHostAligned(data, anchor)
	if err != nil {
		return Tensor{}, err
	}
	return Tensor{Buf: b, DType: U32, Shape: []int{len(data) / 4}}, nil
}

// View is a typed tensor at byte offset off of base's buffer.
func View(base Tensor, off int, dtype backend.DType, shape []int) Tensor {
	t := Tensor{Buf: base.Buf, Off: base.Off + off, DType: dtype, Shape: append([]int(nil), shape...)}
	if !(t.Off+t.Bytes() <= base.Buf.Len()) {
		fail("view %v at %d past buffer of %d bytes", t, t.Off, base.Buf.Len())
	}
	return t
}

// Upload allocates a device tensor and copies data (raw little-endian elements) into it.
func Upload(c *Ctx, dtype backend.DType, shape []int, data []byte) (Tensor, error) {
	t := Tensor{DType: dtype, Shape: append([]int(nil), shape...)}
	if len(data) != t.Bytes() {
		return Tensor{}, fmt.Errorf("upload %v: %d bytes given", t, len(data))
	}
	b, err := c.Dev.Alloc(max(t.Bytes(), 4))
	if err != nil {
		return Tensor{}, err
	}
	t.Buf = b
	if err := c.Dev.Write(b, 0, data); err != nil {
		c.Dev.Free(b)
		return Tensor{}, err
	}
	return t, nil
}

// Alloc is a zero-filled device tensor of its own buffer (caches, states).
func Alloc(c *Ctx, dtype backend.DType, shape ...int) (Tensor, error) {
	t := Tensor{DType: dtype, Shape: append([]int(nil), shape...)}
	b, err := c.Dev.Alloc(max(t.Bytes(), 4))
	if err != nil {
		return Tensor{}, fmt.Errorf("allocating %v (%d bytes): %w", t, t.Bytes(), err)
	}
	t.Buf = b
	return t, nil
}

// Free releases a tensor's buffer (one made by Alloc, Upload or WrapHost).
func Free(c *Ctx, t Tensor) {
	if t.Buf != nil {
		c.Dev.Free(t.Buf)
	}
}

// Zero fills t with zeros.
func Zero(c *Ctx, t Tensor) error {
	return c.Dev.Write(t.Buf, t.Off, make([]byte, t.Bytes()))
}

// Submit sends what the context recorded to the device and starts a new encoder.
func Submit(c *Ctx) error {
	err := c.Enc.Submit()
	c.Enc = c.Dev.Encoder()
	return err
}

// ReadF32 submits pending work, waits for it and returns t (f32) on the host.
func ReadF32(c *Ctx, t Tensor) ([]float32, error) {
	checkDType("read", t, backend.F32)
	if err := Submit(c); err != nil {
		return nil, err
	}
	raw := make([]byte, t.Bytes())
	if err := c.Dev.Read(t.Buf, t.Off, raw); err != nil {
		return nil, err
	}
	out := make([]float32, t.Elements())
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out, nil
}

// ReadBytes submits pending work, waits, and returns t's raw bytes.
func ReadBytes(c *Ctx, t Tensor) ([]byte, error) {
	if err := Submit(c); err != nil {
		return nil, err
	}
	raw := make([]byte, t.Bytes())
	return raw, c.Dev.Read(t.Buf, t.Off, raw)
}

// CanReadAsync says whether the context's device reads back without waiting
// for the work submitted after the read (backend.AsyncReader).
func CanReadAsync(c *Ctx) bool {
	_, ok := c.Dev.(backend.AsyncReader)
	return ok
}

// RunsAtDispatch says whether the context's device runs its work as it is
// dispatched (backend.AtDispatchRunner), so that nothing overlaps the host.
func RunsAtDispatch(c *Ctx) bool {
	r, ok := c.Dev.(backend.AtDispatchRunner)
	return ok && r.RunsAtDispatch()
}

// ReadBytesAsync submits the recorded work and queues a read of t's bytes
// behind it (CanReadAsync devices only); the read's Wait returns them.
func ReadBytesAsync(c *Ctx, t Tensor) (backend.PendingRead, error) {
	r, ok := c.Dev.(backend.AsyncReader)
	if !ok {
		return nil, fmt.Errorf("read: the %s device reads back synchronously only", c.Dev.Name())
	}
	if err := Submit(c); err != nil {
		return nil, err
	}
	return r.ReadAsync(t.Buf, t.Off, t.Bytes())
}

// WriteInt32 copies host ids into an i32 tensor.
func WriteInt32(c *Ctx, t Tensor, v []int32) error {
	checkDType("write ids", t, backend.I32)
	if len(v) != t.Elements() {
		fail("write ids: %d values into %v", len(v), t)
	}
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(x))
	}
	return c.Dev.Write(t.Buf, t.Off, raw)
}

// WriteBytes copies raw little-endian elements into t (a cache restored from a
// host snapshot).
func WriteBytes(c *Ctx, t Tensor, data []byte) error {
	if len(data) != t.Bytes() {
		fail("write %v: %d bytes given", t, len(data))
	}
	return c.Dev.Write(t.Buf, t.Off, data)
}

// Copy records dst = src on the device (the same number of bytes, a multiple
// of 4, at 4-byte aligned offsets): in stream order, no host copy.
func Copy(c *Ctx, src, dst Tensor) {
	copyWords(c, src, dst, "copy_u32")
}

// CopyAligned is Copy for tensors in memory Alloc made (whose buffers start
// 16-byte aligned: backend.Device.Alloc), in 16-byte pieces where both
// offsets are multiples of 16 (copy_u32x4: the 35B-A3B's 64 MB of GDN
// states, a verify's snapshot, in 30 µs against copy_u32's 77 on the H200).
// A mapped checkpoint's tensors (WrapHost, backend.AlignedWrapper) may
// start anywhere: Copy them.
func CopyAligned(c *Ctx, src, dst Tensor) {
	kernel := "copy_u32"
	if src.Off%16 == 0 && dst.Off%16 == 0 {
		kernel = "copy_u32x4"
	}
	copyWords(c, src, dst, kernel)
}

func copyWords(c *Ctx, src, dst Tensor, kernel string) {
	n := src.Bytes()
	if !(dst.Bytes() == n && n%4 == 0 && src.Off%4 == 0 && dst.Off%4 == 0) {
		fail("copy: %v at %d to %v at %d (4-byte words)", src, src.Off, dst, dst.Off)
	}
	if n == 0 {
		return
	}
	c.dispatch(kernel, src.Arg(), dst.Arg(), backend.Int(n/4))
}

// Fill records t = 0 on the device (a multiple of 4 bytes at a 4-byte aligned offset).
func Fill(c *Ctx, t Tensor) {
	n := t.Bytes()
	if !(n%4 == 0 && t.Off%4 == 0) {
		fail("fill: %v at %d (4-byte words)", t, t.Off)
	}
	if n == 0 {
		return
	}
	c.dispatch("fill_u32", t.Arg(), backend.Int(n/4), backend.Int(0))
}
