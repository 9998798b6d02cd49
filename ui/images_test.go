package ui

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"

	"bagel/internal/testmodel"
)

// visionModelDir is a small vision model the window can chat with.
func visionModelDir(t *testing.T) string { return testmodel.VisionChat(t) }

// TestImagesInAChat: an image dropped on a model with a vision tower waits
// in the composer (a broken one is refused by name, nothing attached); Enter
// sends it with the question: the message keeps it (its file in the store's
// image folder), shows it, and the model's reply comes; the next turn sends
// it again with the history; deleting the chat removes its file.
func TestImagesInAChat(t *testing.T) {
	for _, parallel := range []int{1, 2} { // one reply at a time, and through the batch (which routes images to Generate)
		t.Run(fmt.Sprintf("replies at once %d", parallel), func(t *testing.T) { imagesInAChat(t, parallel) })
	}
}

func imagesInAChat(t *testing.T, parallel int) {
	s := testSettings()
	s.ChatParallel = parallel
	h := newHarness(t, &s, "", "")
	dir := visionModelDir(t)
	h.a.openModel(dir)
	h.waitFor("the model to load", func() bool { return !h.a.loading && (h.a.eng != nil || h.dialogText() != "") })
	if h.a.eng == nil {
		t.Fatalf("the model did not load: %s", h.dialogText())
	}
	broken := filepath.Join(t.TempDir(), "broken.png")
	os.WriteFile(broken, []byte("\x89PNG\r\n\x1a\nnot really"), 0o644)
	h.a.dropped([]fyne.URI{storage.NewFileURI(broken)})
	if text := h.dialogText(); !strings.Contains(text, "The image cannot be read") || !strings.Contains(text, "broken.png") {
		t.Errorf("a broken image's dialog: %q", text)
	}
	for o := h.a.win.Canvas().Overlays(); o.Top() != nil; {
		o.Top().Hide()
		o.Remove(o.Top())
	}
	if len(h.a.composer.attached) != 0 {
		t.Fatal("a broken image was attached")
	}
	photo, _ := filepath.Abs(filepath.Join("..", "testdata", "vision", "big.png"))
	h.a.dropped([]fyne.URI{storage.NewFileURI(photo)})
	if len(h.a.composer.attached) != 1 || h.a.composer.attachRow.Hidden {
		t.Fatalf("the dropped image is not in the composer: %+v", h.a.composer.attached)
	}
	// The composer's count takes the image's 6 tokens (96×64 pixels, 2×3 merged patches).
	h.a.composer.entry.SetText("What is in it?")
	h.a.countTokensSoon()
	h.waitFor("the count with the image", func() bool { return strings.Contains(h.a.composer.tokens.Text, "tokens") })
	withImage := h.a.composer.tokens.Text
	h.a.composer.takeAttached()
	h.waitFor("the count without it", func() bool { return h.a.composer.tokens.Text != withImage })
	if without := h.a.composer.tokens.Text; countOf(t, withImage)-countOf(t, without) != 6+2 {
		t.Errorf("with the image %q, without %q: want 8 tokens more (its 6 and the start and end markers)", withImage, without)
	}
	h.a.composer.entry.SetText("")
	h.a.dropped([]fyne.URI{storage.NewFileURI(photo)})
	// The attached image stays with its chat: another chat's composer does
	// not hold it, and it is back when its chat is.
	first := h.a.conv
	h.a.newConversation()
	if len(h.a.composer.attached) != 0 {
		t.Fatal("a new chat's composer holds the other chat's image")
	}
	if first != nil {
		h.a.selectConversation(first.ID)
	} else {
		h.a.showConversation(nil, nil)
	}
	if len(h.a.composer.attached) != 1 {
		t.Fatalf("back in its chat, the composer holds %d images, want the one attached", len(h.a.composer.attached))
	}
	h.typeAndSend("What is in it?")
	reply := h.waitReplyDone()
	if reply.Status == "error" {
		t.Fatalf("the reply failed: %s", reply.Summary)
	}
	msgs, err := h.a.store.Messages(reply.ConversationID)
	if err != nil || len(msgs) != 2 || len(msgs[0].Images) != 1 || msgs[0].Images[0].Name != "big.png" {
		t.Fatalf("saved: %+v, %v", msgs, err)
	}
	img := msgs[0].Images[0]
	if _, err := os.Stat(h.a.store.ImagePath(img)); err != nil {
		t.Fatalf("the image's file: %v", err)
	}
	if len(h.a.composer.attached) != 0 {
		t.Error("the composer still holds the sent image")
	}
	if v := h.a.chat.views[msgs[0].ID]; v == nil || v.pictures.Hidden || len(v.pictures.Objects) != 1 {
		t.Error("the question does not show its image")
	}
	h.typeAndSend("And the colours?")
	if r := h.waitReplyDone(); r.Status == "error" {
		t.Fatalf("the second turn failed: %s", r.Summary)
	}
	// An image too big for what is left of the context is refused before
	// anything is saved: the context is 512 tokens, a 2048×2048 image 4,096.
	big := filepath.Join(t.TempDir(), "big.png")
	writePNG(t, big, 2048, 2048)
	h.a.dropped([]fyne.URI{storage.NewFileURI(big)}) // the processor brings it to 96×96: 9 tokens
	if len(h.a.composer.attached) != 1 {
		t.Fatal("the big image was not attached")
	}
	before, _ := h.a.store.Messages(reply.ConversationID)
	h.a.imageTokenCounts[h.a.composer.attached[0].File] = 4096 // as a model with a larger processor would count it
	entry := h.a.composer.entry
	test.Type(entry, "And this?")
	entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	after, _ := h.a.store.Messages(reply.ConversationID)
	if text := h.dialogText(); !strings.Contains(text, "does not fit the context") || len(after) != len(before) || h.a.anyGen() != nil {
		t.Errorf("a question too big for the context: dialog %q, %d messages (were %d)", text, len(after), len(before))
	}
	for o := h.a.win.Canvas().Overlays(); o.Top() != nil; {
		o.Top().Hide()
		o.Remove(o.Top())
	}
	if err := h.a.store.DeleteConversation(reply.ConversationID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.a.store.ImagePath(img)); !os.IsNotExist(err) {
		t.Errorf("the deleted chat's image file is still there: %v", err)
	}
}

// countOf reads the number of tokens the composer's count says.
func countOf(t *testing.T, text string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(strings.ReplaceAll(text, ",", ""), "%d tokens", &n); err != nil {
		t.Fatalf("count %q: %v", text, err)
	}
	return n
}

// writePNG writes a w×h gradient PNG to path.
func writePNG(t *testing.T, path string, w, h int) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}
