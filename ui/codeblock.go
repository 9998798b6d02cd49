package ui

import (
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// A reply's complete fenced code blocks are shown on a background of their
// own under a bar with the language and a Copy button that copies that
// block alone (and says so): Copy code on the reply's header joins them all.

// mdPart is a run of a reply's Markdown: prose, or one fenced code block
// (lang from its opening fence; code its lines).
type mdPart struct {
	src        string
	fenced     bool
	lang, code string
}

// splitFences cuts md into prose and closed fenced code blocks, in order; an
// unclosed fence stays in the prose around it.
func splitFences(md string) []mdPart {
	var parts []mdPart
	lines := strings.SplitAfter(md, "\n")
	prose := 0 // the byte offset where the current prose began
	pos := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		open := strings.TrimSpace(line)
		if !strings.HasPrefix(open, "```") {
			pos += len(line)
			continue
		}
		// Find the closing fence.
		end, closeAt := -1, pos+len(line)
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(strings.TrimSpace(lines[j]), "```") {
				end = j
				break
			}
			closeAt += len(lines[j])
		}
		if end < 0 {
			pos += len(line)
			continue
		}
		if pos > prose {
			parts = append(parts, mdPart{src: md[prose:pos]})
		}
		stop := closeAt + len(lines[end])
		code := strings.Join(lines[i+1:end], "")
		parts = append(parts, mdPart{src: md[pos:stop], fenced: true,
			lang: strings.TrimSpace(strings.TrimPrefix(open, "```")), code: strings.TrimSuffix(code, "\n")})
		prose, pos, i = stop, stop, end
	}
	if prose < len(md) {
		parts = append(parts, mdPart{src: md[prose:]})
	}
	return parts
}

// codeView is a fenced block with its bar.
type codeView struct {
	root fyne.CanvasObject
	rt   *widget.RichText
	copy *widget.Button
	code string
}

// newCodeView renders part (fenced); its Copy puts the code on the app's
// clipboard, and do posts to the UI thread (the feedback's reset).
func newCodeView(part mdPart, do func(func())) *codeView {
	v := &codeView{code: part.code}
	v.rt = widget.NewRichText()
	v.rt.ParseMarkdown(part.src)
	highlightCode(v.rt, part.src)
	lang := part.lang
	if lang == "" {
		lang = "code"
	}
	label := widget.NewLabel(lang)
	label.Importance = widget.LowImportance
	label.SizeName = theme.SizeNameCaptionText
	v.copy = widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), nil)
	v.copy.Importance = widget.LowImportance
	v.copy.OnTapped = func() {
		fyne.CurrentApp().Clipboard().SetContent(v.code)
		v.copy.SetText("Copied")
		time.AfterFunc(2*time.Second, func() { do(func() { v.copy.SetText("Copy") }) })
	}
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = theme.InputRadiusSize()
	bar := container.NewBorder(nil, nil, label, v.copy)
	v.root = container.NewStack(bg, container.NewVBox(bar, v.rt))
	return v
}
