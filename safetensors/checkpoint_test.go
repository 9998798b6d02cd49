package safetensors

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// writeIndex writes model.safetensors.index.json with the given weight_map.
func writeIndex(t *testing.T, dir string, weightMap map[string]string) {
	t.Helper()
	blob, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap})
	if err != nil {
		t.Fatal(err)
	}
	writeBytes(t, dir, IndexName, blob)
}

// twoShards writes the shards of a small sharded model into dir.
func twoShards(t *testing.T, dir string) {
	writeFile(t, dir, "model-00001-of-00002.safetensors",
		spec{name: "layers.0.w", dtype: "BF16", shape: []int{2, 2}},
		spec{name: "embed.w", dtype: "U32", shape: []int{4, 1}})
	writeFile(t, dir, "model-00002-of-00002.safetensors",
		spec{name: "layers.1.w", dtype: "BF16", shape: []int{2, 2}},
		spec{name: "norm.w", dtype: "F32", shape: []int{2}})
}

var twoShardsMap = map[string]string{
	"layers.0.w": "model-00001-of-00002.safetensors",
	"embed.w":    "model-00001-of-00002.safetensors",
	"layers.1.w": "model-00002-of-00002.safetensors",
	"norm.w":     "model-00002-of-00002.safetensors",
}

func TestOpenCheckpoint(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"sharded without index", func(t *testing.T, dir string) {
			twoShards(t, dir)
			// Neither is a shard: a macOS resource fork and an unrelated file.
			writeBytes(t, dir, "._model-00001-of-00002.safetensors", []byte("junk"))
			writeBytes(t, dir, "README.md", []byte("hi"))
		}},
		{"sharded with index", func(t *testing.T, dir string) {
			twoShards(t, dir)
			writeIndex(t, dir, twoShardsMap)
			// The index decides; a stale file it does not name is never opened.
			writeBytes(t, dir, "stale.safetensors", []byte("not a safetensors file"))
		}},
		{"index with ./ names", func(t *testing.T, dir string) {
			twoShards(t, dir)
			m := map[string]string{}
			for k, v := range twoShardsMap {
				m[k] = "./" + v
			}
			m["layers.0.w"] = "model-00001-of-00002.safetensors"
			writeIndex(t, dir, m)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			before := OpenMappings()
			c, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Files) != 2 || OpenMappings() != before+2 {
				t.Errorf("%d files, %d new mappings; want 2 and 2", len(c.Files), OpenMappings()-before)
			}
			want := []string{"embed.w", "layers.0.w", "layers.1.w", "norm.w"}
			if got := c.Names(); !slices.Equal(got, want) {
				t.Errorf("Names() = %v, want %v", got, want)
			}
			norm, ok := c.Tensor("norm.w")
			if !ok || filepath.Base(norm.File) != "model-00002-of-00002.safetensors" || !slices.Equal(norm.Shape, []int{2}) {
				t.Errorf("norm.w = %+v, %v", norm, ok)
			}
			if _, ok := c.Tensor("absent"); ok {
				t.Errorf("found a tensor that is not there")
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			checkMappings(t, before)
		})
	}
}

