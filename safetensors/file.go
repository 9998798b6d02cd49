package safetensors

import (
	"fmt"
	"math"
	"path/filepath"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"bagel/internal/regular"
)

// liveMappings counts mmaps made and not yet unmapped, so tests can prove that
// every failing Open and every Close gives its mappings back.
var liveMappings atomic.Int64

// OpenMappings is the number of live file mappings in the process.
func OpenMappings() int { return int(liveMappings.Load()) }

// File is one mapped safetensors file. It is not safe to Close concurrently with
// use of its tensors: their Data points into the mapping.
type File struct {
	Path     string
	Data     []byte // the whole mapping, page-aligned (what a GPU backend wraps)
	Metadata map[string]string
	Tensors  map[string]*Tensor
}

// OpenFile maps the file at path read-only and parses its header. The mapping is
// MAP_SHARED so the pages are the page cache's: opening a 20 GB model costs no
// memory until the weights are touched, and a second process shares them.
func OpenFile(path string) (*File, error) {
	name := baseName(path)
	fd, err := regular.Open(path) // a FIFO would block os.Open
	if err != nil {
		return nil, err // *PathError already names the file
	}
	defer fd.Close() // the mapping outlives the descriptor

	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	size := st.Size()
	// A zero-length file cannot be mapped (EINVAL), and anything under 8 bytes has
	// no header length; both are the same user error.
	if size < 8 {
		return nil, errTooShort(name, size)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%s: file of %d bytes is too large to map", name, size)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", name, err)
	}
	liveMappings.Add(1)

	meta, tensors, err := parseHeader(path, data)
	if err != nil {
		unmap(data)
		return nil, err
	}
	return &File{Path: path, Data: data, Metadata: meta, Tensors: tensors}, nil
}

// Close unmaps the file. It is idempotent; the tensors' Data become nil.
func (f *File) Close() error {
	if f == nil || f.Data == nil {
		return nil
	}
	for _, t := range f.Tensors {
		t.Data = nil
	}
	err := unmap(f.Data)
	f.Data = nil
	if err != nil {
		return fmt.Errorf("%s: munmap: %w", baseName(f.Path), err)
	}
	return nil
}

// unmap releases a mapping made by OpenFile and keeps the live count. A failed
// munmap leaves the mapping alive, so it stays counted.
func unmap(data []byte) error {
	if err := unix.Munmap(data); err != nil {
		return err
	}
	liveMappings.Add(-1)
	return nil
}

// baseName is how errors name a file: the shard's name is what the user sees in
// the model folder; the folder itself is named once by the caller.
func baseName(path string) string { return filepath.Base(path) }
