package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"bagel/backend"
)

// The helpers below move test data through the public Device API, so every
// kernel test also exercises Alloc, Write, Dispatch and Read.

func newTestDevice() *Device { return New(4) }

func bf16Bytes(v []float32) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], backend.F32ToBF16(x))
	}
	return b
}

func upload(t *testing.T, d *Device, b []byte) backend.Buffer {
	t.Helper()
	buf, err := d.Alloc(len(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write(buf, 0, b); err != nil {
		t.Fatal(err)
	}
	return buf
}

// bf16Buf uploads v rounded to bf16.
func bf16Buf(t *testing.T, d *Device, v []float32) backend.Buffer {
	return upload(t, d, bf16Bytes(v))
}

func bitsBuf(t *testing.T, d *Device, v []uint16) backend.Buffer {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return upload(t, d, b)
}

func f32Buf(t *testing.T, d *Device, v []float32) backend.Buffer {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return upload(t, d, b)
}

func u32Buf(t *testing.T, d *Device, v []uint32) backend.Buffer {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return upload(t, d, b)
}

func i32Buf(t *testing.T, d *Device, v []int32) backend.Buffer {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return upload(t, d, b)
}

// poisonBuf is n bytes, poisoned with 0xff so a kernel that skips an output shows NaNs.
func poisonBuf(t *testing.T, d *Device, n int) backend.Buffer {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xff
	}
	return upload(t, d, b)
}

func readBytes(t *testing.T, d *Device, b backend.Buffer, n int) []byte {
	t.Helper()
	out := make([]byte, n)
	if err := d.Read(b, 0, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func readBF16(t *testing.T, d *Device, b backend.Buffer, n int) []float32 {
	raw := readBytes(t, d, b, 2*n)
	out := make([]float32, n)
	for i := range out {
		out[i] = backend.BF16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return out
}

func readF32(t *testing.T, d *Device, b backend.Buffer, n int) []float32 {
	raw := readBytes(t, d, b, 4*n)
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func readI32(t *testing.T, d *Device, b backend.Buffer, n int) []int32 {
	raw := readBytes(t, d, b, 4*n)
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

// dispatch runs one kernel in its own command buffer.
func dispatch(d *Device, kernel string, args ...backend.Arg) {
	enc := d.Encoder()
	enc.Dispatch(kernel, backend.Dim3{X: 1, Y: 1, Z: 1}, backend.Dim3{X: 1, Y: 1, Z: 1}, args...)
	if err := enc.Submit(); err != nil {
		panic(err)
	}
}

func arg(b backend.Buffer) backend.Arg { return backend.Buf(b, 0) }

// randBF16 is n normal values (stddev scale) that bf16 holds exactly.
func randBF16(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = backend.RoundBF16(float32(rng.NormFloat64() * scale))
	}
	return v
}

// bf16Close reports whether got is want (computed in float64) after one bf16
// rounding, allowing relTol of relative f32 error upstream of that rounding and
// absTol for sums that cancel.
func bf16Close(got float32, want float64, absTol float64) bool {
	diff := math.Abs(float64(got) - want)
	return diff <= math.Abs(want)*(1.0/256+1e-5)+absTol
}

// mustPanic runs f and checks it panics with a message containing every want.
func mustPanic(t *testing.T, f func(), want ...string) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one mentioning %q", want)
		}
		msg, _ := r.(string)
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Fatalf("panic %q does not mention %q", msg, w)
			}
		}
	}()
	f()
}

func sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func silu64(x float64) float64 { return x * sigmoid64(x) }
