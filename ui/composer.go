package ui

import (
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"bagel/store"
)

// composer is where the user writes: the message entry, Send (Stop while a
// reply streams), the thinking toggle, and a banner while a message is being
// edited.
type composer struct {
	a      *App
	root   fyne.CanvasObject
	entry  *composerEntry
	send   *widget.Button
	think  *widget.Check
	banner *fyne.Container
	// editingNote, in the banner, says what Send replaces.
	editingNote *widget.Label
	hint        *widget.Label
	// switchBack, beside the hint, switches to the model that wrote the
	// chat's last reply, when it is another and the app knows where it is.
	switchBack *widget.Button
	// tokens says what the chat and the draft take of the context
	// (tokencount.go).
	tokens *widget.Label
	// attached are the images the next message carries (images.go), shown
	// in attachRow; attachButton picks one.
	attached     []store.Image
	attachRow    *fyne.Container
	attachButton *widget.Button
}

func newComposer(a *App) *composer {
	c := &composer{a: a}
	c.entry = newComposerEntry(a.sendComposer, a.stopOrCancelEdit)
	c.send = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), a.sendOrStop)
	c.send.Importance = widget.HighImportance
	c.think = widget.NewCheck("Think", func(on bool) {
		if a.settings.Thinking != on {
			a.settings.Thinking = on
			a.saveSettings()
		}
	})
	c.think.SetChecked(a.settings.Thinking)
	c.hint = widget.NewLabel("")
	c.hint.Importance = widget.LowImportance
	c.hint.SizeName = theme.SizeNameCaptionText
	c.hint.Truncation = fyne.TextTruncateEllipsis // a narrow window cuts the hint, never widens for it
	cancel := widget.NewButtonWithIcon("Cancel edit", theme.CancelIcon(), a.cancelEdit)
	cancel.Importance = widget.LowImportance
	c.editingNote = widget.NewLabel("")
	c.editingNote.Importance = widget.WarningImportance
	c.editingNote.Wrapping = fyne.TextWrapWord
	c.banner = container.NewBorder(nil, nil, nil, cancel, c.editingNote)
	c.banner.Hide()
	c.attachButton = widget.NewButtonWithIcon("Image", theme.FileImageIcon(), a.pickImage)
	c.attachButton.Importance = widget.LowImportance
	c.attachRow = container.NewHBox()
	c.attachRow.Hide()
	side := container.NewVBox(c.send, c.think, c.attachButton)
	c.tokens = widget.NewLabel("")
	c.tokens.Importance = widget.LowImportance
	c.tokens.SizeName = theme.SizeNameCaptionText
	c.switchBack = widget.NewButton("", nil)
	c.switchBack.Importance = widget.LowImportance
	c.switchBack.Hide()
	c.root = container.NewPadded(container.NewVBox(
		c.banner,
		c.attachRow,
		container.NewBorder(nil, nil, nil, side, c.entry),
		container.NewBorder(nil, nil, nil, container.NewHBox(c.switchBack, c.tokens), c.hint),
	))
	return c
}

// refresh matches the buttons to the app's state.
func (c *composer) refresh() {
	a := c.a
	g := a.stoppable()
	busy := g != nil
	switch {
	case busy:
		c.send.SetText("Stop")
		c.send.SetIcon(theme.MediaStopIcon())
		c.send.Importance = widget.DangerImportance
	default:
		c.send.SetText("Send")
		c.send.SetIcon(theme.MailSendIcon())
		c.send.Importance = widget.HighImportance
	}
	c.send.Refresh()
	if busy || a.ready() {
		c.send.Enable()
	} else {
		c.send.Disable()
	}
	if a.editing != nil {
		c.editingNote.SetText(editingNote(a.msgs, a.editing.ID))
		c.banner.Show()
	} else {
		c.banner.Hide()
	}
	c.hint.Importance = widget.LowImportance
	c.switchBack.Hide()
	switch {
	case busy && g.stopping:
		c.hint.SetText("stopping…")
	case busy && a.shownGen() == nil:
		c.hint.SetText("a reply is being written in “" + a.conversationTitle(g.convID) + "”: Esc or Stop ends it, then Enter sends this message")
	case busy:
		c.hint.SetText("answering… Esc or Stop ends the reply; what was written is kept")
	case a.loading:
		c.hint.SetText("loading the model…")
	case !a.ready():
		c.hint.SetText("load a model to chat: drop its folder on the window")
	case lastReplyModel(a.msgs) != "" && lastReplyModel(a.msgs) != a.replyModel():
		// A chat written with another model, local or remote.
		c.hint.SetText("this chat's last reply came from " + lastReplyModel(a.msgs) + "; the next comes from " + a.replyModel())
		if use := a.switchTo(lastReplyModel(a.msgs)); use != nil {
			c.switchBack.SetText("Use " + lastReplyModel(a.msgs))
			c.switchBack.OnTapped = use
			c.switchBack.Show()
		}
	default:
		c.hint.SetText("Enter sends · Shift+Enter new line · Ctrl/Cmd+Enter sends · Esc stops")
	}
}

