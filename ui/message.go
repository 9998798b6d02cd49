package ui

import (
	"slices"
	"strings"

	"bagel/store"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// messageView shows one message: a header with its actions, the model's
// reasoning in a collapsible section, the text (Markdown for replies) and, under
// a finished reply, its one-line performance summary.
type messageView struct {
	msg  store.Message
	root fyne.CanvasObject

	header  *widget.Label
	status  *widget.Label
	actions *fyne.Container
	body    *widget.RichText // the text; for a reply, its last (growing) blocks
	// bodyFlow and thinkingFlow show body and thinking with Bagel's own line
	// breaks (flow.go).
	bodyFlow, thinkingFlow *flowText
	// codes are the complete code blocks among done's objects, by object.
	codes map[fyne.CanvasObject]*codeView
	// post runs f on the UI thread (the chat view sets the app's; fyne.Do
	// until then).
	post func(f func())
	// done holds a reply's completed blocks, rendered once each: a streaming
	// reply re-renders only body, not everything above it (doneText).
	done      *fyne.Container
	doneText  string
	reasoning *widget.Accordion
	thinking  *widget.RichText
	footer    *widget.Label
	// plain shows the message's text as it is, selectable, in place of the
	// rendered Markdown while the reply's Select is on (toggleSelect).
	plain   *widget.Label
	buttons map[string]*widget.Button // the actions, by label
	// pictures shows a question's images (setImages), hidden without any;
	// shownImages are the images it shows.
	pictures    *fyne.Container
	shownImages []store.Image

	// reasoningOpen is the state the view last gave the reasoning section; when
	// the section differs, the user toggled it and the view stops managing it.
	reasoningOpen   bool
	userToggled     bool
	renderedContent string
	renderedReason  string
}

// messageAction is a button in a message's header; without run it is shown
// disabled.
type messageAction struct {
	label string // the button's text and its key in messageView.buttons
	icon  fyne.Resource
	run   func()
	// iconOnly shows the icon without the text: the header of a reply with
	// every action stays narrow enough for a half-screen window.
	iconOnly bool
}

func newMessageView(m store.Message, author string, actions []messageAction) *messageView {
	v := &messageView{msg: m, buttons: map[string]*widget.Button{}, post: fyne.Do}
	v.header = widget.NewLabelWithStyle(author, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.status = widget.NewLabel("")
	v.status.Importance = widget.WarningImportance
	v.actions = newOverflowRow() // the actions that fit, the rest under its more button
	v.setActions(actions)
	v.body = widget.NewRichText()
	v.body.Wrapping = fyne.TextWrapWord
	v.done = container.NewVBox()
	v.thinking = widget.NewRichText()
	v.thinking.Wrapping = fyne.TextWrapWord
	v.thinkingFlow = newFlowText(v.thinking)
	v.reasoning = widget.NewAccordion(widget.NewAccordionItem("Thinking", v.thinkingFlow))
	v.reasoning.Hide()
	v.footer = widget.NewLabel("")
	v.footer.Wrapping = fyne.TextWrapWord
	v.footer.Importance = widget.LowImportance
	v.footer.TextStyle = fyne.TextStyle{Italic: true}
	v.footer.SizeName = theme.SizeNameCaptionText
	v.footer.Hide()
	v.plain = widget.NewLabel("")
	v.plain.Wrapping = fyne.TextWrapWord
	v.plain.Selectable = true
	v.plain.Hide()

	top := container.NewBorder(nil, nil, container.NewHBox(v.header, v.status), nil, v.actions)
	v.bodyFlow = newFlowText(v.body)
	v.pictures = container.NewGridWrap(fyne.NewSize(pictureSize, pictureSize))
	v.pictures.Hide()
	content := container.NewVBox(top, v.pictures, v.reasoning, v.done, v.bodyFlow, v.plain, v.footer)
	if m.Role == store.RoleUser {
		bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
		bg.CornerRadius = 2 * theme.InputRadiusSize()
		v.root = container.NewStack(bg, container.NewPadded(content))
	} else {
		v.root = container.NewPadded(content)
	}
	v.update(m)
	return v
}

// setActions puts the header's buttons for actions (a rebuilt chat reuses the
// view of a message whose text has not changed and only changes these).
func (v *messageView) setActions(actions []messageAction) {
	v.buttons = map[string]*widget.Button{}
	var buttons []*widget.Button
	var labels []string
	for _, a := range actions {
		text := a.label
		if a.iconOnly && a.icon != nil {
			text = ""
		}
		b := widget.NewButtonWithIcon(text, a.icon, a.run)
		b.Importance = widget.LowImportance
		if a.run == nil {
			b.Disable()
		}
		v.buttons[a.label] = b
		buttons, labels = append(buttons, b), append(labels, a.label)
	}
	setOverflowButtons(v.actions, buttons, labels)
}

// update shows m, re-rendering only what changed: the streaming reply calls it
// about twenty times a second.
func (v *messageView) update(m store.Message) {
	v.msg = m
	if text := displayText(m); text != v.renderedContent || v.renderedContent == "" {
		if m.Role == store.RoleUser {
			// What the user typed is shown as typed: '*' or '#' in a question are
			// not formatting.
			v.body.Segments = []widget.RichTextSegment{&widget.TextSegment{Text: text, Style: widget.RichTextStyleParagraph}}
			v.bodyFlow.sourceChanged()
		} else {
			v.renderReply(text)
		}
		v.renderedContent = text
		switch {
		case v.plain.Visible(): // Select is on: the text as written, kept current
			v.plain.SetText(text)
			v.done.Hide()
			v.body.Hide()
		case text == v.doneText:
			v.body.Hide()
		default:
			v.body.Show()
		}
	}
	v.updateReasoning(m)
	v.status.SetText(statusText(m.Status))
	if m.Summary != "" && m.Status != store.StatusGenerating {
		v.footer.SetText(m.Summary)
		if m.Status == store.StatusError {
			v.footer.Importance = widget.DangerImportance
		}
		v.footer.Show()
	} else {
		v.footer.Hide()
	}
}

// renderReply shows a reply's Markdown. What lies before its last blank line
// outside a code block is complete and is rendered once, into its own block
// under done; only the rest, which the stream still grows, is parsed and laid
// out again each time (the layout of a long reply's text was most of a
// render's cost). Text that is not an extension of what was rendered starts
// over.
func (v *messageView) renderReply(text string) {
	if !strings.HasPrefix(text, v.doneText) {
		v.done.RemoveAll()
		v.codes = nil
		v.doneText = ""
	}
	rest := text[len(v.doneText):]
	end := completeBlocksEnd(rest)
	if end == 0 {
		end = longParagraphCut(rest)
	}
	if end > 0 {
		// Complete code blocks get their own bar (codeblock.go); the prose
		// around them its blocks.
		for _, part := range splitFences(rest[:end]) {
			if part.fenced {
				cv := newCodeView(part, func(f func()) { v.post(f) })
				if v.codes == nil {
					v.codes = map[fyne.CanvasObject]*codeView{}
				}
				v.codes[cv.root] = cv
				v.done.Add(cv.root)
				continue
			}
			block := widget.NewRichText()
			block.Wrapping = fyne.TextWrapWord
			src := tablesAsText(part.src)
			block.ParseMarkdown(src)
			highlightCode(block, src)
			inlineStyles(block)
			flow := newFlowText(block)
			flow.sourceChanged()
			v.done.Add(flow)
		}
		v.doneText += rest[:end]
		rest = rest[end:]
	}
	src := tablesAsText(rest)
	v.body.ParseMarkdown(src)
	highlightCode(v.body, src)
	inlineStyles(v.body)
	v.bodyFlow.sourceChanged()
}

// toggleSelect shows text (the message's, as written) selectable in place of
// the rendered Markdown, or, when it is shown, the Markdown again. It reports
// whether the text is now shown.
func (v *messageView) toggleSelect(text string) bool {
	b := v.buttons["Select"]
	if v.plain.Visible() {
		v.plain.Hide()
		v.done.Show()
		if v.renderedContent != v.doneText {
			v.body.Show()
		}
		if b != nil {
			b.SetText("Select")
		}
		return false
	}
	v.plain.SetText(text)
	v.plain.Show()
	v.done.Hide()
	v.body.Hide()
	if b != nil {
		b.SetText("Formatted") // the way back, said as plainly
	}
	return true
}

// segments are every rich-text segment of the message's text, in order.
func (v *messageView) segments() []widget.RichTextSegment {
	var out []widget.RichTextSegment
	for _, o := range v.done.Objects {
		if cv := v.codes[o]; cv != nil {
			out = append(out, cv.rt.Segments...)
			continue
		}
		out = append(out, o.(*flowText).source...)
	}
	return append(out, v.bodyFlow.source...)
}

// text is the message's text as rendered (segments' text).
func (v *messageView) text() string {
	var b strings.Builder
	for _, o := range v.done.Objects {
		if cv := v.codes[o]; cv != nil {
			b.WriteString(cv.rt.String())
			continue
		}
		b.WriteString(o.(*flowText).String())
	}
	b.WriteString(v.bodyFlow.String())
	return b.String()
}

// updateReasoning shows the thinking open while the model thinks and closes it
// once the answer starts, unless the user has toggled it.
func (v *messageView) updateReasoning(m store.Message) {
	if m.Reasoning == "" {
		v.reasoning.Hide()
		return
	}
	v.reasoning.Show()
	if m.Reasoning != v.renderedReason {
		v.thinking.ParseMarkdown(tablesAsText(m.Reasoning))
		v.thinkingFlow.sourceChanged()
		v.renderedReason = m.Reasoning
	}
	item := v.reasoning.Items[0]
	title := "Reasoning"
	if m.Status == store.StatusGenerating && displayText(m) == "" {
		title = "Thinking…"
	}
	if item.Title != title {
		item.Title = title
		v.reasoning.Refresh()
	}
	if item.Open != v.reasoningOpen {
		v.userToggled = true
	}
	if v.userToggled {
		return
	}
	open := m.Status == store.StatusGenerating && displayText(m) == ""
	if open != item.Open {
		if open {
			v.reasoning.Open(0)
		} else {
			v.reasoning.Close(0)
		}
	}
	v.reasoningOpen = open
}

// displayText is a message's text as shown: Qwen replies start with blank lines
// after </think>.
func displayText(m store.Message) string {
	return strings.TrimLeft(m.Content, "\n ")
}

// statusText marks a partial reply with what stopped it.
func statusText(status string) string {
	switch status {
	case store.StatusStopped:
		return "· stopped"
	case store.StatusLength:
		return "· cut at max tokens"
	case store.StatusContext:
		return "· context full"
	case store.StatusInterrupted:
		return "· interrupted (the app closed while writing it)"
	case store.StatusError:
		return "· failed"
	}
	return ""
}

// pictureSize is the side of an image shown in a message (its thumbnail).
const pictureSize = 160

// setImages shows the message's images from their files (path gives each
// one's): a tile of pictureSize, the whole image inside it, and its name
// under a tap on it (the tooltip Fyne lacks).
func (v *messageView) setImages(path func(store.Image) string) {
	if slices.Equal(v.shownImages, v.msg.Images) && (len(v.pictures.Objects) > 0 || len(v.msg.Images) == 0) {
		return
	}
	v.shownImages = slices.Clone(v.msg.Images)
	v.pictures.Objects = nil
	for _, img := range v.msg.Images {
		v.pictures.Add(newPicture(path(img), img.Name, pictureSize))
	}
	v.pictures.Hidden = len(v.msg.Images) == 0
	v.pictures.Refresh()
}

// newPicture is an image file shown whole within a square of side, named
// by a caption under it.
func newPicture(file, name string, side float32) fyne.CanvasObject {
	img := canvas.NewImageFromFile(file)
	img.FillMode = canvas.ImageFillContain
	img.ScaleMode = canvas.ImageScaleSmooth
	img.SetMinSize(fyne.NewSize(side, side-24))
	caption := widget.NewLabel(name)
	caption.Truncation = fyne.TextTruncateEllipsis
	caption.SizeName = theme.SizeNameCaptionText
	caption.Importance = widget.LowImportance
	return container.NewBorder(nil, caption, nil, nil, img)
}
