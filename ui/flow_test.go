package ui

import (
	"sort"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"bagel/store"
)

// wrapParagraphs end lines on an italic, inline code and a link at some
// width between 300 and 1200 px: Fyne's own wrap turned each into a column
// of single letters (a paragraph 850–910 px tall instead of about 100).
var wrapParagraphs = []string{
	"Bagel runs the model on this computer and shows how fast it is, with *every figure measured* as it goes, so you can compare it with `llama.cpp` and [Ollama](https://ollama.com) on the same machine and see the difference.",
	"The *quick* brown fox jumps over the **lazy** dog while `the cat` watches from the *warm windowsill*, and then the story goes on for a while longer so that it wraps several times at every width we try.",
	"A sentence with [a link in the middle](https://example.com) of it and then *emphasis at the end of a clause*, followed by `code_spans()` and more ordinary words to fill the lines.",
}

// rows groups the laid-out text of o into rows (by y) and returns each
// row's text, top to bottom.
func rows(o fyne.CanvasObject) []string {
	byY := map[float32][]*canvas.Text{}
	var pos = map[*canvas.Text]fyne.Position{}
	var walk func(o fyne.CanvasObject, at fyne.Position)
	walk = func(o fyne.CanvasObject, at fyne.Position) {
		if !o.Visible() {
			return
		}
		p := at.Add(o.Position())
		switch o := o.(type) {
		case *canvas.Text:
			if strings.TrimSpace(o.Text) != "" {
				byY[p.Y] = append(byY[p.Y], o)
				pos[o] = p
			}
		case fyne.Widget:
			for _, c := range test.WidgetRenderer(o).Objects() {
				walk(c, p)
			}
		case *fyne.Container:
			for _, c := range o.Objects {
				walk(c, p)
			}
		}
	}
	walk(o, fyne.NewPos(0, 0))
	var ys []float32
	for y := range byY {
		ys = append(ys, y)
	}
	sort.Slice(ys, func(i, j int) bool { return ys[i] < ys[j] })
	// Runs of another style or size sit a few pixels off their row's y.
	var merged [][]*canvas.Text
	last := float32(-100)
	for _, y := range ys {
		if y-last > 6 || len(merged) == 0 {
			merged = append(merged, nil)
		}
		merged[len(merged)-1] = append(merged[len(merged)-1], byY[y]...)
		last = y
	}
	var out []string
	for _, texts := range merged {
		sort.Slice(texts, func(i, j int) bool { return pos[texts[i]].X < pos[texts[j]].X })
		var b strings.Builder
		for _, t := range texts {
			b.WriteString(t.Text)
		}
		out = append(out, b.String())
	}
	return out
}

// TestRepliesWrapByWords: a reply's paragraphs, at every width from 300 to
// 1200 px, break between words: every row but a paragraph's last holds more
// than one word, and no word is split.
func TestRepliesWrapByWords(t *testing.T) {
	test.NewTempApp(t)
	for _, md := range wrapParagraphs {
		v := newMessageView(store.Message{Role: store.RoleAssistant, Content: md, Status: store.StatusDone}, "Bagel", nil)
		words := len(strings.Fields(v.text()))
		for w := float32(300); w <= 1200; w++ {
			v.root.Resize(fyne.NewSize(w, v.root.MinSize().Height))
			v.root.Resize(fyne.NewSize(w, v.root.MinSize().Height))
			got := rows(v.bodyFlow)
			n := 0
			for i, r := range got {
				n += len(strings.Fields(r))
				if i < len(got)-1 && len(strings.Fields(r)) < 2 {
					t.Fatalf("%.0f px: row %d of %q is %q:\n%s", w, i, md[:30], r, strings.Join(got, "\n"))
				}
			}
			if n != words {
				t.Fatalf("%.0f px: %d words in the rows, %d in the text (a word split?):\n%s", w, n, words, strings.Join(got, "\n"))
			}
		}
	}
}

