// Package testmodel finds the tiny test checkpoints under testdata/ for tests
// anywhere in the module, and assembles a complete model folder (weights plus the
// Qwen3 tokenizer, which testdata keeps compressed and only once).
package testmodel

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Names are the test checkpoints: a dense qwen3_5 and a qwen3_5_moe model.
var Names = []string{"tiny-dense", "tiny-moe"}

// Root is the module root (the folder holding go.mod).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testmodel: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Weights is testdata/models/<name>: config and safetensors, no tokenizer.
func Weights(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(Root(t), "testdata", "models", name)
}

// Dir is a complete model folder for name in a temporary directory: links to the
// weights and the decompressed Qwen3 tokenizer files.
func Dir(t testing.TB, name string) string {
	t.Helper()
	src := Weights(t, name)
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	Tokenizer(t, dst)
	return dst
}

// Tokenizer writes the Qwen3 tokenizer.json and tokenizer_config.json into dir.
func Tokenizer(t testing.TB, dir string) {
	t.Helper()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		gunzip(t, filepath.Join(Root(t), "testdata", "tokenizer", "qwen3", f+".gz"), filepath.Join(dir, f))
	}
}

func gunzip(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
}
