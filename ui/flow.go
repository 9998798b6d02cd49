package ui

import (
	"regexp"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// Fyne's word wrap (v2.7.1, widget/richtext.go lineBounds; upstream issue
// 4303) breaks a paragraph into a column of single letters when one of its
// styled runs — an italic, inline code, a link — begins where less than a
// character's width is left on the line: it puts one letter on the row and
// goes on measuring the rest against that sliver, a letter a row. So Bagel
// breaks each paragraph's runs into lines itself, at the width it is laid
// out at, and hands Fyne lines that fit: the word wrap is left nothing to
// break but a word longer than a line.

// flowText shows rt with its paragraphs broken into lines by Bagel (its
// segments as rendered are a copy of source, re-broken when the width
// changes). It is shown while rt is.
type flowText struct {
	widget.BaseWidget
	rt     *widget.RichText
	source []widget.RichTextSegment
	width  float32 // what rt's segments are broken for (−1: not yet)
}

func newFlowText(rt *widget.RichText) *flowText {
	f := &flowText{rt: rt, width: -1}
	f.ExtendBaseWidget(f)
	return f
}

// String is the text as parsed (the rendered segments lack the spaces
// dropped at their lines' ends).
func (f *flowText) String() string {
	var b strings.Builder
	for _, s := range f.source {
		b.WriteString(s.Textual())
	}
	return b.String()
}

// Visible follows rt: hiding rt hides the whole.
func (f *flowText) Visible() bool { return f.rt.Visible() }

// sourceChanged takes rt's segments, as just parsed, as the text to break.
func (f *flowText) sourceChanged() {
	f.source = f.rt.Segments
	if f.width >= 0 {
		f.rt.Segments = breakParagraphs(f.source, f.textWidth(f.width))
	}
	f.rt.Refresh()
	f.Refresh()
}

// textWidth is the width Bagel breaks rt's lines to at a width of w. Fyne
// 2.7.1 fits a row's runs in w less four inner paddings (measured: "…with
// *every figure*" joins its row from exactly that width on), not the two its
// layout draws; breaking to the narrower width leaves its wrap nothing to
// do. A pixel spare for rounding.
func (f *flowText) textWidth(w float32) float32 {
	return w - 4*theme.InnerPadding() - 1
}

func (f *flowText) CreateRenderer() fyne.WidgetRenderer { return &flowRenderer{f: f} }

type flowRenderer struct{ f *flowText }

func (r *flowRenderer) Layout(size fyne.Size) {
	f := r.f
	if size.Width != f.width && f.source != nil {
		f.width = size.Width
		f.rt.Segments = breakParagraphs(f.source, f.textWidth(size.Width))
		f.rt.Refresh()
	}
	f.width = size.Width
	f.rt.Move(fyne.NewPos(0, 0))
	f.rt.Resize(size)
}

func (r *flowRenderer) MinSize() fyne.Size           { return r.f.rt.MinSize() }
func (r *flowRenderer) Refresh()                     { r.Layout(r.f.Size()) }
func (r *flowRenderer) Objects() []fyne.CanvasObject { return []fyne.CanvasObject{r.f.rt} }
func (r *flowRenderer) Destroy()                     {}

// wordRE cuts text into words, each with the spaces after it.
var wordRE = regexp.MustCompile(`\S+\s*|\s+`)

// piece is a word of a paragraph: from segment seg, on line line.
type piece struct {
	seg   int
	text  string
	width float32 // without its trailing spaces: what must fit
	adv   float32 // with them: how far the next word starts
	line  int
}

// breakParagraphs returns segs with each paragraph — a run of inline
// segments ended by a block one — broken into lines of at most width: the
// segment that ends a line is made a block (Fyne starts a row after it), a
// line's trailing spaces dropped. Other segments (lists, code blocks,
// headings alone on their row) are kept as they are.
func breakParagraphs(segs []widget.RichTextSegment, width float32) []widget.RichTextSegment {
	if width <= 0 {
		return segs
	}
	var out []widget.RichTextSegment
	start := 0
	for i, s := range segs {
		if s.Inline() {
			continue
		}
		switch {
		case i > start && isPlainText(segs[start:i+1]): // runs, then the paragraph's end
			out = append(out, breakParagraph(segs[start:i+1], width, 0)...)
		case i == start:
			out = append(out, breakList(s, width))
		default:
			out = append(out, segs[start:i+1]...)
		}
		start = i + 1
	}
	return append(out, segs[start:]...)
}

// breakList breaks a list's items as paragraphs whose first line starts
// after the bullet Fyne puts before them (a list within a list as a list);
// any other segment is returned as it is.
func breakList(s widget.RichTextSegment, width float32) widget.RichTextSegment {
	l, ok := s.(*widget.ListSegment)
	if !ok {
		return s
	}
	c := *l
	c.Items = make([]widget.RichTextSegment, len(l.Items))
	for i, item := range l.Items {
		bullet := "• " + " "
		if l.Ordered {
			bullet = strconv.Itoa(i+1) + ". " // the widest a start index leaves it is close enough
		}
		indent := fyne.MeasureText(bullet, theme.TextSize(), fyne.TextStyle{Bold: true}).Width
		switch it := item.(type) {
		case *widget.ParagraphSegment:
			c.Items[i] = &widget.ParagraphSegment{Texts: breakItem(it.Texts, width, indent, 1)}
		default:
			c.Items[i] = breakList(item, width)
		}
	}
	return &c
}

// breakItem breaks a list item's segments as a paragraph that starts indent
// in, and draws the lists nested in it indented by their depth (nestedList).
func breakItem(texts []widget.RichTextSegment, width, indent float32, depth int) []widget.RichTextSegment {
	if len(texts) > 1 && isPlainText(texts) { // an item's runs are all inline: the item ends them
		return breakParagraph(texts, width, indent)
	}
	// The runs before a nested list become a paragraph of their own, so that
	// the row ends before the list's first bullet.
	var out, run []widget.RichTextSegment
	flush := func() {
		if len(run) > 0 {
			// The last run a block: the row ends with it (a list item's text
			// runs are inline, the item's block ending them).
			if t, ok := run[len(run)-1].(*widget.TextSegment); ok && t.Inline() {
				c := *t
				c.Style.Inline = false
				run[len(run)-1] = &c
			} else if !ok {
				run = append(run, &widget.TextSegment{Style: widget.RichTextStyleParagraph})
			}
			if len(run) > 1 && isPlainText(run) {
				run = breakParagraph(run, width, indent)
			}
			out = append(out, &widget.ParagraphSegment{Texts: run})
			run, indent = nil, 0
		}
	}
	for _, s := range texts {
		if l, ok := s.(*widget.ListSegment); ok {
			flush()
			out = append(out, newNestedList(l, width, depth))
			continue
		}
		run = append(run, s)
	}
	if len(out) == 0 { // no nested list: the item as it was
		return texts
	}
	flush()
	return out
}

// nestedIndent is the run before a nested list's bullet, per level of depth.
const nestedIndent = "\u2003\u2003"

// nestedList draws a list inside a list item, each item a paragraph whose
// bullet (◦, or the item's number) is indented by the list's depth: Fyne
// draws a sub-list's bullets at the margin, under its parent's, so the
// nesting did not show.
type nestedList struct{ rows []widget.RichTextSegment }

func newNestedList(l *widget.ListSegment, width float32, depth int) *nestedList {
	n := &nestedList{}
	for i, item := range l.Items {
		bullet := strings.Repeat(nestedIndent, depth) + "◦  "
		if l.Ordered {
			bullet = strings.Repeat(nestedIndent, depth) + strconv.Itoa(l.StartNumber()+i) + ". "
		}
		lead := &widget.TextSegment{Text: bullet, Style: widget.RichTextStyleStrong}
		indent := fyne.MeasureText(bullet, theme.TextSize(), fyne.TextStyle{Bold: true}).Width
		if p, ok := item.(*widget.ParagraphSegment); ok {
			item = &widget.ParagraphSegment{Texts: breakItem(p.Texts, width, indent, depth+1)}
		}
		// The item a block after its bullet, as Fyne lays a list's rows: the
		// row ends with it.
		n.rows = append(n.rows, &widget.ParagraphSegment{Texts: []widget.RichTextSegment{lead, item}})
	}
	return n
}

// The RichTextBlock of a nested list: its rows; nothing of its own to draw.
func (n *nestedList) Segments() []widget.RichTextSegment { return n.rows }
func (n *nestedList) Inline() bool                       { return false }
func (n *nestedList) Textual() string                    { return "" }
func (n *nestedList) Visual() fyne.CanvasObject          { return nil }
func (n *nestedList) Update(fyne.CanvasObject)           {}
func (n *nestedList) Select(_, _ fyne.Position)          {}
func (n *nestedList) SelectedText() string               { return "" }
func (n *nestedList) Unselect()                          {}

// isPlainText reports segments of text and links only.
func isPlainText(segs []widget.RichTextSegment) bool {
	for _, s := range segs {
		switch s.(type) {
		case *widget.TextSegment, *widget.HyperlinkSegment:
		default:
			return false
		}
	}
	return true
}

// breakParagraph breaks one paragraph's segments (text and links; its last
// one a block, a text segment: a link is always inline) into lines of at
// most width.
// indent is how far its first line starts (a list item's bullet).
func breakParagraph(segs []widget.RichTextSegment, width, indent float32) []widget.RichTextSegment {
	var words []piece
	for i, s := range segs {
		switch s := s.(type) {
		case *widget.TextSegment:
			size := theme.TextSize()
			if s.Style.SizeName != "" {
				size = theme.Size(s.Style.SizeName)
			}
			for _, w := range wordRE.FindAllString(s.Text, -1) {
				trimmed := strings.TrimRight(w, " \t")
				words = append(words, piece{seg: i, text: w,
					width: fyne.MeasureText(trimmed, size, s.Style.TextStyle).Width,
					adv:   fyne.MeasureText(w, size, s.Style.TextStyle).Width})
			}
		case *widget.HyperlinkSegment: // a link is one piece: Fyne draws it as one widget
			wd := fyne.MeasureText(s.Text, theme.TextSize(), fyne.TextStyle{}).Width
			words = append(words, piece{seg: i, text: s.Text, width: wd, adv: wd})
		}
	}
	// A word that runs on into the next segment with no space between
	// ("*windowsill*,") is one unit: the line breaks before it or after it.
	x, line := indent, 0
	for k := 0; k < len(words); {
		j, w, adv := k, float32(0), float32(0)
		for {
			w, adv = adv+words[j].width, adv+words[j].adv
			if j+1 == len(words) || words[j].adv != words[j].width || strings.TrimRight(words[j].text, " \t") != words[j].text ||
				strings.TrimLeft(words[j+1].text, " \t") != words[j+1].text {
				break
			}
			j++
		}
		if x > indent && x+w > width || line > 0 && x > 0 && x+w > width {
			line, x = line+1, 0
		}
		for ; k <= j; k++ {
			words[k].line = line
		}
		x += adv
	}
	if line == 0 {
		return segs // one line: nothing for Fyne to wrap
	}
	// Rebuild: a segment per source segment and line, the last of each line
	// a block.
	var out []widget.RichTextSegment
	for k := 0; k < len(words); {
		j := k
		var b strings.Builder
		for j < len(words) && words[j].seg == words[k].seg && words[j].line == words[k].line {
			b.WriteString(words[j].text)
			j++
		}
		lineEnd := j == len(words) || words[j].line != words[k].line
		switch s := segs[words[k].seg].(type) {
		case *widget.TextSegment:
			text := b.String()
			if lineEnd {
				text = strings.TrimRight(text, " \t")
			}
			c := *s
			c.Text = text
			c.Style.Inline = !lineEnd
			if j == len(words) {
				c.Style = s.Style // the paragraph's own end
			}
			out = append(out, &c)
		case *widget.HyperlinkSegment:
			out = append(out, s)
			if lineEnd && j < len(words) { // a link cannot end a row itself
				out = append(out, &widget.TextSegment{Style: widget.RichTextStyle{Inline: false}})
			}
		}
		k = j
	}
	return out
}
