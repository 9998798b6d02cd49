package ui

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// Code blocks are coloured by token kind: chroma (a well-kept Go port of
// Pygments) splits the code with the lexer its fence names ("```go"), and each
// token becomes a run of the block's monospace text in one of the theme's
// colours, so the colours follow the light and dark themes. A block whose
// fence names no language, or one chroma does not know, stays as it was.

// highlightCode colours the fenced code blocks of rt, which was parsed from md.
func highlightCode(rt *widget.RichText, md string) {
	langs := fenceLanguages(md)
	replaceSegments(rt, func(t *widget.TextSegment) []widget.RichTextSegment {
		if t.Style.Inline || !t.Style.TextStyle.Monospace || t.Text == "" {
			return nil
		}
		return codeRuns(t.Text, langs[t.Text], t.Style)
	})
}

// replaceSegments puts runs(t) in place of each text segment t of rt for which
// it returns some, and refreshes rt when any was replaced.
func replaceSegments(rt *widget.RichText, runs func(t *widget.TextSegment) []widget.RichTextSegment) {
	var out []widget.RichTextSegment
	changed := false
	for _, s := range rt.Segments {
		var r []widget.RichTextSegment
		if t, ok := s.(*widget.TextSegment); ok {
			r = runs(t)
		}
		if r == nil {
			out = append(out, s)
			continue
		}
		out = append(out, r...)
		changed = true
	}
	if changed {
		rt.Segments = out
		rt.Refresh()
	}
}

// fenceLanguages maps each fenced block's contents in md to its fence's
// language ("" when the fence names none).
func fenceLanguages(md string) map[string]string {
	langs := map[string]string{}
	var cur []string
	lang, inCode := "", false
	for _, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") {
			if inCode {
				langs[strings.Join(cur, "\n")] = lang
				cur = nil
			} else {
				lang = strings.TrimSpace(strings.TrimPrefix(t, "```"))
			}
			inCode = !inCode
			continue
		}
		if inCode {
			cur = append(cur, line)
		}
	}
	if inCode {
		langs[strings.Join(cur, "\n")] = lang
	}
	return langs
}

// codeRuns splits code into coloured runs in block's style (the last run ends
// the block, as the one segment did), or nil when no lexer knows the code.
func codeRuns(code, lang string, block widget.RichTextStyle) []widget.RichTextSegment {
	if lang == "" {
		return nil // guessing the language of a bare block colours prose as code too often
	}
	lexer := lexers.Get(lang)
	if lexer == nil {
		return nil
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code)
	if err != nil {
		return nil
	}
	var runs []widget.RichTextSegment
	for tok := it(); tok != chroma.EOF; tok = it() {
		if tok.Value == "" {
			continue
		}
		style := block
		style.Inline = true
		style.ColorName = tokenColor(tok.Type)
		if n := len(runs); n > 0 {
			if prev := runs[n-1].(*widget.TextSegment); prev.Style.ColorName == style.ColorName {
				prev.Text += tok.Value // one run per colour change
				continue
			}
		}
		runs = append(runs, &widget.TextSegment{Text: tok.Value, Style: style})
	}
	if len(runs) == 0 {
		return nil
	}
	last := runs[len(runs)-1].(*widget.TextSegment)
	last.Style.Inline = block.Inline
	return runs
}

// tokenColor is the theme colour of a token kind.
func tokenColor(t chroma.TokenType) fyne.ThemeColorName {
	switch {
	case t.InCategory(chroma.Comment):
		return theme.ColorNamePlaceHolder
	case t.InCategory(chroma.Keyword):
		return theme.ColorNamePrimary
	case t.InSubCategory(chroma.LiteralString):
		return theme.ColorNameSuccess
	case t.InSubCategory(chroma.LiteralNumber):
		return theme.ColorNameWarning
	case t == chroma.NameFunction || t == chroma.NameClass || t == chroma.NameBuiltin:
		return theme.ColorNameHyperlink
	}
	return theme.ColorNameForeground
}
