package ui

import (
	"strings"
	"testing"
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
