package ui

import (
	"strings"
	"testing"

	"bagel/internal/testmodel"
)

// TestShortcutsAsThePlatformWritesThem: ⌘ on a Mac, Ctrl elsewhere, never
// the "Ctrl/Cmd" of the source text.
func TestShortcutsAsThePlatformWritesThem(t *testing.T) {
	mac, linux := shortcutsFor("darwin"), shortcutsFor("linux")
	if strings.Contains(mac, "Ctrl") || !strings.Contains(mac, "⌘N — new chat") || !strings.Contains(mac, "⇧⌘R") {
		t.Errorf("on a Mac:\n%s", mac)
	}
	if strings.Contains(linux, "Cmd") || strings.Contains(linux, "⌘") || !strings.Contains(linux, "Ctrl+N — new chat") {
		t.Errorf("elsewhere:\n%s", linux)
	}
}

// TestComposerHasTheFocusOnceLoaded: the model loaded, the composer takes
// the keyboard, so the first question is typed at once.
func TestComposerHasTheFocusOnceLoaded(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	if h.a.win.Canvas().Focused() != h.a.composer.entry {
		t.Errorf("focused: %T", h.a.win.Canvas().Focused())
	}
}

// TestOpensTheModelItWasGiven: bagel PATH opens the window on PATH, not on
// the last model used.
func TestOpensTheModelItWasGiven(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	last := h.loadModel("tiny-moe")
	if h.a.settings.LastModel != last {
		t.Fatalf("last model %q", h.a.settings.LastModel)
	}
	given := testmodel.Dir(t, "tiny-dense")
	h.a.unloadModel()
	h.a.settings.LastModel = last
	h.a.openAtStart = given
	h.a.Start()
	h.waitFor("the model given", func() bool { return !h.a.loading && h.a.eng != nil })
	if h.a.modelDir != given {
		t.Errorf("opened %q, want the folder given %q", h.a.modelDir, given)
	}
}
