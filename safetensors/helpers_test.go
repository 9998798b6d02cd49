package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// spec is one tensor for a test file. A nil data is filled with a counting byte
// pattern of the size shape and dtype need, so views can be checked byte for byte.
type spec struct {
	name  string
	dtype string
	shape []int
	data  []byte
}

// encode builds a safetensors file the way the reference writers do: the header
// JSON padded with spaces to a multiple of 8, then the tensors back to back in the
// order given. It returns the file and the data of each spec (filled in).
func encode(meta map[string]string, specs ...spec) ([]byte, [][]byte) {
	header := map[string]any{}
	if meta != nil {
		header["__metadata__"] = meta
	}
	var body []byte
	datas := make([][]byte, len(specs))
	for i, s := range specs {
		d := s.data
		if d == nil {
			n := uint64(1)
			for _, x := range s.shape {
				n *= uint64(x)
			}
			d = make([]byte, n*dtypeBits[s.dtype]/8)
			for j := range d {
				d[j] = byte(i*37 + j)
			}
		}
		datas[i] = d
		shape := s.shape
		if shape == nil {
			shape = []int{}
		}
		header[s.name] = map[string]any{
			"dtype": s.dtype, "shape": shape,
			"data_offsets": []int{len(body), len(body) + len(d)},
		}
		body = append(body, d...)
	}
	h, err := json.Marshal(header)
	if err != nil {
		panic(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	return raw(string(h), body), datas
}

// raw is a file from a header string taken as is, for headers the encoder would
// never write.
func raw(header string, body []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, body...)
}

// writeBytes writes data to dir/name and returns the path.
func writeBytes(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeFile writes a well-formed safetensors file to dir/name.
func writeFile(t testing.TB, dir, name string, specs ...spec) string {
	t.Helper()
	data, _ := encode(map[string]string{"format": "mlx"}, specs...)
	return writeBytes(t, dir, name, data)
}

// checkMappings fails the test when the live mapping count differs from before.
func checkMappings(t *testing.T, before int) {
	t.Helper()
	if got := OpenMappings(); got != before {
		t.Errorf("OpenMappings() = %d, want %d (a mapping leaked)", got, before)
	}
}

// wantErr fails unless err is non-nil and contains every one of parts.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}
