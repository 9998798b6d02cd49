package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"bagel/engine"
	"bagel/store"

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

// TestLongModelNameKeepsTheWindowNarrow: the top bar's model name gives way
// with an ellipsis in the middle (its size and quantization, at the end,
// stay) instead of widening the window.
func TestLongModelNameKeepsTheWindowNarrow(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	short := h.a.bar.root.MinSize().Width
	h.a.modelDir = "/x/models--mlx-community--Qwen3.5-122B-A10B-Instruct-4bit-DWQ/snapshots/abc"
	h.a.bar.refresh()
	if long := h.a.bar.root.MinSize().Width; long > short {
		t.Errorf("the bar's minimum width grew from %g to %g with a long name", short, long)
	}
	name := h.a.bar.name
	name.Resize(fyne.NewSize(name.measure("mlx-community/Qwen3.5-122B")+1, 30))
	name.fit(name.Size().Width)
	if shown := name.label.Text; !strings.Contains(shown, "…") || !strings.HasSuffix(shown, "DWQ") || !strings.HasPrefix(shown, "mlx-") {
		t.Errorf("cut to %q, want its start, an ellipsis and its end", shown)
	}
}

// TestDraftTokenCount: beside the composer, what the chat and the draft take
// of the context — the model's own count of the prompt — and what is left.
func TestDraftTokenCount(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	test.Type(h.a.composer.entry, "How long is this question?")
	ids, err := h.a.eng.PromptTokens(engine.Request{Messages: []engine.Message{{Role: "user", Content: "How long is this question?"}}, EnableThinking: s.Thinking})
	if err != nil {
		t.Fatal(err)
	}
	want := tokenCountText(len(ids), h.a.eng.ContextLength())
	h.waitFor("the count", func() bool { return h.a.composer.tokens.Text == want })
	if !strings.HasSuffix(want, " left") {
		t.Errorf("the count reads %q", want)
	}
	if got := tokenCountText(600, 512); !strings.Contains(got, "over the 512-token context") {
		t.Errorf("over the context: %q", got)
	}
}

// TestChatSearch: the chat list's search keeps the chats whose title or
// text holds the words; clearing it brings every chat back; a new chat
// clears it.
func TestChatSearch(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	st := h.a.store
	a, _ := st.CreateConversation("Sourdough", "")
	b, _ := st.CreateConversation("Travel", "")
	st.Replace(b.ID, 0, store.Message{Role: store.RoleUser, Content: "Where to eat bagels in Montreal?"})
	st.CreateConversation("Taxes", "")
	h.a.reloadConversations()
	all := len(h.a.convs)
	test.Type(h.a.chats.search, "bagel")
	if len(h.a.convs) != 1 || h.a.convs[0].ID != b.ID || h.a.chats.list.Length() != 1 {
		t.Errorf("searching bagel: %+v", h.a.convs)
	}
	h.a.chats.search.SetText("sour")
	if len(h.a.convs) != 1 || h.a.convs[0].ID != a.ID {
		t.Errorf("searching sour: %+v", h.a.convs)
	}
	h.a.chats.search.SetText("")
	if len(h.a.convs) != all {
		t.Errorf("cleared: %d chats, want %d", len(h.a.convs), all)
	}
	h.a.chats.search.SetText("travel")
	h.a.newConversation()
	if h.a.chats.search.Text != "" || len(h.a.convs) != all+1 {
		t.Errorf("after New chat: search %q, %d chats", h.a.chats.search.Text, len(h.a.convs))
	}
}

// TestChatRowMenu: right-clicking a chat in the list shows it and opens its
// menu; Duplicate makes a copy with its messages and shows the copy.
func TestChatRowMenu(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	st := h.a.store
	a, _ := st.CreateConversation("Sourdough", "")
	st.Replace(a.ID, 0, store.Message{Role: store.RoleUser, Content: "Starter?"}, store.Message{Role: store.RoleAssistant, Content: "Flour and water."})
	st.CreateConversation("Other", "")
	h.a.reloadConversations()
	h.a.selectConversation(h.a.convs[0].ID) // "Other", the newest
	h.a.win.Resize(fyne.NewSize(1000, 700))
	var row *chatRow
	for _, o := range test.LaidOutObjects(h.a.chats.list) {
		if r, ok := o.(*chatRow); ok && r.id == a.ID {
			row = r
		}
	}
	if row == nil {
		t.Fatal("no row for the chat")
	}
	test.TapSecondary(row)
	if h.a.conv.ID != a.ID || h.a.chats.menu == nil {
		t.Fatalf("after a right click: showing %d, menu %v", h.a.conv.ID, h.a.chats.menu)
	}
	var labels []string
	for _, it := range h.a.chats.menu.Items {
		labels = append(labels, it.Label)
	}
	if got := strings.Join(labels, ","); got != "Pin to top,Rename…,Duplicate,Export as Markdown…,,Delete…" {
		t.Errorf("menu %q", got)
	}
	h.a.chats.menu.Items[2].Action()
	if h.a.conv.Title != "Sourdough (copy)" || len(h.a.msgs) != 2 || h.a.msgs[1].Content != "Flour and water." {
		t.Errorf("after Duplicate: showing %q with %d messages", h.a.conv.Title, len(h.a.msgs))
	}
}

