package ui

import "testing"

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
