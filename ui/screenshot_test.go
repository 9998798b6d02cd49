package ui

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"fyne.io/fyne/v2"

	"bagel/internal/testmodel"
)

// TestScreenshot draws docs/screenshot.png through the real window code and
// Fyne's software renderer: three chats with the tiny test model, the last
// reply finished, the performance panel on. Off unless BAGEL_SCREENSHOT names
// the file to write (`BAGEL_SCREENSHOT=$PWD/docs/screenshot.png go test ./ui
// -run Screenshot`).
func TestScreenshot(t *testing.T) {
	path := os.Getenv("BAGEL_SCREENSHOT")
	if path == "" {
		t.Skip("set BAGEL_SCREENSHOT=FILE to draw the README's screenshot")
	}
	s := testSettings()
	s.MaxTokens = 90
	s.ContextLength = 4096
	h := newHarness(t, &s, "", "")
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
