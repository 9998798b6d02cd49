package ui

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"bagel/engine"
	"bagel/store"
)

// sendOrStop is the composer's button: Send, or Stop while a reply streams.
func (a *App) sendOrStop() {
	if a.stoppable() != nil {
		a.stop()
		return
	}
	a.sendComposer()
}

// sendComposer sends what the composer holds (Enter). While a reply streams
// (in this chat or another) the text stays for the next turn and the hint says
// why.
func (a *App) sendComposer() {
	text := strings.TrimSpace(a.composer.entry.Text)
	if a.loading || text == "" && len(a.composer.attached) == 0 {
		return
	}
	if a.shownGen() != nil || a.busyElsewhere() != nil {
		a.composer.refuseWhileBusy()
		return
	}
	if a.send(text, a.composer.attached) {
		a.composer.takeAttached()
		a.composer.entry.SetText(a.takeDraft(a.conv.ID)) // an edit gives the draft back
	}
}

// send adds a user message and starts the reply. An edit makes the message a
// new version of the one edited: that one and what followed it stay as the
// other version, which its ‹ › switch shows again. It reports whether the
// message was taken.
func (a *App) send(text string, images []store.Image) bool {
	if !a.ready() {
		a.showError("No model loaded", errNoModel)
		return false
	}
	if why := a.imagesRefused(); len(images) > 0 && why != "" {
		a.showError("The images cannot go into this chat", errors.New(why))
		return false
	}
	if err := a.imagesFit(text, images); err != nil {
		a.showError("The message does not fit the context", err)
		return false
	}
	conv, err := a.ensureConversation()
	if err != nil {
		a.showError("A new chat could not be created", err)
		return false
	}
	firstMessage := len(a.msgs) == 0 || (a.editing != nil && a.editing.ID == a.msgs[0].ID)
	question := store.Message{Role: store.RoleUser, Content: text, Images: images}
	reply := store.Message{Role: store.RoleAssistant, Status: store.StatusGenerating, Model: a.replyModel()}
	var added []store.Message
	if a.editing != nil {
		added, err = a.store.EditMessage(conv.ID, a.editing.ID, question, reply)
	} else {
		added, err = a.store.Replace(conv.ID, 0, question, reply)
	}
	if err != nil {
		a.showError("The message could not be saved", err)
		return false
	}
	a.editing = nil
	if firstMessage && (conv.Title == defaultTitle || conv.Title == "") {
		a.setTitle(conv.ID, titleFrom(cmp.Or(text, "An image")))
	}
	a.startReply(added[1])
	return true
}

// regenerate replaces the last reply with a new one; the old one stays as an
// earlier version, which the reply's ‹ › switch shows again.
func (a *App) regenerate() {
	if a.shownGen() != nil || a.busyElsewhere() != nil || a.conv == nil {
		return
	}
	if !a.ready() {
		a.showError("No model loaded", errNoModel)
		return
	}
	lastUser := -1
	for i, m := range a.msgs {
		if m.Role == store.RoleUser {
			lastUser = i
		}
	}
	if lastUser < 0 {
		return
	}
	reply := store.Message{Role: store.RoleAssistant, Status: store.StatusGenerating, Model: a.replyModel()}
	var err error
	if lastUser+1 < len(a.msgs) {
		reply, err = a.store.RegenerateReply(a.conv.ID, a.msgs[lastUser+1].ID, reply)
	} else { // the question has no reply yet
		var added []store.Message
		if added, err = a.store.Replace(a.conv.ID, 0, reply); err == nil {
			reply = added[0]
		}
	}
	if err != nil {
		a.showError("The chat could not be saved", err)
		return
	}
	a.startReply(reply)
}

// showVersion makes version id of a message (the last reply, or a question
// edited) the one the chat shows, with what followed it.
func (a *App) showVersion(id int64) {
	if a.shownGen() != nil || a.conv == nil {
		return
	}
	if err := a.store.SelectVersion(a.conv.ID, id); err != nil {
		a.showError("The chat could not be saved", err)
		return
	}
	msgs, err := a.store.Messages(a.conv.ID)
	if err != nil {
		a.showError("The chat could not be read", err)
		return
	}
	a.msgs = msgs
	a.chat.show()
}

// editLast edits the last user message (the menu's Edit).
func (a *App) editLast() {
	for i := len(a.msgs) - 1; i >= 0; i-- {
		if a.msgs[i].Role == store.RoleUser {
			a.editMessage(a.msgs[i].ID)
			return
		}
	}
}

