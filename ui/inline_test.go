package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/widget"
)

// TestInlineStyles: ~~struck~~ text is drawn struck through, $…$ and $$…$$
// math is set in monospace as written, prices stay prose, and code is left
// alone.
func TestInlineStyles(t *testing.T) {
	md := "Was ~~wrong~~ right: $x^2 + 1$ and $$\\int f$$ cost $5 and $10.\n\n```\n~~not~~ $code$\n```"
	rt := widget.NewRichTextFromMarkdown(md)
	inlineStyles(rt)
	runs := map[string]*widget.TextSegment{}
	for _, s := range rt.Segments {
		if ts, ok := s.(*widget.TextSegment); ok {
			runs[ts.Text] = ts
		}
	}
	if r := runs[struck("wrong")]; r == nil || r.Style.TextStyle.Monospace {
		t.Errorf("the struck word: %+v (runs %q)", r, keys(runs))
	}
	for _, math := range []string{"$x^2 + 1$", "$$\\int f$$"} {
		if r := runs[math]; r == nil || !r.Style.TextStyle.Monospace {
			t.Errorf("math %q: %+v (runs %q)", math, r, keys(runs))
		}
	}
	if r := runs[" cost $5 and $10."]; r == nil || r.Style.TextStyle.Monospace {
		t.Errorf("prices were taken for math (runs %q)", keys(runs))
	}
	if r := runs["~~not~~ $code$"]; r == nil || !r.Style.TextStyle.Monospace {
		t.Errorf("the code block changed (runs %q)", keys(runs))
	}
	if got := rt.String(); !strings.Contains(got, "right: $x^2 + 1$") {
		t.Errorf("text %q", got)
	}
}

func keys(m map[string]*widget.TextSegment) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