func TestOpenCheckpointErrors(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  []string
	}{
		{"empty folder", func(t *testing.T, dir string) {}, []string{"no *.safetensors files"}},
		{"index naming a missing shard", func(t *testing.T, dir string) {
			twoShards(t, dir)
			m := map[string]string{"extra.w": "model-00003-of-00002.safetensors"}
			for k, v := range twoShardsMap {
				m[k] = v
			}
			writeIndex(t, dir, m)
		}, []string{IndexName, "model-00003-of-00002.safetensors", "missing"}},
		{"index naming a tensor its shard lacks", func(t *testing.T, dir string) {
			twoShards(t, dir)
			m := map[string]string{"extra.w": "model-00002-of-00002.safetensors"}
			for k, v := range twoShardsMap {
				m[k] = v
			}
			writeIndex(t, dir, m)
		}, []string{IndexName, "extra.w", "model-00002-of-00002.safetensors"}},
		{"index putting a tensor in the wrong shard", func(t *testing.T, dir string) {
			twoShards(t, dir)
			m := map[string]string{}
			for k, v := range twoShardsMap {
				m[k] = v
			}
			m["norm.w"] = "model-00001-of-00002.safetensors"
			writeIndex(t, dir, m)
		}, []string{"norm.w should be in model-00001-of-00002.safetensors but is in model-00002-of-00002.safetensors"}},
		{"index escaping the folder", func(t *testing.T, dir string) {
			writeIndex(t, dir, map[string]string{"w": "../other/model.safetensors"})
		}, []string{"outside the model folder"}},
		{"index not JSON", func(t *testing.T, dir string) {
			writeBytes(t, dir, IndexName, []byte("{"))
		}, []string{IndexName}},
		{"empty weight_map", func(t *testing.T, dir string) {
			writeIndex(t, dir, map[string]string{})
		}, []string{"weight_map names no shards"}},
		{"second shard corrupt", func(t *testing.T, dir string) {
			writeFile(t, dir, "a.safetensors", spec{name: "w", dtype: "F32", shape: []int{2}})
			writeBytes(t, dir, "b.safetensors", raw(`{"v":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, nil))
		}, []string{"b.safetensors", "tensor v", "run past the end"}},
		{"tensor in two shards", func(t *testing.T, dir string) {
			writeFile(t, dir, "a.safetensors", spec{name: "w", dtype: "F32", shape: []int{2}})
			writeFile(t, dir, "b.safetensors", spec{name: "w", dtype: "F32", shape: []int{2}})
		}, []string{"tensor w is in both a.safetensors and b.safetensors"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			before := OpenMappings()
			c, err := Open(dir)
			wantErr(t, err, tc.want...)
			if c != nil {
				t.Errorf("got a Checkpoint with the error")
			}
			checkMappings(t, before)
		})
	}
}

func TestOpenMissingFolder(t *testing.T) {
	before := OpenMappings()
	_, err := Open(filepath.Join(t.TempDir(), "nope"))
	wantErr(t, err, "nope")
	if !os.IsNotExist(err) {
		t.Errorf("error %v is not a not-exist error", err)
	}
	checkMappings(t, before)
}

// TestOpenReadsTheMTPFileBesideAnIndex: an mtp.safetensors beside an indexed
// checkpoint that does not name it (an MLX conversion with Qwen's head
// dropped in) is read with it; one the index already covers is not read twice.
func TestOpenReadsTheMTPFileBesideAnIndex(t *testing.T) {
	dir := t.TempDir()
	twoShards(t, dir)
	writeIndex(t, dir, twoShardsMap)
	writeFile(t, dir, MTPName, spec{name: "mtp.fc.weight", dtype: "BF16", shape: []int{2, 4}})
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Tensor("mtp.fc.weight"); !ok {
		t.Error("the MTP head beside the index was not read")
	}
	c.Close()

	covered := maps.Clone(twoShardsMap)
	covered["mtp.fc.weight"] = "model-00002-of-00002.safetensors"
	dir2 := t.TempDir()
	writeFile(t, dir2, "model-00001-of-00002.safetensors",
		spec{name: "layers.0.w", dtype: "BF16", shape: []int{2, 2}}, spec{name: "embed.w", dtype: "U32", shape: []int{4, 1}})
	writeFile(t, dir2, "model-00002-of-00002.safetensors",
		spec{name: "layers.1.w", dtype: "BF16", shape: []int{2, 2}}, spec{name: "norm.w", dtype: "F32", shape: []int{2}},
		spec{name: "mtp.fc.weight", dtype: "BF16", shape: []int{2, 4}})
	writeIndex(t, dir2, covered)
	writeFile(t, dir2, MTPName, spec{name: "mtp.fc.weight", dtype: "BF16", shape: []int{2, 4}})
	c, err = Open(dir2)
	if err != nil {
		t.Fatalf("an index with its own MTP head and a stray mtp.safetensors: %v", err)
	}
	c.Close()
}
