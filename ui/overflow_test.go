package ui

import (
	"testing"

	"bagel/store"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// TestActionsOverflow: a reply's actions show in full where the row has room;
// in a narrow one those that do not fit go, in order, under a more button
// whose menu names them and runs them, and the row asks no more width than
// that button.
func TestActionsOverflow(t *testing.T) {
	test.NewTempApp(t)
	ran := ""
	action := func(label string) messageAction {
		return messageAction{label, theme.ContentCopyIcon(), func() { ran = label }, false}
	}
	v := newMessageView(store.Message{Role: store.RoleAssistant, Content: "hi"}, "Bagel",
		[]messageAction{action("Copy"), action("Select"), action("Copy code"), action("Regenerate")})
	w := test.NewWindow(v.root)
	defer w.Close()
	row := v.actions
	more := row.Objects[len(row.Objects)-1].(*widget.Button)
	if row.MinSize().Width != more.MinSize().Width {
		t.Errorf("the row asks %g of width, its more button %g", row.MinSize().Width, more.MinSize().Width)
	}
	w.Resize(fyne.NewSize(900, 200))
	for label, b := range v.buttons {
		if !b.Visible() {
			t.Errorf("900 wide: %s hidden", label)
		}
	}
	if more.Visible() {
		t.Error("900 wide: the more button shows")
	}
	w.Resize(fyne.NewSize(330, 200))
	l := row.Layout.(*overflowLayout)
	if !v.buttons["Copy"].Visible() || v.buttons["Regenerate"].Visible() || !more.Visible() || len(l.hidden) == 0 {
		t.Fatalf("330 wide: Copy %v, Regenerate %v, more %v, %d hidden", v.buttons["Copy"].Visible(), v.buttons["Regenerate"].Visible(), more.Visible(), len(l.hidden))
	}
	if last := l.hidden[len(l.hidden)-1]; l.labels[last] != "Regenerate" {
		t.Errorf("the last hidden is %q, want Regenerate", l.labels[last])
	}
	test.Tap(more)
	if w.Canvas().Overlays().Top() == nil {
		t.Fatal("the more button opened nothing")
	}
	items := l.menu().Items
	if got := items[len(items)-1].Label; got != "Regenerate" || len(items) != len(l.hidden) {
		t.Errorf("the menu ends with %q (%d items for %d hidden), want Regenerate", got, len(items), len(l.hidden))
	}
	items[len(items)-1].Action()
	if ran != "Regenerate" {
		t.Errorf("the menu's Regenerate ran %q", ran)
	}
}
