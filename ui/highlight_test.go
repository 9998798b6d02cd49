package ui

import (
	"testing"

	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// TestHighlightCode: a fenced Go block is split into coloured runs (the
// keyword in the primary colour, the string in the success colour) whose text
// is the block's, the last run still ending the block; a block without a
// language and the text around the blocks stay as they were.
func TestHighlightCode(t *testing.T) {
	md := "Intro\n\n```go\nfunc main() {\n\tprintln(\"hi\") // greet\n}\n```\n\n```\nplain block\n```\n\nafter"
	rt := widget.NewRichTextFromMarkdown(md)
	before := rt.String()
	highlightCode(rt, md)
	if got := rt.String(); got != before {
		t.Fatalf("text changed:\n%q\nwas\n%q", got, before)
	}
	colour := map[string]string{}
	var plain, lastOfBlock *widget.TextSegment
	for i, s := range rt.Segments {
		ts, ok := s.(*widget.TextSegment)
		if !ok {
			continue
		}
		colour[ts.Text] = string(ts.Style.ColorName)
		if ts.Text == "plain block" {
			plain = ts
		}
		if ts.Style.TextStyle.Monospace && !ts.Style.Inline && i > 0 && lastOfBlock == nil && ts.Text != "plain block" {
			lastOfBlock = ts
		}
	}
	if colour["func"] != string(theme.ColorNamePrimary) {
		t.Errorf("keyword func coloured %q", colour["func"])
	}
	if colour[`"hi"`] != string(theme.ColorNameSuccess) {
		t.Errorf("string coloured %q (runs %v)", colour[`"hi"`], colour)
	}
	if plain == nil || plain.Style.ColorName != theme.ColorNameForeground {
		t.Errorf("the block without a language was changed: %+v", plain)
	}
	if lastOfBlock == nil {
		t.Error("no run ends the Go block")
	}
}
