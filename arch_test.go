package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowed lists, per package (its folder; "" the root), the packages of
// Bagel's its Go files may import (tests aside, under any build tag): the
// layer map of docs/ARCHITECTURE.md as an allow-list, so a new arrow is a
// decision made here and in that map. A model never imports a backend (qwen
// reaches devices through ops), the front ends (ui, cli) never reach below the
// engine and never import each other, the backends never reach above
// themselves, a file format knows nothing of devices, and the leaf packages
// import nothing of Bagel's. A package missing here fails the test.
var allowed = map[string][]string{
	"":          {"cli", "ui"},
	"assets":    nil,
	"backend":   nil,
	"cli":       {"drafter", "engine", "hub", "remote", "server", "switches", "synth", "tokenizer"},
	"cpu":       {"backend", "internal/par", "kernels"},
	"cuda":      {"backend", "kernels", "switches"},
	"drafter":   nil,                  // token ids in, token ids out: no model, no engine
	"hub":       {"internal/regular"}, // HTTP and files: no model
	"kernels":   {"backend"},
	"metal":     {"backend", "kernels", "metal/mtl", "switches"},
	"metal/mtl": {"backend", "kernels"},
	"ops":       {"backend", "kernels"},
	"qwen":      {"internal/jsonmsg", "internal/par", "internal/regular", "ops", "safetensors"}, // no switch: the kernel plan is ops.Plan
	// The engine registers the backends (their init) and asks CUDA and Metal
	// for the device's memory (budget_*.go).
	"engine":      {"backend", "cpu", "cuda", "drafter", "internal/regular", "metal", "ops", "qwen", "safetensors", "switches", "tokenizer", "vision"},
	"safetensors": {"internal/regular"},
	"server":      {"engine", "internal/jsonmsg", "tokenizer"}, // the engine's API over HTTP
	"remote":      {"engine"},                                  // another server's model, as the engine's events
	"store":       nil,
	"switches":    nil,
	"synth":       nil,
	"tokenizer":   {"internal/regular"},
	"vision":      {"internal/par", "internal/regular"}, // image files to the vision tower's patches: no model
	"ui":          {"assets", "engine", "hub", "internal/jsonmsg", "internal/locale", "internal/regular", "remote", "server", "store"},
	// The yardstick of every path: a checkpoint reader and plain loops, nothing
	// the kernels share.
	"reference":          {"safetensors"},
	"internal/gputest":   {"backend", "cpu", "kernels"},
	"internal/jsonmsg":   nil,
	"internal/locale":    nil,
	"internal/par":       nil,
	"internal/regular":   nil,
	"internal/testmodel": {"synth"},
	"tools/ptx":          {"cuda", "kernels"},
}

// exempt lists the files allowed one import their package's list lacks: the
// Metal simulator runs each dispatch with the CPU backend's kernel (issue
// 14), which the real Metal backend never does.
var exempt = map[string]string{
	"metal/mtl/sim_device.go": "bagel/cpu",
	"metal/mtl/sim_queue.go":  "bagel/cpu",
}

func TestLayering(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if pkg == "." {
			pkg = ""
		}
		ok, listed := allowed[pkg]
		if !listed {
			if !seen[pkg] {
				t.Errorf("package %q is not in arch_test.go's allow-list: add it with the imports its layer may make", pkg)
			}
			seen[pkg] = true
			return nil
		}
		seen[pkg] = true
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
			rest, ours := strings.CutPrefix(imported, "bagel/")
			if !ours || slices.Contains(ok, rest) || exempt[filepath.ToSlash(path)] == imported {
				continue
			}
			t.Errorf("%s imports %s, which package %q may not (arch_test.go's allow-list, docs/ARCHITECTURE.md)", path, imported, pkg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range allowed {
		if !seen[pkg] {
			t.Errorf("arch_test.go lists %q, which has no Go files", pkg)
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