// TestFyneWrapStillBreaks keeps the reason for flow.go in view: Fyne's own
// wrap of the first paragraph at 350 px still puts letters on rows of their
// own. When a Fyne upgrade fixes it, this fails, and flow.go can go.
func TestFyneWrapStillBreaks(t *testing.T) {
	test.NewTempApp(t)
	rt := widget.NewRichTextFromMarkdown(wrapParagraphs[0])
	rt.Wrapping = fyne.TextWrapWord
	rt.Resize(fyne.NewSize(350, 100))
	rt.Resize(fyne.NewSize(350, rt.MinSize().Height))
	single := 0
	for _, r := range rows(rt) {
		if len([]rune(strings.TrimSpace(r))) == 1 {
			single++
		}
	}
	if single < 10 {
		t.Errorf("Fyne's wrap at 350 px left %d one-letter rows: the upstream bug seems fixed; flow.go may go", single)
	}
}

// TestListItemsWrapByWords: a list's items, each one of the failing
// paragraphs, break between words at every width from 300 to 1200 px: no
// row is a lone letter, and no word is split.
func TestListItemsWrapByWords(t *testing.T) {
	test.NewTempApp(t)
	md := "- " + wrapParagraphs[0] + "\n- " + wrapParagraphs[1] + "\n\n1. " + wrapParagraphs[2] + "\n"
	v := newMessageView(store.Message{Role: store.RoleAssistant, Content: md, Status: store.StatusDone}, "Bagel", nil)
	words := 0
	for _, p := range wrapParagraphs {
		rt := widget.NewRichTextFromMarkdown(p)
		words += len(strings.Fields(rt.String()))
	}
	for w := float32(300); w <= 1200; w++ {
		v.root.Resize(fyne.NewSize(w, v.root.MinSize().Height))
		v.root.Resize(fyne.NewSize(w, v.root.MinSize().Height))
		got := rows(v.root)
		n := 0
		for _, r := range got {
			f := strings.Fields(strings.NewReplacer("•", "", "1.", "").Replace(r))
			n += len(f)
			if len(f) == 1 && len([]rune(f[0])) == 1 {
				t.Fatalf("%.0f px: a row of one letter %q:\n%s", w, r, strings.Join(got, "\n"))
			}
		}
		if n < words { // the header's and footer's words come on top
			t.Fatalf("%.0f px: %d words in the rows, %d in the items (a word split?):\n%s", w, n, words, strings.Join(got, "\n"))
		}
	}
}

// TestNestedListsKeepTheirNesting: a list inside a list item shows its
// bullets indented by its depth (◦, or its numbers), its items' words after
// them; the top level keeps its bullets at the margin.
func TestNestedListsKeepTheirNesting(t *testing.T) {
	test.NewTempApp(t)
	md := "- top one\n  - nested two\n  - nested three\n    1. deep four\n- top five\n"
	v := newMessageView(store.Message{Role: store.RoleAssistant, Content: md, Status: store.StatusDone}, "Bagel", nil)
	v.root.Resize(fyne.NewSize(600, v.root.MinSize().Height))
	v.root.Resize(fyne.NewSize(600, v.root.MinSize().Height))
	got := rows(v.root)
	find := func(word string) string {
		for _, r := range got {
			if strings.Contains(r, word) {
				return r
			}
		}
		t.Fatalf("no row holds %q:\n%s", word, strings.Join(got, "\n"))
		return ""
	}
	lead := func(r string) int { return len([]rune(r)) - len([]rune(strings.TrimLeft(r, "\u2003 "))) }
	top, nested, deep := find("top one"), find("nested two"), find("deep four")
	if !strings.HasPrefix(strings.TrimLeft(nested, "\u2003 "), "◦") || !strings.HasPrefix(strings.TrimLeft(deep, "\u2003 "), "1.") {
		t.Errorf("nested bullets: %q, %q", nested, deep)
	}
	if !(lead(top) < lead(nested) && lead(nested) < lead(deep)) {
		t.Errorf("indents %d, %d, %d: the nesting does not show\n%s", lead(top), lead(nested), lead(deep), strings.Join(got, "\n"))
	}
	if r := find("top five"); !strings.HasPrefix(r, "•") {
		t.Errorf("the top level's second item: %q", r)
	}
}
