package safetensors

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	specs := []spec{
		{name: "a.bf16", dtype: "BF16", shape: []int{2, 3}},
		{name: "b.f32", dtype: "F32", shape: []int{4}},
		{name: "c.u32", dtype: "U32", shape: []int{3, 2}},
		{name: "d.f16.scalar", dtype: "F16", shape: []int{}},
		{name: "e.i32", dtype: "I32", shape: []int{1, 1, 2}},
		{name: "f.i8", dtype: "I8", shape: []int{5}},
		{name: "g.u8.empty", dtype: "U8", shape: []int{0, 7}},
		{name: "h.f4", dtype: "F4", shape: []int{2, 4}},
	}
	data, datas := encode(map[string]string{"format": "mlx"}, specs...)
	path := writeBytes(t, t.TempDir(), "model.safetensors", data)

	before := OpenMappings()
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := OpenMappings(); got != before+1 {
		t.Errorf("OpenMappings() = %d after OpenFile, want %d", got, before+1)
	}
	if f.Metadata["format"] != "mlx" {
		t.Errorf("metadata = %v", f.Metadata)
	}
	if !bytes.Equal(f.Data, data) {
		t.Errorf("mapping differs from the file")
	}
	if len(f.Tensors) != len(specs) {
		t.Errorf("%d tensors, want %d", len(f.Tensors), len(specs))
	}
	for i, s := range specs {
		tn, ok := f.Tensors[s.name]
		if !ok {
			t.Errorf("%s missing", s.name)
			continue
		}
		if tn.Name != s.name || tn.File != path || tn.DType != s.dtype || !slices.Equal(tn.Shape, s.shape) {
			t.Errorf("%s: got %+v", s.name, tn)
		}
		if !bytes.Equal(tn.Data, datas[i]) {
			t.Errorf("%s: data %v, want %v", s.name, tn.Data, datas[i])
		}
		if !bytes.Equal(f.Data[tn.Offset:tn.Offset+int64(len(tn.Data))], datas[i]) {
			t.Errorf("%s: offset %d does not locate the data in the file", s.name, tn.Offset)
		}
		n := 1 // a scalar, shape [], has one element
		for _, d := range s.shape {
			n *= d
		}
		if tn.Elements() != n {
			t.Errorf("%s: Elements() = %d, want %d", s.name, tn.Elements(), n)
		}
	}

	tn := f.Tensors["a.bf16"]
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if tn.Data != nil {
		t.Errorf("tensor data still set after Close")
	}
	checkMappings(t, before)
}

func TestOpenFileErrors(t *testing.T) {
	good, _ := encode(nil, spec{name: "w", dtype: "F32", shape: []int{2}})
	body8 := make([]byte, 8)
	hugeLen := binary.LittleEndian.AppendUint64(nil, 1<<63+5)
	hugeLen = append(hugeLen, "{}"...)

	cases := []struct {
		name string
		data []byte
		want []string
	}{
		{"empty file", nil, []string{"x.safetensors", "0 bytes, too short"}},
		{"truncated length", []byte{1, 2, 3, 4, 5}, []string{"5 bytes, too short"}},
		{"truncated header", good[:20], []string{"header length", "exceeds file size 20"}},
		{"header length past EOF", raw("{}", nil)[:8], []string{"header length 2 exceeds file size 8"}},
		{"huge header length", hugeLen, []string{"header length 9223372036854775813 exceeds file size"}},
		{"invalid JSON", raw(`{"w": {"dtype": "F32",`, nil), []string{"x.safetensors", "not valid JSON"}},
		{"header not an object", raw(`[1, 2]`, nil), []string{"not a JSON object"}},
		{"header null", raw(`null`, nil), []string{"not a JSON object"}},
		{"data past EOF", raw(`{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, body8),
			[]string{"x.safetensors", "tensor w", "[0, 16] run past the end of the file"}},
		{"offsets reversed", raw(`{"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, body8),
			[]string{"tensor w", "not a range"}},
		{"negative offset", raw(`{"w":{"dtype":"F32","shape":[0],"data_offsets":[-4,0]}}`, body8),
			[]string{"tensor w", "not a range"}},
		{"offsets not matching shape", raw(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, body8),
			[]string{"tensor w", "hold 8 bytes, but shape [3] of F32 needs 12"}},
		{"unknown dtype", raw(`{"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}}`, body8),
			[]string{"tensor w", `unknown dtype "Q4"`}},
		{"negative dimension", raw(`{"w":{"dtype":"U8","shape":[-8],"data_offsets":[0,8]}}`, body8),
			[]string{"tensor w", "negative dimension"}},
		{"shape overflow", raw(`{"w":{"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}}`, body8),
			[]string{"tensor w", "too large"}},
		{"no shape", raw(`{"w":{"dtype":"U8","data_offsets":[0,8]}}`, body8),
			[]string{"tensor w", "no shape"}},
		{"one offset", raw(`{"w":{"dtype":"U8","shape":[8],"data_offsets":[8]}}`, body8),
			[]string{"tensor w", "data_offsets must be [begin, end]"}},
		{"sub-byte remainder", raw(`{"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, body8),
			[]string{"tensor w", "not a whole number of bytes"}},
		{"entry not an object", raw(`{"w":[1]}`, body8), []string{"tensor w", "bad header entry"}},
		{"metadata not strings", raw(`{"__metadata__":{"n":1}}`, nil), []string{"__metadata__"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeBytes(t, t.TempDir(), "x.safetensors", tc.data)
			before := OpenMappings()
			f, err := OpenFile(path)
			wantErr(t, err, tc.want...)
			if f != nil {
				t.Errorf("got a File with the error")
			}
			checkMappings(t, before)
		})
	}
}

func TestOpenFileNotRegular(t *testing.T) {
	before := OpenMappings()
	_, err := OpenFile(t.TempDir())
	wantErr(t, err, "not a regular file")
	_, err = OpenFile("/nonexistent/model.safetensors")
	wantErr(t, err, "/nonexistent/model.safetensors")
	checkMappings(t, before)
}

// FuzzParseHeader checks that no input makes the header parser panic or hand out a
// view that disagrees with the file. `go test` runs the seeds below.
func FuzzParseHeader(f *testing.F) {
	good, _ := encode(map[string]string{"format": "mlx"},
		spec{name: "w", dtype: "U32", shape: []int{2, 2}},
		spec{name: "s", dtype: "BF16", shape: []int{2, 1}},
		spec{name: "e", dtype: "F4", shape: []int{0}})
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'})
	f.Add(raw(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, []byte{1, 2, 3}))
	f.Add(raw(`{"w":{"dtype":"F32","shape":[9223372036854775807],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Add(raw(`{"__metadata__":null,"w":null}`, nil))
	f.Add(raw(`{"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}}`, make([]byte, 8)))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, tensors, err := parseHeader("fuzz.safetensors", data)
		if err != nil {
			return
		}
		for name, tn := range tensors {
			bits := dtypeBits[tn.DType]
			if uint64(len(tn.Data))*8 != uint64(tn.Elements())*bits {
				t.Fatalf("%s: %d bytes for %d elements of %s", name, len(tn.Data), tn.Elements(), tn.DType)
			}
			if tn.Offset < 8 || tn.Offset+int64(len(tn.Data)) > int64(len(data)) {
				t.Fatalf("%s: view [%d, +%d) outside %d bytes", name, tn.Offset, len(tn.Data), len(data))
			}
			if !bytes.Equal(data[tn.Offset:tn.Offset+int64(len(tn.Data))], tn.Data) {
				t.Fatalf("%s: Offset does not locate Data", name)
			}
		}
	})
}
