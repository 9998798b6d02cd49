package vision

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fixture is testdata/vision/cases.json (tools/vision/fixture.py: Pillow
// and numpy running the Qwen2-VL image processor's steps).
type fixture struct {
	MinPixels int `json:"min_pixels"`
	MaxPixels int `json:"max_pixels"`
	Cases     []struct {
		File          string
		Width, Height int
		ResizedWidth  int   `json:"resized_width"`
		ResizedHeight int   `json:"resized_height"`
		Grid          []int `json:"grid"`
	}
}

func loadFixture(t *testing.T) (fixture, Options) {
	t.Helper()
	data, err := os.ReadFile("../testdata/vision/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.MinPixels, o.MaxPixels = f.MinPixels, f.MaxPixels
	return f, o
}

// TestMatchesTheProcessor: each fixture image decodes to its size (a JPEG's
// EXIF orientation applied), takes the processor's size, resizes to
// Pillow's bytes exactly (a PNG; a JPEG within the two decoders' difference),
// and its patches are the processor's floats bit for bit.
func TestMatchesTheProcessor(t *testing.T) {
	f, o := loadFixture(t)
	if len(f.Cases) < 5 {
		t.Fatalf("%d cases in the fixture", len(f.Cases))
	}
	for _, c := range f.Cases {
		data, err := os.ReadFile(filepath.Join("../testdata/vision", c.File))
		if err != nil {
			t.Fatal(err)
		}
		img, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", c.File, err)
		}
		if img.W != c.Width || img.H != c.Height {
			t.Errorf("%s: decoded %d×%d, want %d×%d", c.File, img.W, img.H, c.Width, c.Height)
			continue
		}
		h, w, err := o.Size(img.H, img.W)
		if err != nil || h != c.ResizedHeight || w != c.ResizedWidth {
			t.Errorf("%s: size %d×%d (%v), want %d×%d", c.File, w, h, err, c.ResizedWidth, c.ResizedHeight)
			continue
		}
		base := strings.TrimSuffix(c.File, filepath.Ext(c.File))
		want, err := os.ReadFile(filepath.Join("../testdata/vision", base+".rgb"))
		if err != nil {
			t.Fatal(err)
		}
		got := resize(img, w, h)
		worst := 0
		for i := range want {
			worst = max(worst, absDiff(got.Pix[i], want[i]))
		}
		limit := 0
		if strings.HasSuffix(c.File, ".jpg") {
			// Go's inverse DCT is not libjpeg's: a JPEG decodes up to a
			// level or two apart (the chroma upsampling and color
			// conversion are libjpeg's). The resize itself is exact on PNGs.
			limit = 2
		}
		t.Logf("%s: resized bytes within %d of Pillow's", c.File, worst)
		if worst > limit {
			t.Errorf("%s: resized bytes differ from Pillow's by up to %d (allowed %d)", c.File, worst, limit)
		}
		p, err := o.Preprocess(img)
		if err != nil {
			t.Fatal(err)
		}
		if p.GridT != c.Grid[0] || p.GridH != c.Grid[1] || p.GridW != c.Grid[2] || p.Tokens() != c.Grid[1]*c.Grid[2]/4 {
			t.Errorf("%s: grid %d×%d×%d, want %v", c.File, p.GridT, p.GridH, p.GridW, c.Grid)
		}
		raw, err := os.ReadFile(filepath.Join("../testdata/vision", base+".f32"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) != 4*len(p.Data) {
			t.Fatalf("%s: %d patch values, the processor %d", c.File, len(p.Data), len(raw)/4)
		}
		for i := range p.Data {
			if want := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); p.Data[i] != want {
				t.Fatalf("%s: patch value %d is %g, the processor's %g", c.File, i, p.Data[i], want)
			}
		}
	}
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// TestSize: the processor's rounding (half to even), its budget both ways,
// and its refusals.
func TestSize(t *testing.T) {
	o := DefaultOptions()
	for _, c := range []struct{ h, w, wantH, wantW int }{
		{1024, 1024, 1024, 1024},
		{48, 80, 224, 352},       // under 256²: scaled up
		{8000, 6000, 4704, 3520}, // over 4096²: scaled down
		{720, 1280, 704, 1280},   // 720/32 = 22.5: to even, 22
		{1, 200, 32, 3648},       // 200:1, the most allowed
	} {
		h, w, err := o.Size(c.h, c.w)
		if err != nil || h != c.wantH || w != c.wantW {
			t.Errorf("%d×%d → %d×%d (%v), want %d×%d", c.w, c.h, w, h, err, c.wantW, c.wantH)
		}
	}
	for _, c := range [][2]int{{1, 300}, {0, 10}} {
		if _, _, err := o.Size(c[0], c[1]); err == nil {
			t.Errorf("%d×%d was not refused", c[1], c[0])
		}
	}
}

// TestDecodeRefuses: an empty file, text, a cut PNG and a side past MaxSide
// are each refused with what is wrong; a GIF gives its first frame, a
// 16-bit PNG its high bytes, and alpha is dropped, not blended.
func TestDecodeRefuses(t *testing.T) {
	var buf bytes.Buffer
	src := image.NewNRGBA64(image.Rect(0, 0, 3, 2))
	src.Set(1, 1, color.NRGBA64{R: 0x1234, G: 0xff00, B: 0x00ff, A: 0x8000})
	png.Encode(&buf, src)
	full := buf.Bytes()
	img, err := Decode(full)
	if err != nil || img.W != 3 || img.H != 2 || img.Pix[(1*3+1)*3] != 0x12 || img.Pix[(1*3+1)*3+1] != 0xff || img.Pix[(1*3+1)*3+2] != 0x00 {
		t.Errorf("16-bit PNG with alpha: %v, %+v", err, img)
	}
	huge := image.NewGray(image.Rect(0, 0, 1, 1))
	buf.Reset()
	png.Encode(&buf, huge)
	big := bytes.Clone(buf.Bytes())
	binary.BigEndian.PutUint32(big[16:], MaxSide+1) // the IHDR width, and its chunk's CRC
	binary.BigEndian.PutUint32(big[29:], crc32.ChecksumIEEE(big[12:29]))
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"empty":   {nil, "empty"},
		"text":    {[]byte("hello, not an image"), "not a PNG, JPEG, GIF or WebP"},
		"cut png": {full[:len(full)/2], "cannot be read"},
		"huge":    {big, "at most 16384 on a side"},
	} {
		if _, err := Decode(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	pal := color.Palette{color.RGBA{10, 20, 30, 255}, color.RGBA{200, 100, 50, 255}}
	a := image.NewPaletted(image.Rect(0, 0, 2, 2), pal)
	b := image.NewPaletted(image.Rect(0, 0, 2, 2), pal)
	b.SetColorIndex(0, 0, 1)
	buf.Reset()
	gif.EncodeAll(&buf, &gif.GIF{Image: []*image.Paletted{a, b}, Delay: []int{1, 1}})
	if img, err := Decode(buf.Bytes()); err != nil || img.Pix[0] != 10 || img.Pix[1] != 20 {
		t.Errorf("animated GIF: %v, first pixel %v, want the first frame's 10 20 30", err, img.Pix[:3])
	}
}

// TestOrientations: each EXIF orientation turns a 3×2 image as Pillow's
// exif_transpose does (the corner that ends top left, and the size).
func TestOrientations(t *testing.T) {
	img := &Image{W: 3, H: 2, Pix: make([]uint8, 18)}
	for i := range 6 {
		img.Pix[i*3] = uint8(i) // pixel (x, y) = y·3 + x
	}
	// The pixel that lands at (0, 0) and the size, per orientation.
	want := map[int][3]int{1: {0, 3, 2}, 2: {2, 3, 2}, 3: {5, 3, 2}, 4: {3, 3, 2}, 5: {0, 2, 3}, 6: {3, 2, 3}, 7: {5, 2, 3}, 8: {2, 2, 3}}
	for o, w := range want {
		got := orient(img, o)
		if int(got.Pix[0]) != w[0] || got.W != w[1] || got.H != w[2] {
			t.Errorf("orientation %d: top left %d, %d×%d; want %d, %d×%d", o, got.Pix[0], got.W, got.H, w[0], w[1], w[2])
		}
	}
}

// TestLoadOptions: a folder's preprocessor_config.json gives the options
// (the released form: size.shortest_edge and longest_edge); none gives the
// defaults; a broken budget is refused.
func TestLoadOptions(t *testing.T) {
	dir := t.TempDir()
	if o, err := LoadOptions(dir); err != nil || o != DefaultOptions() {
		t.Errorf("no file: %+v %v", o, err)
	}
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "preprocessor_config.json"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"patch_size": 14, "merge_size": 2, "temporal_patch_size": 2, "size": {"shortest_edge": 3136, "longest_edge": 12845056}, "image_mean": [0.48, 0.45, 0.4], "image_std": [0.26, 0.26, 0.27]}`)
	o, err := LoadOptions(dir)
	if err != nil || o.PatchSize != 14 || o.MinPixels != 3136 || o.MaxPixels != 12845056 || o.Mean[0] != 0.48 || o.Std[2] != 0.27 {
		t.Errorf("released form: %+v %v", o, err)
	}
	for _, c := range []struct{ file, want string }{
		{`{"min_pixels": 100, "max_pixels": 10}`, "a pixel budget of 100 to 10"},
		// A damaged budget would scale every image up to terabytes.
		{`{"min_pixels": 1099511627776, "max_pixels": 1099511627776}`, "Bagel reads at most 67108864"},
		{`{"patch_size": 4294967296, "merge_size": 4294967296}`, "at most 64 each"},
		{`{"patch_size": -2}`, "patch -2"},
		{`{"patch_size": "16"}`, "preprocessor_config.json: json"},
	} {
		write(c.file)
		if _, err := LoadOptions(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error with %q", c.file, err, c.want)
		}
	}
}

// TestHEIFIsNamed: a HEIC photo (its ftyp box) is told apart from a file
// that is no image: off macOS it is refused as a HEIC/HEIF photo, with the
// way out; anything else in an ftyp box (an MP4) is not taken for one.
func TestHEIFIsNamed(t *testing.T) {
	heic := append([]byte{0, 0, 0, 24}, []byte("ftypheic\x00\x00\x00\x00mif1heic")...)
	if !isHEIF(heic) || isHEIF(append([]byte{0, 0, 0, 24}, []byte("ftypisom\x00\x00\x00\x00")...)) || isHEIF([]byte("ftyp")) {
		t.Fatal("isHEIF takes the wrong files")
	}
	if runtime.GOOS == "darwin" {
		t.Skip("on a Mac ImageIO reads HEIC (never run here)")
	}
	if _, err := Decode(heic); err == nil || !strings.Contains(err.Error(), "HEIC/HEIF photo") || !strings.Contains(err.Error(), "on a Mac only") {
		t.Errorf("a HEIC photo off macOS: %v", err)
	}
}
