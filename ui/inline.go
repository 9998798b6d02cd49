package ui

import (
	"regexp"
	"strings"

	"fyne.io/fyne/v2/widget"
)

// Fyne's Markdown leaves two things peers render as plain text: ~~strike~~
// (GFM), which becomes the text with a combining long stroke over each
// character (Fyne's text styles have no strikethrough), and TeX math ($…$,
// $$…$$, \(…\), \[…\]), which stays as written but in monospace, so that it
// reads as notation rather than prose.

// inlineMarks finds the spans inlineStyles restyles: group 1 a struck text,
// group 2 a math span. A $…$ span starts and ends beside a non-space, so that
// "$5 and $10" is money, not math.
var inlineMarks = regexp.MustCompile(`~~([^~\n]+?)~~|(\$\$[^$]+\$\$|\\\(.+?\\\)|\\\[.+?\\\]|\$[^\s$](?:[^$\n]*[^\s$])?\$)`)

// inlineStyles restyles strikethrough and math in rt's prose segments.
func inlineStyles(rt *widget.RichText) {
	replaceSegments(rt, func(t *widget.TextSegment) []widget.RichTextSegment {
		if t.Style.TextStyle.Monospace || !strings.ContainsAny(t.Text, "~$\\") {
			return nil
		}
		return markRuns(t)
	})
}

// markRuns splits t at its marks, or returns nil when it has none.
func markRuns(t *widget.TextSegment) []widget.RichTextSegment {
	matches := inlineMarks.FindAllStringSubmatchIndex(t.Text, -1)
	var runs []widget.RichTextSegment
	add := func(text string, mono bool) {
		if text == "" {
			return
		}
		style := t.Style
		style.Inline = true
		style.TextStyle.Monospace = style.TextStyle.Monospace || mono
		runs = append(runs, &widget.TextSegment{Text: text, Style: style})
	}
	at := 0
	for _, m := range matches {
		if m[1] < len(t.Text) && t.Text[m[1]] >= '0' && t.Text[m[1]] <= '9' && t.Text[m[0]] == '$' {
			continue // "$3$4": a price, not math
		}
		add(t.Text[at:m[0]], false)
		if m[2] >= 0 {
			add(struck(t.Text[m[2]:m[3]]), false)
		} else {
			add(t.Text[m[4]:m[5]], true)
		}
		at = m[1]
	}
	if at == 0 {
		return nil
	}
	add(t.Text[at:], false)
	last := runs[len(runs)-1].(*widget.TextSegment)
	last.Style.Inline = t.Style.Inline
	return runs
}

// struck draws a long stroke (U+0336) through every character of s.
func struck(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
		if r != ' ' {
			b.WriteRune('\u0336')
		}
	}
	return b.String()
}
