package hub

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"bagel/internal/regular"
)

// configLimit bounds the JSON files a listing reads (a config.json is a few
// KB, an index some hundreds).
const configLimit = 64 << 20

// LocalModel is a model folder found on the disk.
type LocalModel struct {
	Name      string // "org/name" for the Hub cache and LM Studio, the folder's name otherwise
	Repo      string // "org/name" for the Hub cache (what Delete takes), "" otherwise
	Dir       string // the folder to load
	Source    string // "Hub cache", "LM Studio" or "folder"
	ModelType string // config.json's model_type; "" when it cannot be read
	Bytes     int64  // the safetensors files' size
	Problem   string // why it cannot load as it is ("" when nothing is visibly wrong)
	// Vision: config.json declares a vision tower and the checkpoint holds
	// its tensors (mlx-vlm's conversions; mlx-lm's drop them).
	Vision bool
}

// LMStudioDir is LM Studio's models folder (~/.lmstudio/models).
func LMStudioDir() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".lmstudio", "models")
}

// Library lists the model folders of the Hub cache (the snapshot each
// revision in refs/ points to), of LM Studio's models folder (ORG/NAME
// folders) and the given folders, sorted by name. It reads only config.json
// and the file sizes: whether Bagel runs a model type is the caller's to say.
// A folder listed twice (a recent folder that is a cache snapshot) shows once,
// under where it lives.
func Library(cache, lmstudio string, folders []string) []LocalModel {
	var out []LocalModel
	listed := map[string]bool{}
	add := func(m LocalModel) {
		if key := filepath.Clean(m.Dir); !listed[key] {
			listed[key] = true
			out = append(out, m)
		}
	}
	repos, _ := filepath.Glob(filepath.Join(cache, "models--*--*"))
	for _, r := range repos {
		name := strings.Replace(strings.TrimPrefix(filepath.Base(r), "models--"), "--", "/", 1)
		refs, _ := filepath.Glob(filepath.Join(r, "refs", "*"))
		seen := map[string]bool{}
		for _, ref := range refs {
			data, err := regular.ReadFile(ref, 1<<10)
			commit := strings.TrimSpace(string(data))
			if err != nil || !isHex(commit, 40) || seen[commit] { // a ref names a commit; anything else is not the cache's
				continue
			}
			seen[commit] = true
			snap := filepath.Join(r, "snapshots", commit)
			label := name
			if rev := filepath.Base(ref); rev != "main" {
				label += "@" + rev
			}
			m := Describe(label, snap, "Hub cache")
			m.Repo = name
			add(m)
		}
	}
	if lmstudio != "" {
		dirs, _ := filepath.Glob(filepath.Join(lmstudio, "*", "*"))
		for _, d := range dirs {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				add(Describe(filepath.Base(filepath.Dir(d))+"/"+filepath.Base(d), d, "LM Studio"))
			}
		}
	}
	for _, d := range folders {
		add(Describe(filepath.Base(d), d, "folder"))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// describe reads what a listing shows of one folder.
// Describe is the LocalModel of folder dir, listed as name from source.
func Describe(name, dir, source string) LocalModel {
	m := LocalModel{Name: name, Dir: dir, Source: source}
	data, err := regular.ReadFile(filepath.Join(dir, "config.json"), configLimit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		m.Problem = "no config.json"
		return m
	case err != nil:
		m.Problem = err.Error()
		return m
	}
	var cfg struct {
		ModelType string          `json:"model_type"`
		Vision    json.RawMessage `json:"vision_config"`
	}
	if json.Unmarshal(data, &cfg) != nil {
		m.Problem = "config.json is not valid JSON"
		return m
	}
	m.ModelType = cfg.ModelType
	shards, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if len(shards) == 0 {
		m.Problem = "no .safetensors files"
	}
	for _, s := range shards {
		st, err := regular.Check(s) // follows the cache's links to the blobs
		switch {
		case errors.Is(err, fs.ErrNotExist):
			m.Problem = filepath.Base(s) + " is missing (an interrupted download?)"
			continue
		case err != nil:
			m.Problem = err.Error()
			continue
		}
		m.Bytes += st.Size()
	}
	m.Vision = len(cfg.Vision) > 0 && string(cfg.Vision) != "null" && holdsVisionTensors(dir, shards)
	return m
}

// holdsVisionTensors reports whether the checkpoint names a vision tower's
// tensors (vision_tower.*, model.visual.*): in its index, else in each
// shard's header (the 8-byte length and the JSON that follows it).
func holdsVisionTensors(dir string, shards []string) bool {
	tower := func(name string) bool {
		return strings.HasPrefix(name, "vision_tower.") || strings.HasPrefix(name, "model.visual.")
	}
	if data, err := regular.ReadFile(filepath.Join(dir, "model.safetensors.index.json"), configLimit); err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if json.Unmarshal(data, &idx) == nil {
			for name := range idx.WeightMap {
				if tower(name) {
					return true
				}
			}
			return false
		}
	}
	for _, s := range shards {
		f, err := regular.Open(s)
		if err != nil {
			continue
		}
		var n [8]byte
		_, err = io.ReadFull(f, n[:])
		size := binary.LittleEndian.Uint64(n[:])
		if err != nil || size > 100<<20 {
			f.Close()
			continue
		}
		header := make([]byte, size)
		_, err = io.ReadFull(f, header)
		f.Close()
		var names map[string]json.RawMessage
		if err != nil || json.Unmarshal(header, &names) != nil {
			continue
		}
		for name := range names {
			if tower(name) {
				return true
			}
		}
	}
	return false
}
