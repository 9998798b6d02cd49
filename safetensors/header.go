package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Tensor is a zero-copy view of one tensor in an mmap'd file. Data is valid until
// the File (or Checkpoint) that made it is closed; Close sets it to nil so a late
// use fails as an empty slice instead of a fault on unmapped memory.
type Tensor struct {
	Name   string
	File   string // path of the shard file
	DType  string // as the header names it: "BF16", "F16", "F32", "U32", "I8", ...
	Shape  []int
	Data   []byte // view into the mapping, exactly the tensor's bytes
	Offset int64  // byte offset of Data within the file (for no-copy GPU wrapping)
}

// Elements is the product of the shape (1 for a scalar, shape []).
func (t *Tensor) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// dtypeBits is the element width in bits of every dtype the safetensors format
// names. Sub-byte dtypes (F4, F6_*) pack elements with no padding, so a tensor's
// byte size is elements*bits/8 and must come out whole.
var dtypeBits = map[string]uint64{
	"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
	"U16": 16, "I16": 16, "F16": 16, "BF16": 16,
	"U32": 32, "I32": 32, "F32": 32,
	"U64": 64, "I64": 64, "F64": 64, "C64": 64,
	"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

// headerEntry is one tensor's record in the JSON header. Pointers tell a missing key
// from an empty one (shape [] is a scalar; a missing shape is a broken header).
type headerEntry struct {
	DType       string   `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// errTooShort is the error for a file that cannot hold the 8-byte header length.
func errTooShort(file string, size int64) error {
	return fmt.Errorf("%s: file is %d bytes, too short for a safetensors header", file, size)
}

// parseHeader reads the header of a whole safetensors file held in data (the
// mapping) and returns its metadata and tensors, each a view into data. Errors name
// the file by its base name. It never panics and never makes a view outside data.
func parseHeader(path string, data []byte) (map[string]string, map[string]*Tensor, error) {
	file := baseName(path)
	size := uint64(len(data))
	if size < 8 {
		return nil, nil, errTooShort(file, int64(size))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > size-8 {
		return nil, nil, fmt.Errorf("%s: header length %d exceeds file size %d", file, n, size)
	}
	header := data[8 : 8+n]
	// Tensor bytes start right after the header; data_offsets are relative to it.
	bodyStart := 8 + n
	body := data[bodyStart:]

	if t := bytes.TrimLeft(header, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, nil, fmt.Errorf("%s: header is not a JSON object", file)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, nil, fmt.Errorf("%s: header is not valid JSON: %w", file, err)
	}

	var meta map[string]string
	if m, ok := raw["__metadata__"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, nil, fmt.Errorf("%s: __metadata__ must map strings to strings: %w", file, err)
		}
		delete(raw, "__metadata__")
	}

	// Walk names in order so a file with several bad tensors always reports the same one.
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	tensors := make(map[string]*Tensor, len(names))
	for _, name := range names {
		t, err := parseEntry(path, name, raw[name], body, bodyStart)
		if err != nil {
			return nil, nil, err
		}
		tensors[name] = t
	}
	if err := checkOverlaps(file, names, tensors); err != nil {
		return nil, nil, err
	}
	return meta, tensors, nil
}

// checkOverlaps refuses two tensors whose bytes overlap: a corrupt header that
// would make one tensor's data another's, with no error anywhere else.
func checkOverlaps(file string, names []string, tensors map[string]*Tensor) error {
	order := slices.Clone(names)
	slices.SortFunc(order, func(a, b string) int { return cmp.Compare(tensors[a].Offset, tensors[b].Offset) })
	for i := 1; i < len(order); i++ {
		prev, cur := tensors[order[i-1]], tensors[order[i]]
		if len(prev.Data) > 0 && len(cur.Data) > 0 && cur.Offset < prev.Offset+int64(len(prev.Data)) {
			return fmt.Errorf("%s: tensors %s (bytes %d..%d) and %s (from byte %d) overlap: the header is corrupt",
				file, order[i-1], prev.Offset, prev.Offset+int64(len(prev.Data)), order[i], cur.Offset)
		}
	}
	return nil
}

// parseEntry checks one header record against the body (the bytes after the
// header, which start at file offset bodyStart) and returns the view it names.
func parseEntry(path, name string, msg json.RawMessage, body []byte, bodyStart uint64) (*Tensor, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: tensor %s: %s", baseName(path), name, fmt.Sprintf(format, args...))
	}
	var e headerEntry
	if err := json.Unmarshal(msg, &e); err != nil {
		return nil, fail("bad header entry: %v", err)
	}
	bits, ok := dtypeBits[e.DType]
	if !ok {
		return nil, fail("unknown dtype %q", e.DType)
	}
	if e.Shape == nil {
		return nil, fail("header entry has no shape")
	}
	if e.DataOffsets == nil || len(*e.DataOffsets) != 2 {
		return nil, fail("data_offsets must be [begin, end]")
	}

	// Element count, guarded so count*bits cannot overflow: anything that large
	// cannot fit in the file anyway.
	shape := make([]int, len(*e.Shape))
	count := uint64(1)
	const maxCount = math.MaxInt64 / 64
	for i, d := range *e.Shape {
		if d < 0 {
			return nil, fail("negative dimension in shape %v", *e.Shape)
		}
		if d > 0 && count > maxCount/uint64(d) {
			return nil, fail("shape %v is too large", *e.Shape)
		}
		count *= uint64(d)
		shape[i] = int(d)
	}
	if count*bits%8 != 0 {
		return nil, fail("shape %v of %s is not a whole number of bytes", *e.Shape, e.DType)
	}
	want := count * bits / 8

	begin, end := (*e.DataOffsets)[0], (*e.DataOffsets)[1]
	if begin < 0 || end < begin {
		return nil, fail("data_offsets [%d, %d] are not a range", begin, end)
	}
	if uint64(end) > uint64(len(body)) {
		return nil, fail("data_offsets [%d, %d] run past the end of the file (%d data bytes)", begin, end, len(body))
	}
	if got := uint64(end - begin); got != want {
		return nil, fail("data_offsets [%d, %d] hold %d bytes, but shape %v of %s needs %d",
			begin, end, got, *e.Shape, e.DType, want)
	}
	return &Tensor{
		Name:   name,
		File:   path,
		DType:  e.DType,
		Shape:  shape,
		Data:   body[begin:end:end], // cap clipped: an append must never write into the mapping
		Offset: int64(bodyStart) + begin,
	}, nil
}
