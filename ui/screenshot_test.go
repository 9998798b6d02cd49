package ui

import (
	"flag"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"bagel/internal/testmodel"
)

//go:generate go test -run=^$ -bench=^BenchmarkScreenshots$ -benchtime=1x . -args -screenshot=../docs/screenshot.png

// screenshot is the file BenchmarkScreenshots writes ("": it draws nothing).
var screenshot = flag.String("screenshot", "", "the PNG file BenchmarkScreenshots writes (and FILE-light.png)")

// BenchmarkScreenshots draws the README's screenshots through the real window
// code and Fyne's software renderer: three chats with the tiny test model, the
// last reply finished, the performance panel on; FILE in the dark theme and
// FILE-light.png in the light one. It is a generate step, not a test (a
// benchmark, to reach the package's internals and the test harness, and a
// flag, so that `go test -bench .` writes nothing): `go generate ./ui`
// redraws docs/screenshot.png and docs/screenshot-light.png, as does
//
//	go test ./ui -run '^$' -bench Screenshots -benchtime 1x -args -screenshot=$PWD/docs/screenshot.png
func BenchmarkScreenshots(b *testing.B) {
	if *screenshot == "" {
		b.Skip("pass -args -screenshot=FILE to draw the README's screenshots (go generate ./ui does)")
	}
	for _, light := range []bool{false, true} {
		out := *screenshot
		if light {
			out = strings.TrimSuffix(out, ".png") + "-light.png"
		}
		b.Run(filepath.Base(out), func(b *testing.B) {
			for b.Loop() {
				drawScreenshot(b, out, light)
			}
		})
	}
}

func drawScreenshot(t testing.TB, path string, light bool) {
	s := testSettings()
	s.MaxTokens = 90
	s.ContextLength = 4096
	h := newHarness(t, &s, "", "")
	if light {
		fyne.CurrentApp().Settings().SetTheme(lightVariant{newReadableTheme(1)})
	}
	named := filepath.Join(t.TempDir(), "tiny-moe") // the window names a model by its folder
	if err := os.Symlink(testmodel.Dir(t, "tiny-moe"), named); err != nil {
		t.Fatal(err)
	}
	h.a.openModel(named)
	h.waitFor("the model to load", func() bool { return !h.a.loading && h.a.eng != nil })
	for i, q := range []string{"Tell me about bagels.", "Write a haiku about sesame seeds.", "What makes a Montreal bagel different?"} {
		if i > 0 {
			h.a.newConversation()
		}
		h.typeAndSend(q)
		h.waitReplyDone()
	}
	h.a.win.Resize(fyne.NewSize(1280, 800))
	h.pump()
	h.a.win.Content().Refresh() // lay every view out at the final size
	h.pump()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, h.a.win.Canvas().Capture()); err != nil {
		t.Fatal(err)
	}
}

// lightVariant is a theme in its light variant whatever the system asks.
type lightVariant struct{ fyne.Theme }

func (l lightVariant) Color(n fyne.ThemeColorName, _ fyne.ThemeVariant) color.Color {
	return l.Theme.Color(n, theme.VariantLight)
}
