package layers

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"bagel/internal/testmodel"
)

// forbidden lists, per package, the packages it must not import (non-test files):
// a model never imports a backend, the front ends (ui, cli) never reach below the
// engine and never import each other, the backends never reach above themselves.
var forbidden = map[string][]string{
	"qwen":        {"bagel/backend", "bagel/cpu", "bagel/cuda", "bagel/metal", "bagel/engine", "bagel/ui"},
	"ops":         {"bagel/cpu", "bagel/cuda", "bagel/metal", "bagel/qwen", "bagel/engine", "bagel/ui"},
	"ui":          {"bagel/qwen", "bagel/ops", "bagel/tokenizer", "bagel/backend", "bagel/cpu", "bagel/cuda", "bagel/metal", "bagel/safetensors", "bagel/kernels", "bagel/cli"},
	"cli":         {"bagel/ops", "bagel/backend", "bagel/cpu", "bagel/cuda", "bagel/metal", "bagel/kernels", "bagel/ui"},
	"tokenizer":   {"bagel/engine", "bagel/qwen", "bagel/ops", "bagel/ui"},
	"safetensors": {"bagel/backend", "bagel/engine", "bagel/qwen", "bagel/ops", "bagel/ui"},
	"cpu":         {"bagel/ops", "bagel/qwen", "bagel/engine", "bagel/ui"},
	"cuda":        {"bagel/ops", "bagel/qwen", "bagel/engine", "bagel/ui"},
	"metal":       {"bagel/ops", "bagel/qwen", "bagel/engine", "bagel/ui"},
	"kernels":     {"bagel/ops", "bagel/qwen", "bagel/engine", "bagel/ui", "bagel/cpu"},
	"backend":     {"bagel/"},
	"synth":       {"bagel/"},
	"drafter":     {"bagel/"}, // token ids in, token ids out: no model, no engine
}

func TestLayering(t *testing.T) {
	root := testmodel.Root(t)
	for dir, bad := range forbidden {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, b := range bad {
					if path == b || (strings.HasSuffix(b, "/") && strings.HasPrefix(path, b)) {
						t.Errorf("%s imports %s", filepath.Join(dir, filepath.Base(f)), path)
					}
				}
			}
		}
	}
}
