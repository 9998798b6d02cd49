package ui

import (
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

// TestScreenshot draws the README's screenshots through the real window code
// and Fyne's software renderer: three chats with the tiny test model, the last
// reply finished, the performance panel on; FILE in the dark theme and
// FILE-light.png in the light one. Off unless BAGEL_SCREENSHOT names the file
// to write (`BAGEL_SCREENSHOT=$PWD/docs/screenshot.png go test ./ui -run
// Screenshot`).
func TestScreenshot(t *testing.T) {
	path := os.Getenv("BAGEL_SCREENSHOT")
	if path == "" {
		t.Skip("set BAGEL_SCREENSHOT=FILE to draw the README's screenshots")
	}
	for _, light := range []bool{false, true} {
		out := path
		if light {
			out = strings.TrimSuffix(path, ".png") + "-light.png"
		}
		t.Run(out, func(t *testing.T) { drawScreenshot(t, out, light) })
	}
}

func drawScreenshot(t *testing.T, path string, light bool) {
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
