package ui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"

	"bagel/internal/testmodel"
	"bagel/synth"
)

// visionModelDir writes a small model with a vision tower that the test
// tokenizer (Qwen3's, which has Qwen2-VL's image tokens) and the Qwen3.5
// chat template can talk to: its vocabulary is the tokenizer's and its image
// tokens the tokenizer's ids.
func visionModelDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	shape := synth.Shape{ModelType: "qwen3_5", Hidden: 64, Layers: 2, Interval: 2, Heads: 2, KVHeads: 1, HeadDim: 32,
		Hk: 2, Hv: 2, Dk: 32, Dv: 32, ConvKernel: 4, Intermediate: 128, Vocab: 151936, Tied: true, RopeTheta: 1e6,
		PartialRotary: 0.25, Vision: &synth.VisionShape{Depth: 1, Hidden: 64, Intermediate: 128, Heads: 4,
			Patch: 16, Temporal: 2, Merge: 2, Positions: 64}}
	if err := synth.Write(dir, synth.Options{Shape: shape, Quant: synth.Quant{Bits: 4, GroupSize: 32}, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	data, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	json.Unmarshal(data, &cfg)
	cfg["image_token_id"], cfg["vision_start_token_id"], cfg["vision_end_token_id"] = 151655, 151652, 151653
	cfg["eos_token_id"] = 151645 // <|im_end|>
	data, _ = json.Marshal(cfg)
	pre, _ := json.Marshal(map[string]any{"patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
		"size": map[string]int{"shortest_edge": 2048, "longest_edge": 9216}})
	tmpl, err := os.ReadFile(filepath.Join("..", "tokenizer", "templates", "qwen35.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"config.json": data, "preprocessor_config.json": pre, "chat_template.jinja": tmpl} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testmodel.Tokenizer(t, dir)
	return dir
}

// TestImagesInAChat: an image dropped on a model with a vision tower waits
// in the composer (a broken one is refused by name, nothing attached); Enter
// sends it with the question: the message keeps it (its file in the store's
// image folder), shows it, and the model's reply comes; the next turn sends
// it again with the history; deleting the chat removes its file.
func TestImagesInAChat(t *testing.T) {
	s := testSettings()
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
