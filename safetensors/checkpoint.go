package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"bagel/internal/regular"
)

// IndexName is the file that lists which shard holds each tensor.
const IndexName = "model.safetensors.index.json"

// Checkpoint is every shard of one model folder, mapped, with one name space.
type Checkpoint struct {
	Dir   string
	Files []*File // in the order opened: index order (sorted shard names) or folder order

	tensors map[string]*Tensor
	names   []string // sorted
}

// Open maps every shard of the model folder dir. With model.safetensors.index.json
// the shards are the files its weight_map names, and each tensor must be in the
// shard the index says; without it they are every *.safetensors file in the folder,
// in name order. A failing Open unmaps whatever it had mapped.
func Open(dir string) (*Checkpoint, error) {
	shards, weightMap, err := findShards(dir)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Dir: dir, tensors: map[string]*Tensor{}}
	if err := c.mapShards(shards, weightMap); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	c.names = make([]string, 0, len(c.tensors))
	for name := range c.tensors {
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	return c, nil
}

// mapShards opens each shard into c and merges the names; the caller closes c on error.
func (c *Checkpoint) mapShards(shards []string, weightMap map[string]string) error {
	for _, path := range shards {
		f, err := OpenFile(path)
		if err != nil {
			return err
		}
		c.Files = append(c.Files, f)
		for _, name := range slices.Sorted(maps.Keys(f.Tensors)) { // sorted: the same duplicate is reported every run
			t := f.Tensors[name]
			if prev, dup := c.tensors[name]; dup {
				return fmt.Errorf("tensor %s is in both %s and %s", name, baseName(prev.File), baseName(t.File))
			}
			c.tensors[name] = t
		}
	}
	return checkWeightMap(c.Dir, c.tensors, weightMap)
}

// jsonLimit bounds the index file: a real one is a few hundred KB.
const jsonLimit = 64 << 20

// findShards lists the shard paths of dir, and the index's weight_map when there
// is an index (nil otherwise).
func findShards(dir string) ([]string, map[string]string, error) {
	indexPath := filepath.Join(dir, IndexName)
	blob, err := regular.ReadFile(indexPath, jsonLimit)
	if errors.Is(err, fs.ErrNotExist) {
		shards, err := listShards(dir)
		return shards, nil, err
	}
	if err != nil {
		return nil, nil, err
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(blob, &index); err != nil {
		return nil, nil, fmt.Errorf("%s: %s: %w", dir, IndexName, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, nil, fmt.Errorf("%s: %s: weight_map names no shards", dir, IndexName)
	}
	seen := map[string]bool{}
	var shards []string
	for _, shard := range index.WeightMap {
		shard = filepath.Clean(shard) // "./a" and "a" are one shard
		if seen[shard] {
			continue
		}
		seen[shard] = true
		// The index is input; it must not send us outside the model folder.
		if !filepath.IsLocal(shard) {
			return nil, nil, fmt.Errorf("%s: %s names shard %q outside the model folder", dir, IndexName, shard)
		}
		shards = append(shards, shard)
	}
	// A multi-token-prediction head shipped beside the checkpoint (Qwen's
	// releases: mtp.safetensors, which an MLX conversion's index does not
	// name) is read with it, unless the index already holds an MTP head.
	if _, err := regular.Check(filepath.Join(dir, MTPName)); err == nil && !seen[MTPName] && !namesMTP(index.WeightMap) {
		shards = append(shards, MTPName)
	}
	sort.Strings(shards)
	for i, shard := range shards {
		path := filepath.Join(dir, shard)
		if _, err := regular.Check(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, fmt.Errorf("%s: %s names shard %s, which is missing", dir, IndexName, shard)
			}
			return nil, nil, err
		}
		shards[i] = path
	}
	return shards, index.WeightMap, nil
}

// MTPName is the file of a multi-token-prediction head beside a checkpoint.
const MTPName = "mtp.safetensors"

// namesMTP reports whether an index's weight map holds mtp.* tensors.
func namesMTP(weightMap map[string]string) bool {
	for name := range weightMap {
		if strings.HasPrefix(name, "mtp.") {
			return true
		}
	}
	return false
}

// listShards is every regular *.safetensors file in dir, sorted. Dot files are
// skipped: macOS leaves "._model.safetensors" resource forks on non-HFS drives,
// and they are not safetensors.
func listShards(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	var shards []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".safetensors") || strings.HasPrefix(name, ".") || e.IsDir() {
			continue
		}
		shards = append(shards, filepath.Join(dir, name))
	}
	if len(shards) == 0 {
		return nil, fmt.Errorf("%s: no *.safetensors files (and no %s)", dir, IndexName)
	}
	return shards, nil
}

// checkWeightMap checks that every tensor the index names is in its shard. A
// mismatch means a shard from another download or conversion; loading it would
// silently mix two models.
func checkWeightMap(dir string, tensors map[string]*Tensor, weightMap map[string]string) error {
	names := make([]string, 0, len(weightMap))
	for name := range weightMap {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		shard := weightMap[name]
		t, ok := tensors[name]
		if !ok {
			return fmt.Errorf("%s: tensor %s should be in %s but is not", IndexName, name, shard)
		}
		if t.File != filepath.Join(dir, shard) {
			return fmt.Errorf("%s: tensor %s should be in %s but is in %s", IndexName, name, shard, baseName(t.File))
		}
	}
	return nil
}

// Tensor looks a tensor up by its checkpoint name.
func (c *Checkpoint) Tensor(name string) (*Tensor, bool) {
	t, ok := c.tensors[name]
	return t, ok
}

// Names lists every tensor name, sorted. The slice is the caller's.
func (c *Checkpoint) Names() []string { return append([]string(nil), c.names...) }

// Close unmaps every shard. It is idempotent; all tensors' Data become nil.
func (c *Checkpoint) Close() error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, f := range c.Files {
		errs = append(errs, f.Close())
	}
	c.Files = nil
	c.tensors = nil
	c.names = nil
	return errors.Join(errs...)
}