// refuseWhileBusy answers Enter while a reply streams: the text stays, and
// the hint, saying why, turns to a warning so the refusal is seen.
func (c *composer) refuseWhileBusy() {
	c.refresh()
	c.hint.Importance = widget.WarningImportance
	c.hint.Refresh()
}

func (c *composer) focus() {
	if cv := c.a.win.Canvas(); cv != nil {
		cv.Focus(c.entry)
	}
}

// composerEntry is a multi-line entry where Enter sends and Shift+Enter adds a
// line (Fyne's own default is the other way round), Ctrl/Cmd+Enter sends too,
// and Esc stops the reply.
type composerEntry struct {
	widget.Entry
	onSend, onEscape func()
	shiftDown        bool
}

func newComposerEntry(onSend, onEscape func()) *composerEntry {
	e := &composerEntry{onSend: onSend, onEscape: onEscape}
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapWord
	e.SetPlaceHolder("Message the model…")
	e.SetMinRowsVisible(3)
	e.ExtendBaseWidget(e)
	return e
}

func (e *composerEntry) KeyDown(k *fyne.KeyEvent) {
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shiftDown = true
	}
	e.Entry.KeyDown(k)
}

func (e *composerEntry) KeyUp(k *fyne.KeyEvent) {
	if k.Name == desktop.KeyShiftLeft || k.Name == desktop.KeyShiftRight {
		e.shiftDown = false
	}
	e.Entry.KeyUp(k)
}

func (e *composerEntry) TypedKey(k *fyne.KeyEvent) {
	switch k.Name {
	case fyne.KeyReturn, fyne.KeyEnter:
		if !e.shiftDown {
			e.onSend()
			return
		}
		// With shift held and no OnSubmitted, the Entry inserts a newline.
	case fyne.KeyEscape:
		e.onEscape()
		return
	}
	e.Entry.TypedKey(k)
}

func (e *composerEntry) TypedShortcut(s fyne.Shortcut) {
	if cs, ok := s.(*desktop.CustomShortcut); ok && (cs.KeyName == fyne.KeyReturn || cs.KeyName == fyne.KeyEnter) &&
		cs.Modifier&(fyne.KeyModifierControl|fyne.KeyModifierSuper) != 0 {
		e.onSend()
		return
	}
	e.Entry.TypedShortcut(s)
}

// editingNote says what sending an edit of message id does: a new version,
// the message and what followed it kept as the other one.
func editingNote(msgs []store.Message, id int64) string {
	after := 0
	for _, m := range msgs {
		if m.ID > id {
			after++
		}
	}
	switch after {
	case 0:
		return "Editing your message: Send makes a new version; ‹ › shows this one again."
	case 1:
		return "Editing your last message: Send makes a new version with a new reply; ‹ › shows this one and its reply again."
	}
	return fmt.Sprintf("Editing an earlier message: Send makes a new version with a new reply; ‹ › shows this one and the %d messages after it again.", after)
}

// lastReplyModel is the model that wrote the chat's last reply ("" : none).
func lastReplyModel(msgs []store.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == store.RoleAssistant {
			return msgs[i].Model
		}
	}
	return ""
}