// editMessage moves user message id into the composer; Send replaces it and
// everything after it (the banner says how much), Cancel edit (or Esc) puts
// everything back.
func (a *App) editMessage(id int64) {
	if a.shownGen() != nil {
		return
	}
	for i := len(a.msgs) - 1; i >= 0; i-- {
		if a.msgs[i].ID == id && a.msgs[i].Role == store.RoleUser {
			m := a.msgs[i]
			if a.editing == nil {
				a.putDraftAside(a.conv.ID) // back when the edit is sent or cancelled
			}
			a.editing = &m
			a.composer.entry.SetText(m.Content)
			a.composer.attached = slices.Clone(m.Images) // sent again with the edit, unless removed
			a.composer.showAttached()
			a.chat.show()
			a.composer.refresh()
			a.composer.focus()
			return
		}
	}
}

func (a *App) cancelEdit() {
	if a.editing == nil {
		return
	}
	a.editing = nil
	a.composer.entry.SetText(a.takeDraft(a.conv.ID))
	a.chat.show()
	a.composer.refresh()
}

// stop ends the reply being generated; what it wrote is kept, marked stopped.
func (a *App) stop() {
	if g := a.stoppable(); g != nil {
		g.cancel()
		g.stopping = true
		a.composer.refresh()
	}
}

// stopOrCancelEdit is Esc.
func (a *App) stopOrCancelEdit() {
	if a.stoppable() != nil {
		a.stop()
		return
	}
	a.cancelEdit()
}

// selectText shows a reply's text as written, selectable, in place of its
// rendered Markdown (which cannot be selected), or the Markdown again.
func (a *App) selectText(id int64) {
	v := a.chat.view(id)
	for _, m := range a.msgs {
		if m.ID == id && v != nil {
			v.toggleSelect(displayText(m))
			return
		}
	}
}

// copyCode puts the code blocks of a reply on the clipboard, a blank line
// between two.
func (a *App) copyCode(id int64) {
	for _, m := range a.msgs {
		if m.ID == id {
			a.fyne.Clipboard().SetContent(strings.Join(codeBlocks(displayText(m)), "\n\n"))
			a.copied(id, "Copy code")
			return
		}
	}
}

// copyMessage puts a message's text on the clipboard.
func (a *App) copyMessage(id int64) {
	for _, m := range a.msgs {
		if m.ID == id {
			a.fyne.Clipboard().SetContent(displayText(m))
			a.copied(id, "Copy")
			return
		}
	}
}

// copied shows on a message's button that its copy was taken: "Copied" for
// two seconds, then the button as it was.
func (a *App) copied(id int64, label string) {
	v := a.chat.view(id)
	if v == nil {
		return
	}
	b := v.buttons[label]
	if b == nil {
		return
	}
	text := b.Text
	b.SetText("Copied")
	time.AfterFunc(2*time.Second, func() {
		a.do(func() {
			if b.Text == "Copied" {
				b.SetText(text)
			}
		})
	})
}

// history is the conversation the model answers: the system prompt and every
// message before the reply, partial replies included as they were shown.
func history(conv store.Conversation, msgs []store.Message, replyID int64) []engine.Message {
	var out []engine.Message
	if conv.SystemPrompt != "" {
		out = append(out, engine.Message{Role: "system", Content: conv.SystemPrompt})
	}
	for _, m := range msgs {
		if m.ID >= replyID {
			break
		}
		if m.Role == store.RoleAssistant && (m.Status == store.StatusError || displayText(m) == "" && m.Reasoning == "") {
			continue // a failed or empty reply is not something the model said
		}
		msg := engine.Message{Role: m.Role, Content: displayText(m), Reasoning: m.Reasoning}
		if len(m.Images) > 0 { // the images, then the question (the processor's usual order)
			msg.Content = ""
			for range m.Images {
				msg.Parts = append(msg.Parts, engine.Part{Image: true})
			}
			msg.Parts = append(msg.Parts, engine.Part{Text: displayText(m)})
		}
		out = append(out, msg)
	}
	return out
}

// startReply reloads the chat (now ending with the empty reply) and starts
// generating it.
func (a *App) startReply(reply store.Message) {
	conv, err := a.store.Conversation(reply.ConversationID)
	if err == nil {
		var msgs []store.Message
		if msgs, err = a.store.Messages(conv.ID); err == nil {
			a.startGeneration(conv, history(conv, msgs, reply.ID), requestImages(msgs, reply.ID), reply)
			a.reloadConversations()
			a.showConversation(&conv, msgs)
			return
		}
	}
	if !errors.Is(err, store.ErrNotFound) {
		a.showError("The chat could not be read", err)
	}
}
