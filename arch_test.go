package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbidden lists, per folder, the packages its Go files (tests aside, and its
// subfolders too) must not import: the layer map of docs/ARCHITECTURE.md. A
// model never imports a backend, the front ends (ui, cli) never reach below the
// engine and never import each other, the backends never reach above
// themselves, a file format knows nothing of devices, and the leaf packages
// import nothing of Bagel's.
var forbidden = map[string][]string{
	"qwen":        {"bagel/backend", "bagel/cpu", "bagel/cuda", "bagel/metal", "bagel/engine", "bagel/ui", "bagel/cli"},
	"ops":         {"bagel/cpu", "bagel/cuda", "bagel/metal", "bagel/qwen", "bagel/engine", "bagel/ui", "bagel/cli"},
	"ui":          {"bagel/qwen", "bagel/ops", "bagel/tokenizer", "bagel/backend", "bagel/cpu", "bagel/cuda", "bagel/metal", "bagel/safetensors", "bagel/kernels", "bagel/cli"},
	"cli":         {"bagel/ops", "bagel/backend", "bagel/cpu", "bagel/cuda", "bagel/metal", "bagel/kernels", "bagel/ui"},
	"engine":      {"bagel/ui", "bagel/cli"},
	"tokenizer":   {"bagel/engine", "bagel/qwen", "bagel/ops", "bagel/ui", "bagel/cli"},
	"safetensors": {"bagel/backend", "bagel/engine", "bagel/qwen", "bagel/ops", "bagel/ui", "bagel/cli"},
	"cpu":         {"bagel/ops", "bagel/qwen", "bagel/engine", "bagel/ui", "bagel/cli"},
	"cuda":        {"bagel/ops", "bagel/qwen", "bagel/engine", "bagel/ui", "bagel/cli"},
	"metal":       {"bagel/ops", "bagel/qwen", "bagel/engine", "bagel/ui", "bagel/cli", "bagel/cpu", "bagel/cuda"},
	"kernels":     {"bagel/ops", "bagel/qwen", "bagel/engine", "bagel/ui", "bagel/cli", "bagel/cpu"},
	"backend":     {"bagel/"},
	"switches":    {"bagel/"},
	"synth":       {"bagel/"},
	"drafter":     {"bagel/"},                                                                                                                       // token ids in, token ids out: no model, no engine
	"hub":         {"bagel/"},                                                                                                                       // HTTP and files: no model
	"server":      {"bagel/qwen", "bagel/ops", "bagel/backend", "bagel/cpu", "bagel/cuda", "bagel/metal", "bagel/kernels", "bagel/ui", "bagel/cli"}, // the engine's API over HTTP
	// The yardstick of every path: a checkpoint reader and plain loops, nothing
	// the kernels share.
	"reference": {"bagel/backend", "bagel/cpu", "bagel/cuda", "bagel/metal", "bagel/ops", "bagel/kernels", "bagel/qwen",
		"bagel/engine", "bagel/ui", "bagel/cli", "bagel/tokenizer", "bagel/synth"},
}

// exempt lists the files allowed one import their folder forbids: the Metal
// simulator runs each dispatch with the CPU backend's kernel (issue 14), which
// the real Metal backend never does.
var exempt = map[string]string{
	"metal/mtl/sim_device.go": "bagel/cpu",
	"metal/mtl/sim_queue.go":  "bagel/cpu",
}

func TestLayering(t *testing.T) {
	for dir, bad := range forbidden {
		files := 0
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			files++
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range parsed.Imports {
				imported, _ := strconv.Unquote(imp.Path.Value)
				for _, b := range bad {
					if exempt[filepath.ToSlash(path)] == imported {
						continue
					}
					if imported == b || (strings.HasSuffix(b, "/") && strings.HasPrefix(imported, b)) {
						t.Errorf("%s imports %s", path, imported)
					}
				}
			}
			return nil
		})
		if err != nil || files == 0 {
			t.Errorf("%s: %d Go files (%v)", dir, files, err)
		}
	}
}

// TestMainIsAlone keeps the root to main.go: the front ends live in cli/ and ui/.
func TestMainIsAlone(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f != "main.go" && !strings.HasSuffix(f, "_test.go") {
			t.Errorf("%s: the root holds main.go alone", f)
		}
	}
}
