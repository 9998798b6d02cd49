package ui

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"bagel/engine"
	"bagel/internal/testmodel"
	"bagel/store"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// TestSendStreamsReply types a message, sends it with Enter, and watches the
// reply stream in, the performance panel move, and the summary appear.
func TestSendStreamsReply(t *testing.T) {
	s := testSettings()
	s.MaxTokens = 40
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	if !h.a.chat.welcome.Visible() {
		t.Error("an empty chat shows no welcome")
	}

	// Shift+Enter adds a line instead of sending.
	entry := h.a.composer.entry
	test.Type(entry, "Tell me about bagels.")
	entry.KeyDown(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	entry.KeyUp(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	if h.a.anyGen() != nil || !strings.Contains(entry.Text, "\n") {
		t.Fatalf("Shift+Enter: sent=%v, composer %q; want a new line", h.a.anyGen() != nil, entry.Text)
	}
	entry.SetText("")

	updatesBefore := h.a.perf.updates
	generatedBefore := h.a.perf.values["Generated"].Text
	h.hold()
	h.typeAndSend("Tell me about bagels.")
	if entry.Text != "" {
		t.Errorf("the composer keeps %q after sending", entry.Text)
	}
	if h.a.composer.send.Text != "Stop" {
		t.Errorf("the send button reads %q while answering, want Stop", h.a.composer.send.Text)
	}
	if len(h.a.msgs) != 2 || h.a.msgs[0].Content != "Tell me about bagels." {
		t.Fatalf("messages on screen: %+v", h.a.msgs)
	}
	if h.a.conv.Title != "Tell me about bagels." {
		t.Errorf("the chat is titled %q, want its first message", h.a.conv.Title)
	}

	// The reply is on screen while it is still being written (held at its
	// first words, so the render tick comes before the end however fast the
	// engine is).
	h.waitFor("streamed text", func() bool {
		return h.a.anyGen() != nil && h.a.anyGen().latest.Content != "" && h.lastView().renderedContent != ""
	})
	h.release()
	reply := h.waitReplyDone()
	if reply.Content == "" || reply.Status != store.StatusLength {
		t.Fatalf("the reply: %+v; want text, status %q (max tokens 40)", reply, store.StatusLength)
	}
	if !strings.Contains(reply.Summary, "40 tokens at") || !strings.Contains(reply.Summary, "speculative off") {
		t.Errorf("the summary %q lacks the panel's numbers", reply.Summary)
	}
	v := h.lastView()
	if !v.footer.Visible() || v.footer.Text != reply.Summary {
		t.Errorf("the summary under the reply reads %q (visible %v)", v.footer.Text, v.footer.Visible())
	}
	if v.buttons["Regenerate"] == nil || v.buttons["Copy"] == nil {
		t.Errorf("the finished reply's actions: %v", v.buttons)
	}
	if h.a.perf.updates < updatesBefore+2 {
		t.Errorf("the performance panel updated %d times during the reply", h.a.perf.updates-updatesBefore)
	}
	if got := h.a.perf.values["Generated"].Text; got == generatedBefore || !strings.HasPrefix(got, "40 tokens") {
		t.Errorf("the panel's Generated row reads %q (before: %q)", got, generatedBefore)
	}
	if got := h.a.perf.values["Backend"].Text; !strings.Contains(got, "cpu") {
		t.Errorf("the panel's Backend row reads %q", got)
	}
	if got := h.a.perf.values["Prompt cache"].Text; !strings.HasPrefix(got, "1 conversation · ") || !strings.Contains(got, " of 1.0 GiB") {
		t.Errorf("the panel's Prompt cache row reads %q after one reply", got)
	}
	// The model bar leads with the reply's speed, where the eye is.
	if got := h.a.bar.detail.Text; !strings.HasPrefix(got, "last reply ") || !strings.Contains(got, " tok/s, first token ") || !strings.Contains(got, "context") {
		t.Errorf("the model bar reads %q after the reply", got)
	}
	if h.a.composer.send.Text != "Send" {
		t.Errorf("the send button reads %q after the reply", h.a.composer.send.Text)
	}

	// Copy puts the reply's text on the clipboard.
	test.Tap(v.buttons["Copy"])
	if got := h.a.fyne.Clipboard().Content(); got != displayText(reply) {
		t.Errorf("clipboard %q, want the reply", got)
	}
}

// TestStopMidReply stops a long reply with Esc and with the Stop button; what
// was written stays, marked stopped, on screen and in the database.
func TestStopMidReply(t *testing.T) {
	s := testSettings()
	s.MaxTokens = 0 // until stopped (the 512-token context would take a while)
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.hold() // every reply waits at its first words until it is stopped

	for _, how := range []string{"Esc", "Stop button"} {
		h.typeAndSend("Count to a thousand.")
		h.waitFor("the first words", func() bool { return h.a.anyGen() != nil && h.a.anyGen().latest.Content != "" })
		if how == "Esc" {
			h.a.composer.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
		} else {
			test.Tap(h.a.composer.send)
		}
		reply := h.waitReplyDone()
		if reply.Status != store.StatusStopped || reply.Content == "" {
			t.Fatalf("%s: the stopped reply is %+v; want its text, status %q", how, reply, store.StatusStopped)
		}
		if v := h.lastView(); !strings.Contains(v.status.Text, "stopped") {
			t.Errorf("%s: the reply is marked %q on screen", how, v.status.Text)
		}
	}
	if h.a.eng == nil {
		t.Fatal("stopping unloaded the model")
	}
}

// TestEnterInAnotherChatWhileOneStreams: Enter in a second chat while the
// first one's reply streams keeps the text, sends nothing, and the hint, a
// warning now, names the chat being answered.
func TestEnterInAnotherChatWhileOneStreams(t *testing.T) {
	s := testSettings()
	s.MaxTokens = 0
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.hold()
	h.typeAndSend("Count to a thousand.")
	first := h.a.conv.ID
	h.waitFor("the first words", func() bool { return h.a.anyGen() != nil && h.a.anyGen().latest.Content != "" })

	h.a.newConversation()
	if h.a.conv == nil || h.a.conv.ID == first {
		t.Fatal("New chat did not open a second chat")
	}
	entry := h.a.composer.entry
	test.Type(entry, "And bagels?")
	entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	hint := h.a.composer.hint
	if entry.Text != "And bagels?" || len(h.a.msgs) != 0 {
		t.Errorf("Enter while another chat streams: composer %q, %d messages; want the text kept, none sent", entry.Text, len(h.a.msgs))
	}
	if !strings.Contains(hint.Text, "“Count to a thousand.”") || hint.Importance != widget.WarningImportance {
		t.Errorf("the hint reads %q (importance %v); want a warning naming the chat being answered", hint.Text, hint.Importance)
	}

	h.a.stop()
	h.waitFor("the stop", func() bool { return h.a.anyGen() == nil })
	if hint.Importance != widget.LowImportance || strings.Contains(hint.Text, "being written") {
		t.Errorf("after the stop the hint reads %q (importance %v)", hint.Text, hint.Importance)
	}
	entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if h.a.anyGen() == nil || len(h.a.msgs) != 2 || h.a.msgs[0].Content != "And bagels?" {
		t.Fatalf("Enter after the stop did not send the kept text: %d messages", len(h.a.msgs))
	}
	h.a.stop()
	h.waitReplyDone()
}

// TestUnusedNewChatIsDropped: a new chat left without a message does not stay
// in the list; a chat with messages does.
func TestUnusedNewChatIsDropped(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.typeAndSend("Hello.")
	h.waitReplyDone()
	used := h.a.conv.ID
	h.a.newConversation()
	if len(h.a.convs) != 2 {
		t.Fatalf("%d chats after New chat, want 2", len(h.a.convs))
	}
	h.a.chats.list.Select(slices.IndexFunc(h.a.convs, func(c store.Conversation) bool { return c.ID == used })) // a tap on it
	if len(h.a.convs) != 1 || h.a.convs[0].ID != used || h.a.conv.ID != used || len(h.a.msgs) != 2 {
		t.Errorf("after leaving the unused chat: %d chats, on screen %d with %d messages; want only the used one", len(h.a.convs), h.a.conv.ID, len(h.a.msgs))
	}
	h.a.newConversation()
	h.typeAndSend("Again.")
	h.waitReplyDone()
	h.a.selectConversation(used)
	if len(h.a.convs) != 2 {
		t.Errorf("%d chats after leaving a used one, want 2", len(h.a.convs))
	}
}

// TestDraftsPerChat: each chat keeps its own composer draft across switches,
// a chat with a draft is not dropped as unused, and Edit puts the draft aside
// and gives it back when the edit is cancelled or sent.
func TestDraftsPerChat(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	entry := h.a.composer.entry
	h.typeAndSend("Hello.")
	h.waitReplyDone()
	a := h.a.conv.ID
	entry.SetText("draft A")
	h.a.newConversation()
	b := h.a.conv.ID
	if entry.Text != "" {
		t.Errorf("a new chat's composer holds %q", entry.Text)
	}
	entry.SetText("draft B")
	for _, c := range []struct {
		id    int64
		draft string
	}{{a, "draft A"}, {b, "draft B"}, {a, "draft A"}} {
		h.a.selectConversation(c.id)
		if entry.Text != c.draft {
			t.Errorf("chat %d's composer holds %q, want %q", c.id, entry.Text, c.draft)
		}
	}
	if len(h.a.convs) != 2 {
		t.Errorf("%d chats; the one with only a draft was dropped", len(h.a.convs))
	}

	h.a.editLast()
	if entry.Text != "Hello." {
		t.Fatalf("Edit put %q in the composer", entry.Text)
	}
	h.a.cancelEdit()
	if entry.Text != "draft A" {
		t.Errorf("after cancelling the edit the composer holds %q, want the draft back", entry.Text)
	}
	h.a.editLast()
	entry.SetText("Hello again.")
	entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if h.a.anyGen() == nil || entry.Text != "draft A" {
		t.Errorf("after sending the edit: reply started %v, composer %q; want the draft back", h.a.anyGen() != nil, entry.Text)
	}
	if msg := h.waitReplyDone(); len(h.a.msgs) != 2 || h.a.msgs[0].Content != "Hello again." || msg.Content == "" {
		t.Errorf("the edited chat: %d messages, first %q", len(h.a.msgs), h.a.msgs[0].Content)
	}
}

// TestFinishedReplyKeepsAReaderWhoScrolledUp: when a reply finishes, a
// reader who scrolled up to read earlier turns stays there; one at the bottom
// still sees the end.
func TestFinishedReplyKeepsAReaderWhoScrolledUp(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.a.win.Resize(fyne.NewSize(900, 420))
	c := h.a.chat
	for range 3 {
		h.typeAndSend("Tell me a long story about bagels.")
		h.waitReplyDone()
	}
	if !c.atBottom() {
		t.Error("after a reply a reader at the bottom is not at the bottom")
	}
	h.hold()
	h.typeAndSend("And another one.")
	h.waitFor("the first words", func() bool { return h.a.anyGen() != nil && h.a.anyGen().latest.Content != "" })
	if c.box.MinSize().Height < c.scroll.Size().Height+4*theme.TextSize() {
		t.Fatalf("the chat (%v high) does not overflow its view (%v): the test cannot scroll", c.box.MinSize().Height, c.scroll.Size().Height)
	}
	c.scroll.ScrollToTop()
	h.release()
	h.waitReplyDone()
	if c.scroll.Offset.Y != 0 {
		t.Errorf("the finished reply moved a reader at the top to %v", c.scroll.Offset.Y)
	}
}

// TestRegenerate replaces the last reply and keeps the question; the old reply
// stays as version 1 of 2, which the reply's ‹ › switch shows again.
func TestRegenerate(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.typeAndSend("Name a bagel topping.")
	first := h.waitReplyDone()

	test.Tap(h.lastView().buttons["Regenerate"])
	if h.a.anyGen() == nil {
		t.Fatal("Regenerate started no reply")
	}
	second := h.waitReplyDone()
	msgs, _ := h.a.store.Messages(h.a.conv.ID)
	if len(msgs) != 2 || msgs[0].Content != "Name a bagel topping." || second.ID == first.ID || second.Content == "" {
		t.Fatalf("after regenerate: %+v", msgs)
	}
	if len(h.a.msgs) != 2 || h.a.msgs[1].ID != second.ID {
		t.Errorf("the screen shows %+v", h.a.msgs)
	}

	v := h.lastView()
	back, forward := v.buttons["‹ 2/2"], v.buttons["›"]
	if back == nil || forward == nil || back.Disabled() || !forward.Disabled() {
		t.Fatalf("version switch of the second reply: %v", v.buttons)
	}
	test.Tap(back)
	if len(h.a.msgs) != 2 || h.a.msgs[1].ID != first.ID || h.lastView().buttons["‹ 1/2"] == nil {
		t.Fatalf("after ‹ the screen shows %+v", h.a.msgs)
	}
	if msgs, _ := h.a.store.Messages(h.a.conv.ID); msgs[1].ID != first.ID {
		t.Error("the choice of version was not saved")
	}
	test.Tap(h.lastView().buttons["›"])
	if h.a.msgs[1].ID != second.ID {
		t.Error("› did not show the second version again")
	}
}

// TestEditLast moves the last question into the composer, and resending it
// replaces the question and its reply; Esc cancels an edit.
func TestEditLast(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.typeAndSend("What is a bialy?")
	h.waitReplyDone()
	userView := h.a.chat.views[h.a.msgs[0].ID]

	test.Tap(userView.buttons["Edit"])
	if h.a.composer.entry.Text != "What is a bialy?" || !h.a.composer.banner.Visible() || len(h.a.chat.box.Objects) != 0 {
		t.Fatalf("editing: composer %q, banner %v, %d messages shown", h.a.composer.entry.Text, h.a.composer.banner.Visible(), len(h.a.chat.box.Objects))
	}
	h.a.composer.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	if h.a.editing != nil || len(h.a.chat.box.Objects) != 2 {
		t.Fatalf("Esc did not cancel the edit (%d messages shown)", len(h.a.chat.box.Objects))
	}

	test.Tap(h.a.chat.views[h.a.msgs[0].ID].buttons["Edit"])
	h.a.composer.entry.SetText("")
	h.typeAndSend("What is a bialy, really?")
	h.waitReplyDone()
	msgs, _ := h.a.store.Messages(h.a.conv.ID)
	if len(msgs) != 2 || msgs[0].Content != "What is a bialy, really?" || msgs[1].Content == "" {
		t.Fatalf("after the edit: %+v", msgs)
	}
}

// TestEditEarlier: an earlier question has Edit too; the banner says what
// Send does; sending shows the new question and its reply, and the question's
// ‹ › switch brings back the old one with the messages that followed it.
func TestEditEarlier(t *testing.T) {
	s := testSettings()
	s.MaxTokens = 4
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.typeAndSend("First question")
	h.waitReplyDone()
	h.typeAndSend("Second question")
	h.waitReplyDone()

	test.Tap(h.a.chat.views[h.a.msgs[0].ID].buttons["Edit"])
	if got := h.a.composer.editingNote.Text; !strings.Contains(got, "new version") || !strings.Contains(got, "the 3 messages after it") {
		t.Errorf("banner %q", got)
	}
	h.a.composer.entry.SetText("")
	h.typeAndSend("A better first question")
	h.waitReplyDone()
	msgs, _ := h.a.store.Messages(h.a.conv.ID)
	if len(msgs) != 2 || msgs[0].Content != "A better first question" {
		t.Fatalf("after editing the first question: %+v", msgs)
	}
	back := h.a.chat.views[h.a.msgs[0].ID].buttons["‹ 2/2"]
	if back == nil {
		t.Fatal("the edited question has no ‹ 2/2 switch")
	}
	test.Tap(back)
	var shown []string
	for _, m := range h.a.msgs {
		shown = append(shown, m.Content)
	}
	if len(shown) != 4 || shown[0] != "First question" || shown[2] != "Second question" {
		t.Fatalf("the old branch shows %q", shown)
	}
}

// TestSwitchConversations answers in one chat while another is on screen, and
// shows each chat's own messages.
func TestSwitchConversations(t *testing.T) {
	s := testSettings()
	s.MaxTokens = 30
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.typeAndSend("First chat")
	h.waitReplyDone()
	first := h.a.conv.ID

	test.Tap(h.a.chats.newChat)
	if h.a.conv == nil || h.a.conv.ID == first || len(h.a.chat.box.Objects) != 0 {
		t.Fatal("New chat did not open an empty chat")
	}
	h.typeAndSend("Second chat")
	second := h.a.conv.ID

	// Back to the first chat while the second is answered.
	h.a.chats.list.Select(indexOf(t, h.a.convs, first))
	if h.a.conv.ID != first || len(h.a.msgs) != 2 || h.a.msgs[0].Content != "First chat" {
		t.Fatalf("the first chat shows %+v", h.a.msgs)
	}
	h.waitFor("the second reply", func() bool { return h.a.anyGen() == nil })
	if h.a.conv.ID != first {
		t.Fatal("the finished reply switched the chat on screen")
	}
	h.a.chats.list.Select(indexOf(t, h.a.convs, second))
	if len(h.a.msgs) != 2 || h.a.msgs[0].Content != "Second chat" || h.a.msgs[1].Content == "" || h.a.msgs[1].Status == store.StatusGenerating {
		t.Fatalf("the second chat shows %+v", h.a.msgs)
	}
	if got := []string{h.a.convs[0].Title, h.a.convs[1].Title}; got[0] != "Second chat" || got[1] != "First chat" {
		t.Errorf("the chat list reads %q, want the latest first", got)
	}
}

func indexOf(t *testing.T, convs []store.Conversation, id int64) int {
	t.Helper()
	for i, c := range convs {
		if c.ID == id {
			return i
		}
	}
	t.Fatalf("chat %d is not in the list", id)
	return -1
}

// TestDropNotAModel drops folders that are not models: each shows a dialog
// naming the problem and the loaded model stays.
func TestDropNotAModel(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	dir := h.loadModel("tiny-moe")
	eng := h.a.eng

	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "config.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, drop := range []string{empty, filepath.Join(broken, "config.json")} {
		h.a.dropped([]fyne.URI{storage.NewFileURI(drop)})
		h.waitFor("the check", func() bool { return !h.a.loading })
		text := h.dialogText()
		if !strings.Contains(text, "cannot be loaded") || !strings.Contains(text, "config.json") {
			t.Errorf("dropping %s: dialog %q; want one naming config.json", drop, text)
		}
		if h.a.eng != eng || h.a.modelDir != dir {
			t.Fatalf("dropping %s replaced the loaded model", drop)
		}
		h.a.win.Canvas().Overlays().Top().Hide()
		h.a.win.Canvas().Overlays().Remove(h.a.win.Canvas().Overlays().Top())
	}
	// A document is refused by name, without a load.
	h.a.dropped([]fyne.URI{storage.NewFileURI(filepath.Join(empty, "notes.txt"))})
	if text := h.dialogText(); !strings.Contains(text, "notes.txt is a file") || h.a.loading {
		t.Errorf("dropping a document: dialog %q, loading %v", text, h.a.loading)
	}
	h.a.win.Canvas().Overlays().Top().Hide()
	h.a.win.Canvas().Overlays().Remove(h.a.win.Canvas().Overlays().Top())
	// The model still answers.
	h.typeAndSend("Still there?")
	if reply := h.waitReplyDone(); reply.Content == "" {
		t.Fatal("no reply after the failed drops")
	}
}

// TestSwitchModelMidReply loads another model while a reply streams: the reply
// is stopped and saved, and the new model answers the next message.
func TestSwitchModelMidReply(t *testing.T) {
	s := testSettings()
	s.MaxTokens = 0
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.hold() // the replies wait at their first words until the app stops them
	h.typeAndSend("A long story, please.")
	h.waitFor("the first words", func() bool { return h.a.anyGen() != nil && h.a.anyGen().latest.Content != "" })
	conv := h.a.conv.ID

	dense := h.loadModel("tiny-dense")
	if h.a.anyGen() != nil || filepath.Base(dense) != h.a.modelName() {
		t.Fatalf("after the switch: generation %v, model %q", h.a.anyGen() != nil, h.a.modelName())
	}
	msgs, _ := h.a.store.Messages(conv)
	if len(msgs) != 2 || msgs[1].Status != store.StatusStopped || msgs[1].Content == "" {
		t.Fatalf("the interrupted reply: %+v", msgs)
	}

	// Unload in the middle of the next reply; the app then waits for a model.
	h.a.settings.MaxTokens = 0
	h.typeAndSend("And another.")
	h.waitFor("the first words", func() bool { return h.a.anyGen() != nil && h.a.anyGen().latest.Content != "" })
	test.Tap(h.a.bar.unload)
	h.waitFor("the reply to stop", func() bool { return h.a.anyGen() == nil })
	if h.a.eng != nil || h.a.composer.send.Disabled() == false {
		t.Fatalf("after unloading: engine %v, send enabled %v", h.a.eng != nil, !h.a.composer.send.Disabled())
	}
	if msgs, _ := h.a.store.Messages(conv); msgs[len(msgs)-1].Status != store.StatusStopped {
		t.Fatalf("the reply cut by the unload: %+v", msgs[len(msgs)-1])
	}
}

// TestInterruptedReplyShown opens a database holding a reply a crash cut off:
// it is shown with its text, marked interrupted.
func TestInterruptedReplyShown(t *testing.T) {
	data := t.TempDir()
	st, err := store.Open(filepath.Join(data, "chats.db"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := st.CreateConversation("crashed", "")
	if _, err := st.Replace(c.ID, 0, store.Message{Role: store.RoleUser, Content: "hi"},
		store.Message{Role: store.RoleAssistant, Content: "half an answ", Status: store.StatusGenerating}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	h := newHarness(t, nil, "", data)
	if h.a.conv == nil || h.a.conv.ID != c.ID || len(h.a.msgs) != 2 {
		t.Fatalf("the last chat is not on screen at start: %+v", h.a.msgs)
	}
	v := h.lastView()
	if !strings.Contains(v.status.Text, "interrupted") || v.renderedContent != "half an answ" {
		t.Fatalf("the cut reply shows %q marked %q", v.renderedContent, v.status.Text)
	}
}

// TestRenameAndDelete renames a chat, then deletes it while it is being
// answered: the reply stops, the chat goes, and the next one is shown.
func TestRenameAndDelete(t *testing.T) {
	s := testSettings()
	s.MaxTokens = 0
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.typeAndSend("Keep me")
	h.a.stop()
	h.waitReplyDone()
	keep := h.a.conv.ID

	test.Tap(h.a.chats.newChat)
	h.hold() // the reply waits at its first words until the deletion stops it
	h.typeAndSend("Delete me")
	doomed := h.a.conv.ID
	h.a.setTitle(doomed, "Doomed chat")
	if h.a.chat.title.Text != "Doomed chat" || h.a.convs[0].Title != "Doomed chat" {
		t.Fatalf("after renaming: header %q, list %q", h.a.chat.title.Text, h.a.convs[0].Title)
	}
	h.waitFor("the first words", func() bool { return h.a.anyGen() != nil && h.a.anyGen().latest.Content != "" })
	h.a.removeConversation(doomed)
	h.waitFor("the chat to go", func() bool { return h.a.anyGen() == nil && len(h.a.convs) == 1 })
	if h.a.conv == nil || h.a.conv.ID != keep || h.a.convs[0].ID != keep {
		t.Fatalf("after deleting: showing %+v, list %+v", h.a.conv, h.a.convs)
	}
	if msgs, _ := h.a.store.Messages(doomed); len(msgs) != 0 {
		t.Fatalf("the deleted chat's messages remain: %+v", msgs)
	}
	if text := h.dialogText(); text != "" {
		t.Errorf("deleting a chat mid-reply showed %q", text)
	}
}

// TestSlowScreenDoesNotQueueRenders: while the UI thread is busy (here: not
// pumped at all), a streaming reply leaves at most one render and one panel
// update waiting, not one per tick, so the screen catches up at once; the
// final update still shows the whole reply.
func TestSlowScreenDoesNotQueueRenders(t *testing.T) {
	s := testSettings()
	s.MaxTokens = 64
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.typeAndSend("Tell me about bagels.")
	g := h.a.anyGen()
	if g == nil {
		t.Fatal("no reply started")
	}
	<-g.done // the whole reply streamed with the UI thread stalled
	h.mu.Lock()
	queued := len(h.queue)
	h.mu.Unlock()
	// One render, one panel update, the final post: anything more is a backlog.
	if queued > 3 {
		t.Errorf("%d updates queued for a stalled screen, want at most 3", queued)
	}
	h.waitFor("the reply to finish", func() bool { return h.a.anyGen() == nil })
	if last := h.a.msgs[len(h.a.msgs)-1]; last.Status == store.StatusGenerating || last.Content == "" {
		t.Errorf("final reply %+v", last)
	}
}

// TestCancelACheck: Cancel while a folder is being checked gives up on it at
// once; its answer, when it comes, changes nothing.
func TestCancelACheck(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.pump()
	// The check holds in its memory look-up (after reading the folder) until
	// the test lets it answer: it is surely in flight when Cancel is tapped.
	// The budget it then gets (unknown) would let the model load at once.
	checking, answer := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.a.memoryBudget = func(string) engine.MemoryBudget {
		once.Do(func() { close(checking) })
		<-answer
		return engine.MemoryBudget{}
	}
	posted := make(chan struct{}, 1) // something was posted to the UI thread
	h.a.do = func(f func()) {
		h.post(f)
		select {
		case posted <- struct{}{}:
		default:
		}
	}
	h.a.openModel(testmodel.Dir(t, "tiny-moe"))
	if !h.a.loading || !h.a.bar.cancel.Visible() {
		t.Fatal("no Cancel while checking")
	}
	await := func(what string, c <-chan struct{}) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(90 * time.Second): // turns a hang into a failure; measures nothing
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	await("the check to start", checking)
	test.Tap(h.a.bar.cancel)
	if h.a.loading || h.a.bar.cancel.Visible() {
		t.Fatal("still checking after Cancel")
	}
	select { // forget posts so far: the check, held, has posted nothing yet
	case <-posted:
	default:
	}
	close(answer)
	await("the cancelled check to post its answer", posted)
	h.pump()
	if h.a.eng != nil || h.a.loading || h.dialogText() != "" {
		t.Errorf("a cancelled check went on: model %v, loading %v, dialog %q", h.a.eng != nil, h.a.loading, h.dialogText())
	}
}

// TestDropAnImage: an image dropped on a model without a vision tower is
// refused by name with why, and nothing is attached; the loaded model stays.
func TestDropAnImage(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	dir := h.loadModel("tiny-moe")
	photo := filepath.Join(t.TempDir(), "Screenshot 2026-12-04.png")
	if err := os.WriteFile(photo, []byte("\x89PNG\r\n\x1a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.a.dropped([]fyne.URI{storage.NewFileURI(photo)})
	text := h.dialogText()
	for _, want := range []string{"The image cannot go into this chat", "Screenshot 2026-12-04.png", "cannot read images", "no vision tower"} {
		if !strings.Contains(text, want) {
			t.Errorf("the dialog does not say %q:\n%s", want, text)
		}
	}
	if h.a.modelDir != dir || h.a.loading || len(h.a.composer.attached) != 0 {
		t.Error("dropping an image touched the loaded model, or was attached")
	}
}

// TestTwoChatsAnswerTogether: with Replies at once at 2, a question in a
// second chat starts its reply while the first chat's still streams; both
// end complete, each the reply it gets alone (the engine's batch equals its
// solo replies), and each chat shows its own; Stop in one chat ends only its
// reply.
func TestTwoChatsAnswerTogether(t *testing.T) {
	solo := func(question string) string {
		s := testSettings()
		h := newHarness(t, &s, "", "")
		h.loadModel("tiny-moe")
		h.typeAndSend(question)
		return h.waitReplyDone().Content
	}
	wantA, wantB := solo("Count to ten."), solo("And bagels?")

	s := testSettings()
	s.ChatParallel = 2
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	if h.a.batch == nil {
		t.Fatal("Replies at once 2 made no batch")
	}
	h.hold()
	h.typeAndSend("Count to ten.")
	first := h.a.conv.ID
	h.waitFor("the first words", func() bool { g := h.a.gens[first]; return g != nil && g.latest.Content != "" })
	h.a.newConversation()
	h.typeAndSend("And bagels?")
	second := h.a.conv.ID
	if h.a.gens[second] == nil || len(h.a.gens) != 2 {
		t.Fatalf("the second chat's reply did not start beside the first (%d replies)", len(h.a.gens))
	}
	if note := h.a.othersAnswering(); !strings.Contains(note, "2 chats answering") {
		t.Errorf("the panel's note with two replies: %q", note)
	}
	h.release()
	h.waitFor("both replies", func() bool { return len(h.a.gens) == 0 })
	for _, c := range []struct {
		conv int64
		want string
	}{{first, wantA}, {second, wantB}} {
		msgs, err := h.a.store.Messages(c.conv)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("chat %d: %d messages, %v", c.conv, len(msgs), err)
		}
		if got := msgs[1]; got.Content != c.want || got.Status == store.StatusError {
			t.Errorf("chat %d's reply %q (%s, %s); alone it is %q", c.conv, got.Content, got.Status, got.Summary, c.want)
		}
	}

	// Stop in the second chat ends its reply only.
	h.hold()
	h.typeAndSend("More?")
	h.waitFor("its first words", func() bool { g := h.a.gens[second]; return g != nil && g.latest.Content != "" })
	h.a.selectConversation(first)
	h.typeAndSend("Go on.")
	h.a.selectConversation(second)
	h.a.stop()
	h.release()
	h.waitFor("both replies", func() bool { return len(h.a.gens) == 0 })
	for conv, want := range map[int64]string{first: store.StatusLength, second: store.StatusStopped} {
		msgs, _ := h.a.store.Messages(conv)
		if got := msgs[len(msgs)-1].Status; got != want {
			t.Errorf("chat %d's last reply is %s, want %s", conv, got, want)
		}
	}
}
