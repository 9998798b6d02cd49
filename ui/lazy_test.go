package ui

import (
	"testing"

	"fyne.io/fyne/v2"
)

// TestLongChatRendersWhatIsNear: a chat of twenty long replies opens at its
// end with only its last messages rendered, the others placeholders of
// about their height; scrolling to the top renders the first ones (the
// reader's place kept), and a message asked for by id (Select, a copy's
// feedback) is rendered on the spot.
func TestLongChatRendersWhatIsNear(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.a.win.Resize(fyne.NewSize(1100, 800))
	conv, added := longChat(t, h, 20, longChatText)
	h.a.reloadConversations()
	h.a.selectConversation(conv.ID)
	h.pump()
	c := h.a.chat
	last := added[len(added)-1].ID
	if _, ok := c.views[last]; !ok || len(c.lazy) < 30 || len(c.views)+len(c.lazy) != 40 {
		t.Fatalf("opened with %d views and %d waiting (last rendered: %v); want the end rendered, most waiting", len(c.views), len(c.lazy), ok)
	}
	c.scroll.ScrollToBottom() // (the test driver lays the scroll out after show's own)
	c.materializeNear()
	if _, waiting := c.lazy[added[0].ID]; !waiting || len(c.lazy) < 30 {
		t.Errorf("at the end, %d messages wait, the first among them %v: reading the end rendered the top", len(c.lazy), waiting)
	}
	c.scroll.ScrollToOffset(fyne.NewPos(0, 0))
	c.materializeNear()
	h.pump()
	if _, ok := c.views[added[0].ID]; !ok {
		t.Errorf("at the top, the first message is still waiting (%d waiting)", len(c.lazy))
	}
	middle := added[20].ID
	if _, waiting := c.lazy[middle]; !waiting {
		t.Fatalf("message 20 is not waiting: the test needs one that is")
	}
	if v := c.view(middle); v == nil || c.lazy[middle] != nil {
		t.Errorf("asked for by id, message 20 was not rendered")
	}
}
