package ui

import (
	"testing"

	"bagel/store"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// TestReplyRendering streams a reply with reasoning into a message view: the
// reasoning is open while the model thinks and closes when the answer starts;
// the answer's Markdown becomes a list and a code block.
func TestReplyRendering(t *testing.T) {
	m := store.Message{ID: 1, Role: store.RoleAssistant, Status: store.StatusGenerating}
	v := newMessageView(m, "model", nil)
	test.NewTempWindow(t, v.root)
	if v.reasoning.Visible() {
		t.Error("an empty reply shows a reasoning section")
	}

	m.Reasoning = "The user wants **bagels**."
	v.update(m)
	if !v.reasoning.Visible() || !v.reasoning.Items[0].Open || v.reasoning.Items[0].Title != "Thinking…" {
		t.Fatalf("while thinking: visible %v, open %v, title %q", v.reasoning.Visible(), v.reasoning.Items[0].Open, v.reasoning.Items[0].Title)
	}

	m.Content = "\n\nThree kinds:\n\n- plain\n- sesame\n\n```go\nfmt.Println(\"bagel\")\n```\n"
	v.update(m)
	if v.reasoning.Items[0].Open || v.reasoning.Items[0].Title != "Reasoning" {
		t.Errorf("once answering: open %v, title %q; want closed, Reasoning", v.reasoning.Items[0].Open, v.reasoning.Items[0].Title)
	}
	var list, code bool
	for _, s := range v.segments() {
		switch s := s.(type) {
		case *widget.ListSegment:
			list = len(s.Items) == 2
		case *widget.TextSegment:
			code = code || s.Style == widget.RichTextStyleCodeBlock
		}
	}
	if !list || !code {
		t.Errorf("the Markdown rendered without a two-item list (%v) or a code block (%v): %#v", list, code, v.segments())
	}

	// A user who opens the reasoning keeps it open.
	v.reasoning.Open(0)
	m.Content += "More."
	m.Status = store.StatusDone
	m.Summary = "12 tokens at 30 tok/s"
	v.update(m)
	if !v.reasoning.Items[0].Open {
		t.Error("the reasoning the user opened was closed again")
	}
	if !v.footer.Visible() || v.footer.Text != m.Summary {
		t.Errorf("the summary reads %q", v.footer.Text)
	}
}

// TestUserTextIsNotMarkdown: what the user typed is shown as typed.
func TestUserTextIsNotMarkdown(t *testing.T) {
	v := newMessageView(store.Message{ID: 1, Role: store.RoleUser, Content: "# not a heading *x*"}, "You", nil)
	if got := v.text(); got != "# not a heading *x*" {
		t.Errorf("user text shown as %q", got)
	}
}
