package cpu

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bagel/backend"
)

// quantVectors is testdata/quant/vectors.json[.gz]: MLX affine quantization of
// one f32 matrix for every bits × group size, made by the Python script in
// tools/goldens (it mirrors mlx's CPU quantize).
type quantVectors struct {
	Note  string `json:"note"`
	Cases []struct {
		Bits      int       `json:"bits"`
		GroupSize int       `json:"group_size"`
		Shape     [2]int    `json:"shape"`       // rows, in
		Packed    []uint32  `json:"packed"`      // (rows, in*bits/32)
		Scales    []uint16  `json:"scales_bf16"` // (rows, in/gs) bf16 bit patterns
		Biases    []uint16  `json:"biases_bf16"` // (rows, in/gs)
		Q         []uint32  `json:"q"`           // (rows, in) the codes
		Dequant   []float32 `json:"dequant"`     // (rows, in) f32(scale)·q + f32(bias) in f32
	} `json:"cases"`
}

// TestDequantRowMLXVectors decodes every row of the vectors twice: with unit
// scale and zero bias, which must give the codes q exactly (the bit stream), and
// with the real scales and biases, which must give dequant.
func TestDequantRowMLXVectors(t *testing.T) {
	r, path := openVectors(t)
	var v quantVectors
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(v.Cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	covered := map[[2]int]bool{}
	for _, c := range v.Cases {
		covered[[2]int{c.Bits, c.GroupSize}] = true
		t.Run(fmt.Sprintf("bits=%d,gs=%d", c.Bits, c.GroupSize), func(t *testing.T) {
			rows, in, bits, gs := c.Shape[0], c.Shape[1], c.Bits, c.GroupSize
			words, groups := in*bits/32, in/gs
			if len(c.Packed) != rows*words || len(c.Scales) != rows*groups || len(c.Biases) != rows*groups ||
				len(c.Q) != rows*in || len(c.Dequant) != rows*in {
				t.Fatalf("shape %v: %d words, %d scales, %d biases, %d codes, %d values",
					c.Shape, len(c.Packed), len(c.Scales), len(c.Biases), len(c.Q), len(c.Dequant))
			}
			one, zero := make([]uint16, groups), make([]uint16, groups)
			for g := range one {
				one[g] = backend.F32ToBF16(1)
			}
			out := make([]float32, in)
			for r := range rows {
				w := c.Packed[r*words : (r+1)*words]
				DequantRow(w, one, zero, bits, gs, in, out)
				for j := range in {
					if want := float32(c.Q[r*in+j]); out[j] != want {
						t.Fatalf("row %d: code %d = %v, want %v", r, j, out[j], want)
					}
				}
				scales, biases := c.Scales[r*groups:(r+1)*groups], c.Biases[r*groups:(r+1)*groups]
				DequantRow(w, scales, biases, bits, gs, in, out)
				for j := range in {
					// Exact on amd64; arm64 may fuse the multiply-add (one f32 rounding less).
					s, b := backend.BF16ToF32(scales[j/gs]), backend.BF16ToF32(biases[j/gs])
					tol := (math.Abs(float64(s)*float64(c.Q[r*in+j])) + math.Abs(float64(b))) * 0x1p-23
					if want := c.Dequant[r*in+j]; math.Abs(float64(out[j]-want)) > tol {
						t.Fatalf("row %d: element %d = %v, want %v", r, j, out[j], want)
					}
				}
			}
		})
	}
	for _, bits := range []int{2, 3, 4, 5, 6, 8} {
		for _, gs := range []int{32, 64, 128} {
			if !covered[[2]int{bits, gs}] {
				t.Errorf("%s has no case for bits=%d gs=%d", path, bits, gs)
			}
		}
	}
}

// openVectors opens testdata/quant/vectors.json or, failing that, its .gz, and
// fails the test when neither exists: the fixture is checked in, so a missing
// one is a broken checkout, not a reason to test nothing.
func openVectors(t *testing.T) (io.Reader, string) {
	t.Helper()
	for _, name := range []string{"vectors.json", "vectors.json.gz"} {
		path := filepath.Join("..", "testdata", "quant", name)
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if !strings.HasSuffix(name, ".gz") {
			return f, path
		}
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return z, path
	}
	t.Fatal("missing testdata/quant/vectors.json.gz (or vectors.json): regenerate it with " +
		"`python3 tools/goldens/make_goldens.py --out testdata --skip-hf` (needs numpy; see tools/goldens/README.md)")
	return nil, ""
}
