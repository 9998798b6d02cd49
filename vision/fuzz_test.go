package vision

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzImageSize reads any preprocessor_config.json and sizes any decodable
// image with it: the config is refused with a message, or every size it
// gives is a whole number of merged patches within the bounded budget (no
// overflow, no image scaled past what Bagel reads).
func FuzzImageSize(f *testing.F) {
	f.Add([]byte(`{"patch_size": 16, "merge_size": 2, "temporal_patch_size": 2, "size": {"shortest_edge": 65536, "longest_edge": 16777216}}`), 480, 640)
	f.Add([]byte(`{"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14}`), 1, 200)
	f.Add([]byte(`{"min_pixels": 67108864, "max_pixels": 67108864}`), 16384, 82)
	dir := f.TempDir()
	path := filepath.Join(dir, "preprocessor_config.json")
	f.Fuzz(func(t *testing.T, config []byte, height, width int) {
		if height <= 0 || width <= 0 || height > MaxSide || width > MaxSide {
			return // Decode refuses such an image before it is sized
		}
		if err := os.WriteFile(path, config, 0o644); err != nil {
			t.Fatal(err)
		}
		o, err := LoadOptions(dir)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		h, w, err := o.Size(height, width)
		if err != nil {
			return
		}
		f := o.PatchSize * o.MergeSize
		if h <= 0 || w <= 0 || h%f != 0 || w%f != 0 || h*w > max(4*MaxBudgetPixels, f*f) {
			t.Fatalf("%s: %d×%d sized to %d×%d (patches of %d)", config, width, height, w, h, f)
		}
	})
}