// TestPinChat: Pin to top keeps a chat first in the list, marked, whatever
// changes later; its menu then offers Unpin, which puts it back in order of
// change; the pin survives a restart (the store keeps it).
func TestPinChat(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	st := h.a.store
	old, _ := st.CreateConversation("Old", "")
	st.CreateConversation("Newer", "")
	h.a.reloadConversations()
	h.a.selectConversation(old.ID)
	h.a.pinConversation(true)
	st.CreateConversation("Newest", "")
	h.a.reloadConversations()
	if h.a.convs[0].ID != old.ID || !h.a.convs[0].Pinned {
		t.Fatalf("after pinning: first %q (pinned %v)", h.a.convs[0].Title, h.a.convs[0].Pinned)
	}
	h.a.win.Resize(fyne.NewSize(1000, 700))
	var row *chatRow
	for _, o := range test.LaidOutObjects(h.a.chats.list) {
		if r, ok := o.(*chatRow); ok && r.id == old.ID {
			row = r
		}
	}
	if row == nil || !strings.HasPrefix(row.box.Objects[0].(*widget.Label).Text, "📌") {
		t.Fatal("the pinned chat's row is not marked")
	}
	test.TapSecondary(row)
	if got := h.a.chats.menu.Items[0].Label; got != "Unpin" {
		t.Fatalf("a pinned chat's menu offers %q", got)
	}
	h.a.chats.menu.Items[0].Action()
	if h.a.convs[0].Title != "Newest" {
		t.Errorf("after Unpin: first %q", h.a.convs[0].Title)
	}
	if c, err := st.Conversation(old.ID); err != nil || c.Pinned {
		t.Errorf("unpinned in the store: %+v %v", c, err)
	}
}

// TestSettingsForPeople: a preset fills the sampling fields, Reset to
// defaults every field; Save waits while a field is invalid; Esc in a field
// closes the dialog.
func TestSettingsForPeople(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.a.showSettings()
	f := h.a.settingsForm
	f.preset.SetSelected("Creative")
	if f.temperature.Text != "1" || f.minP.Text != "0.05" || f.topK.Text != "0" {
		t.Errorf("Creative: temperature %q min-p %q top-k %q", f.temperature.Text, f.minP.Text, f.topK.Text)
	}
	test.Tap(f.reset)
	d := DefaultSettings()
	if f.maxTokens.Text != "4096" || f.seed.Text != "random" || f.ctxLen.Text != "0" || f.thinking.Checked != d.Thinking {
		t.Errorf("after Reset: max tokens %q seed %q context %q thinking %v", f.maxTokens.Text, f.seed.Text, f.ctxLen.Text, f.thinking.Checked)
	}
	test.Type(f.topP, "x")
	if !f.save.Disabled() {
		t.Error("Save is enabled with an invalid top-p")
	}
	f.topP.SetText("0.9")
	if f.save.Disabled() {
		t.Error("Save stays disabled once the field is valid again")
	}
	h.a.win.Canvas().Focus(f.topK)
	f.topK.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	if len(h.a.dialogs) != 0 {
		t.Errorf("Esc in a field left %d dialogs open", len(h.a.dialogs))
	}
	if h.a.settings.TopP != s.TopP {
		t.Error("Esc saved the settings")
	}
}

// TestDeleteAsksWithNoAsThePlainChoice: Delete chat asks with its Yes
// marked as danger, and Esc and Enter answer no; Enter answers a plain
// question yes.
func TestDeleteAsksWithNoAsThePlainChoice(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	c, _ := h.a.store.CreateConversation("Keep me", "")
	h.a.store.Replace(c.ID, 0, store.Message{Role: store.RoleUser, Content: "hi"})
	h.a.reloadConversations()
	h.a.selectConversation(c.ID)
	h.a.deleteConversation()
	var yes *widget.Button
	for _, o := range test.LaidOutObjects(h.a.win.Canvas().Overlays().Top()) {
		if b, ok := o.(*widget.Button); ok && b.Text == "Yes" {
			yes = b
		}
	}
	if yes == nil || yes.Importance != widget.DangerImportance {
		t.Fatalf("the confirm button: %+v", yes)
	}
	h.a.win.Canvas().OnTypedKey()(&fyne.KeyEvent{Name: fyne.KeyEscape})
	h.pump()
	if _, err := h.a.store.Conversation(c.ID); err != nil {
		t.Errorf("Esc deleted the chat: %v", err)
	}
	// Enter answers a danger question no, a plain one yes.
	h.a.deleteConversation()
	h.a.win.Canvas().OnTypedKey()(&fyne.KeyEvent{Name: fyne.KeyReturn})
	h.pump()
	if _, err := h.a.store.Conversation(c.ID); err != nil || len(h.a.dialogs) != 0 {
		t.Errorf("Enter on Delete chat: %v, %d dialogs open", err, len(h.a.dialogs))
	}
	yesToPlain := false
	h.a.confirm("Reload?", "Reload the model?", func(ok bool) { yesToPlain = ok })
	h.a.win.Canvas().OnTypedKey()(&fyne.KeyEvent{Name: fyne.KeyReturn})
	h.pump()
	if !yesToPlain || len(h.a.dialogs) != 0 {
		t.Errorf("Enter on a plain question: answered %v, %d dialogs open", yesToPlain, len(h.a.dialogs))
	}
}
