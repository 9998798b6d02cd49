package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"bagel/engine"
	"bagel/store"
)

// TestBigFigureSaysWhatItIs: the panel's big figure is "decode, now" while
// a reply streams and "last reply" (its average) once it has ended, and
// live again when the next reply starts.
func TestBigFigureSaysWhatItIs(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.hold()
	h.typeAndSend("Hi")
	h.waitFor("the reply's first words", func() bool { return h.lastView().text() != "" })
	if c := h.a.perf.caption.Text; c != captionLive {
		t.Errorf("while streaming the figure is %q", c)
	}
	h.release()
	h.waitReplyDone()
	if c := h.a.perf.caption.Text; c != captionFinished {
		t.Errorf("after the reply the figure is %q, want %q", c, captionFinished)
	}
	h.hold()
	h.typeAndSend("Again")
	if c := h.a.perf.caption.Text; c != captionLive {
		t.Errorf("as the next reply starts the figure is %q", c)
	}
}

// TestPanelPhaseDoesNotOverlap: a phase of three lines (a remote engine's)
// ends above the rows under it, however the panel laid it out before.
func TestPanelPhaseDoesNotOverlap(t *testing.T) {
	test.NewTempApp(t)
	p := newPerfPanel()
	w := test.NewWindow(p.root)
	defer w.Close()
	w.Resize(fyne.NewSize(400, 700))
	p.showModel("remote: 127.0.0.1:8484", 0, engine.Memory{}, "ready · figures measured at the client, over the network · served by bagel · round trip 3.1 ms · unencrypted (http, a private address)")
	var phaseEnd, below float32
	for _, o := range test.LaidOutObjects(p.root) {
		switch o := o.(type) {
		case *widget.Label:
			if strings.HasPrefix(o.Text, "ready") {
				phaseEnd = fyne.CurrentApp().Driver().AbsolutePositionForObject(o).Y + o.MinSize().Height
			}
		case *widget.Separator:
			below = fyne.CurrentApp().Driver().AbsolutePositionForObject(o).Y
		}
	}
	if phaseEnd == 0 || below < phaseEnd {
		t.Errorf("the phase ends at %g, the rows begin at %g", phaseEnd, below)
	}
}

// TestCopyShowsCopied: a message's Copy (and a reply's Copy code) says
// Copied once the text is on the clipboard.
func TestCopyShowsCopied(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	c, _ := h.a.store.CreateConversation("Code", "")
	h.a.store.Replace(c.ID, 0, store.Message{Role: store.RoleUser, Content: "Show code"},
		store.Message{Role: store.RoleAssistant, Content: "Here:\n\n```go\nx := 1\n```\n", Status: store.StatusDone})
	h.a.reloadConversations()
	h.a.selectConversation(c.ID)
	reply := h.a.msgs[1]
	v := h.a.chat.views[reply.ID]
	test.Tap(v.buttons["Copy"])
	if got := h.a.fyne.Clipboard().Content(); got != reply.Content || v.buttons["Copy"].Text != "Copied" {
		t.Errorf("Copy: clipboard %q, button %q", got, v.buttons["Copy"].Text)
	}
	test.Tap(v.buttons["Copy code"])
	if got := h.a.fyne.Clipboard().Content(); got != "x := 1" || v.buttons["Copy code"].Text != "Copied" {
		t.Errorf("Copy code: clipboard %q, button %q", got, v.buttons["Copy code"].Text)
	}
}
