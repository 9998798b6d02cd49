package ui

import (
	"context"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"bagel/engine"
	"bagel/hub"
	"bagel/internal/testmodel"
)

// recommendRepo is a fake Hub's model whose name looks like an MLX 4-bit
// conversion of the Qwen3 family.
const recommendRepo = "bagel-test/Qwen3.5-Tiny-4bit"

// TestRecommendFitsTheMachine: a 4-bit model of a type Bagel runs is offered
// when it fits the budget, not when it does not; a model whose name says
// another quantization is not read at all.
func TestRecommendFitsTheMachine(t *testing.T) {
	t.Setenv("HF_ENDPOINT", testmodel.FakeHub(t, "tiny-moe", recommendRepo).URL)
	t.Setenv("HF_TOKEN", "")
	ctx := context.Background()
	roomy := engine.MemoryBudget{Total: 64 << 30, Source: "test memory"}
	got := recommend(ctx, hub.New(), 512, roomy)
	if len(got) != 1 || got[0].repo != recommendRepo || got[0].bytes <= 0 || !strings.Contains(got[0].verdict, "fits") {
		t.Fatalf("recommend with 64 GiB: %+v, want %s that fits", got, recommendRepo)
	}
	if got := recommend(ctx, hub.New(), 512, engine.MemoryBudget{Total: 1 << 10, Source: "test memory"}); len(got) != 0 {
		t.Errorf("recommend with 1 KiB: %+v, want none", got)
	}

	t.Setenv("HF_ENDPOINT", testmodel.FakeHub(t, "tiny-moe", "bagel-test/Qwen3.5-Tiny-8bit").URL)
	if got := recommend(ctx, hub.New(), 512, roomy); len(got) != 0 {
		t.Errorf("an 8-bit model was offered: %+v", got)
	}
}

// TestWelcomeRecommendsAndDownloads: with no model loaded, the welcome offers
// the fake Hub's model that fits; its button downloads it into the Hugging
// Face cache and loads it.
func TestWelcomeRecommendsAndDownloads(t *testing.T) {
	t.Setenv("HF_ENDPOINT", testmodel.FakeHub(t, "tiny-moe", recommendRepo).URL)
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HOME", t.TempDir())
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.a.recommendStarted = false // what Options.Recommend gives the app
	h.a.chat.refreshEmpty()
	h.waitFor("the recommendation", func() bool { return len(h.a.recommended) > 0 })
	var get *widget.Button
	for _, o := range test.LaidOutObjects(h.a.chat.welcome) {
		if b, ok := o.(*widget.Button); ok && strings.Contains(b.Text, recommendRepo) {
			get = b
		}
	}
	if get == nil {
		t.Fatal("the welcome shows no button for the recommended model")
	}
	test.Tap(get)
	h.waitFor("the downloaded model to load", func() bool { return h.a.eng != nil })
	if name := h.a.modelName(); !strings.Contains(name, "Qwen3.5-Tiny-4bit") {
		t.Errorf("loaded %q", name)
	}
}
