package ui

import (
	"runtime"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
)

// TestEscClosesDialogs: Esc closes the dialog on top as its Cancel would: the
// chat is not deleted, the settings are not saved, the Models dialog closes;
// with no dialog open, Esc goes on stopping replies.
func TestEscClosesDialogs(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	esc := func() { h.a.win.Canvas().OnTypedKey()(&fyne.KeyEvent{Name: fyne.KeyEscape}) }
	h.a.newConversation()
	h.loadModel("tiny-moe")
	h.typeAndSend("Hello")
	h.waitReplyDone()
	id := h.a.conv.ID

	h.a.deleteConversation()
	h.a.showSettings() // a second dialog on top of the first
	if len(h.a.dialogs) != 2 {
		t.Fatalf("%d dialogs tracked, want 2", len(h.a.dialogs))
	}
	h.a.settingsForm.topK.SetText("3")
	esc()
	if len(h.a.dialogs) != 1 || h.a.settings.TopK == 3 {
		t.Errorf("after Esc: %d dialogs, top-k %d: want the settings closed unsaved", len(h.a.dialogs), h.a.settings.TopK)
	}
	esc()
	if len(h.a.dialogs) != 0 {
		t.Errorf("%d dialogs after a second Esc", len(h.a.dialogs))
	}
	if h.a.conv == nil || h.a.conv.ID != id {
		t.Error("Esc on the delete question deleted the chat")
	}

	h.a.showLibrary()
	esc()
	if len(h.a.dialogs) != 0 || !h.a.lib.closed {
		t.Error("Esc left the Models dialog open")
	}
	esc() // nothing open: harmless
}

// TestDraftsOutliveTheApp: what the composer holds is saved as the chat's
// draft once typing pauses (a crash loses at most that) and on quitting; the
// next app shows it in that chat's composer.
func TestDraftsOutliveTheApp(t *testing.T) {
	s := testSettings()
	s.MaxTokens = 4
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.typeAndSend("Hello")
	h.waitReplyDone()
	id := h.a.conv.ID
	h.a.composer.entry.SetText("a thought not sent yet")
	h.waitFor("the draft to be saved", func() bool {
		d, _ := h.a.store.Drafts()
		return d[id] == "a thought not sent yet"
	})
	h.a.composer.entry.SetText("a thought not sent yet, longer")
	h.close() // quitting saves at once

	again := newHarness(t, nil, h.configDir, h.dataDir)
	if again.a.conv == nil || again.a.conv.ID != id || again.a.composer.entry.Text != "a thought not sent yet, longer" {
		t.Fatalf("the next app shows chat %v with %q", convID(again.a.conv), again.a.composer.entry.Text)
	}
}

// TestMenus: the menu bar has File, Edit, Chat, View, Window and Help; Edit › Select
// All and Copy act on the composer; Help's dialogs open and Esc closes them.
func TestMenus(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	var names []string
	items := map[string]*fyne.MenuItem{}
	for _, m := range h.a.win.MainMenu().Items {
		names = append(names, m.Label)
		for _, it := range m.Items {
			items[it.Label] = it
		}
	}
	if got := strings.Join(names, " "); got != "File Edit Chat View Window Help" {
		t.Errorf("menus %q", got)
	}
	h.a.win.Canvas().Focus(h.a.composer.entry)
	h.a.composer.entry.SetText("bagels")
	items["Select All"].Action()
	items["Copy"].Action()
	if got := h.a.fyne.Clipboard().Content(); got != "bagels" {
		t.Errorf("Select All then Copy put %q on the clipboard", got)
	}
	items["Keyboard shortcuts"].Action()
	newChat := "Ctrl+N — new chat"
	if runtime.GOOS == "darwin" {
		newChat = "⌘N — new chat"
	}
	if !strings.Contains(h.dialogText(), newChat) {
		t.Errorf("the shortcuts dialog reads %q", h.dialogText())
	}
	h.a.win.Canvas().OnTypedKey()(&fyne.KeyEvent{Name: fyne.KeyEscape})
	items["About Bagel"].Action()
	if !strings.Contains(h.dialogText(), "chats.db") {
		t.Errorf("About reads %q", h.dialogText())
	}
	h.a.closeTopDialog()
	if len(h.a.dialogs) != 0 {
		t.Errorf("%d dialogs left open", len(h.a.dialogs))
	}
}

// TestWindowMenu: the Window menu lists the chats, checks the one shown, and
// Next / Previous chat (and their shortcuts) walk the list, wrapping around.
func TestWindowMenu(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	var ids []int64
	for _, title := range []string{"Bagels", "Pretzels", "Muffins"} {
		c, err := h.a.store.CreateConversation(title, "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	h.a.reloadConversations()
	h.a.selectConversation(h.a.convs[0].ID)
	window := func() *fyne.Menu {
		for _, m := range h.a.win.MainMenu().Items {
			if m.Label == "Window" {
				return m
			}
		}
		t.Fatal("no Window menu")
		return nil
	}
	checked := func() string {
		for _, it := range window().Items {
			if it.Checked && it.Label != "Full screen" {
				return it.Label
			}
		}
		return ""
	}
	first := h.a.convs[0].Title
	if got := checked(); got != first {
		t.Errorf("checked %q, want %q, the chat shown", got, first)
	}
	h.a.stepConversation(1)
	if got, want := h.a.conv.ID, h.a.convs[1].ID; got != want {
		t.Errorf("Next chat shows %d, want %d", got, want)
	}
	h.a.stepConversation(-1)
	h.a.stepConversation(-1) // wraps to the last
	if got, want := h.a.conv.ID, h.a.convs[len(h.a.convs)-1].ID; got != want {
		t.Errorf("Previous chat from the first shows %d, want the last, %d", got, want)
	}
	if got := checked(); got != h.a.convs[len(h.a.convs)-1].Title {
		t.Errorf("after moving, checked %q", got)
	}
}
