package ui

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadSettings reads arbitrary settings files: none panics, what comes
// back always passes Validate, and the file is never changed by reading it.
func FuzzLoadSettings(f *testing.F) {
	for _, seed := range []string{`{"top_p": 5, "max_tokens": "lots", "recent_models": ["/a"]}`, `{"temperature": 0.3}`,
		`{oops`, `[]`, `null`, `{"models": {"/a": {"max_tokens": -1}}, "switches": {"x": 1}}`, `{"backend": "tpu"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "settings.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, _ := LoadSettings(path)
		if err := s.Validate(); err != nil {
			t.Fatalf("LoadSettings(%q) gave settings that fail Validate: %v", data, err)
		}
		if after, _ := os.ReadFile(path); string(after) != string(data) {
			t.Fatal("reading the settings changed the file")
		}
	})
}
