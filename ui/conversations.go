package ui

import (
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"bagel/store"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
)

// defaultTitle names a chat until its first message gives it a title.
const defaultTitle = "New chat"

// reloadConversations reads the list of chats.
func (a *App) reloadConversations() {
	convs, err := a.store.Conversations()
	if a.chatFilter != "" { // the chat list's search
		convs, err = a.store.Search(a.chatFilter)
	}
	if err != nil {
		a.showError("The chats could not be read", err)
		return
	}
	a.convs = convs
	a.chats.refresh()
	a.win.SetMainMenu(a.mainMenu()) // the Window menu lists the chats by title
}

// selectConversation shows the chat id. The one being answered keeps streaming
// in the background and shows its live reply when selected again.
func (a *App) selectConversation(id int64) {
	if a.conv != nil && a.conv.ID != id {
		a.dropUnusedConversation()
	}
	conv, err := a.store.Conversation(id)
	if err != nil {
		a.showError("The chat could not be opened", err)
		return
	}
	msgs, err := a.store.Messages(id)
	if err != nil {
		a.showError("The chat could not be opened", err)
		return
	}
	if g := a.gens[id]; g != nil {
		// The database has the reply as of its last save; the screen wants it live.
		for i := range msgs {
			if msgs[i].ID == g.latest.ID {
				msgs[i] = g.latest
			}
		}
	}
	a.showConversation(&conv, msgs)
}

// showConversation puts conv (nil: none yet) on screen. Moving to another
// chat ends an edit in progress and swaps the composer's draft: each chat
// keeps its own.
func (a *App) showConversation(conv *store.Conversation, msgs []store.Message) {
	if from, to := convID(a.conv), convID(conv); from != to {
		if a.editing == nil { // while editing, the draft was put aside already
			a.putDraftAside(from)
		}
		a.editing = nil
		a.composer.entry.SetText(a.takeDraft(to))
	}
	a.conv, a.msgs = conv, msgs
	a.chat.show()
	a.chats.refresh()
	a.composer.refresh()
	a.countTokensSoon()
	a.win.SetMainMenu(a.mainMenu()) // the Window menu checks the chat shown
}

// newConversation starts an empty chat; an empty chat on screen is reused
// rather than piling up empty ones.
func (a *App) newConversation() {
	if a.conv != nil && len(a.msgs) == 0 {
		a.composer.focus()
		return
	}
	conv, err := a.store.CreateConversation(defaultTitle, "")
	if err != nil {
		a.showError("A new chat could not be created", err)
		return
	}
	if a.chatFilter != "" {
		a.chats.search.SetText("") // the new chat shows in the whole list
	}
	a.reloadConversations()
	a.showConversation(&conv, nil)
	a.composer.focus()
}

// dropUnusedConversation deletes the chat on screen, when it is about to be
// left, if nothing was ever put in it: no message, the default title, no
// system prompt, no draft. "New chat" then never leaves empty entries behind in the list.
func (a *App) dropUnusedConversation() {
	c := a.conv
	if len(a.msgs) != 0 || c.Title != defaultTitle || c.SystemPrompt != "" || a.gens[c.ID] != nil ||
		strings.TrimSpace(a.composer.entry.Text) != "" {
		return
	}
	if err := a.store.DeleteConversation(c.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		a.showError("An empty chat could not be removed", err)
		return
	}
	a.conv, a.msgs = nil, nil
	a.reloadConversations()
}

// ensureConversation returns the chat on screen, creating one if there is none.
func (a *App) ensureConversation() (*store.Conversation, error) {
	if a.conv != nil {
		return a.conv, nil
	}
	conv, err := a.store.CreateConversation(defaultTitle, "")
	if err != nil {
		return nil, err
	}
	a.conv = &conv
	a.reloadConversations()
	return a.conv, nil
}

// titleFrom makes a chat title from its first message: the first line, cut at
// a word near 48 characters.
func titleFrom(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) <= 48 {
		return line
	}
	r := []rune(line)[:48]
	cut := string(r)
	if i := strings.LastIndex(cut, " "); i > 24 {
		cut = cut[:i]
	}
	return cut + "…"
}

// renameConversation asks for a new title for the chat on screen.
// duplicateConversation copies the chat on screen (its messages as shown)
// and shows the copy.
func (a *App) duplicateConversation() {
	if a.conv == nil {
		return
	}
	c, err := a.store.DuplicateConversation(a.conv.ID)
	if err != nil {
		a.showError("The chat could not be duplicated", err)
		return
	}
	if a.chatFilter != "" {
		a.chats.search.SetText("")
	}
	a.reloadConversations()
	a.selectConversation(c.ID)
}

// pinConversation pins the chat on screen to the top of the list, or unpins it.
func (a *App) pinConversation(pinned bool) {
	if a.conv == nil {
		return
	}
	if err := a.store.SetPinned(a.conv.ID, pinned); err != nil {
		a.showError("The chat could not be pinned", err)
		return
	}
	a.conv.Pinned = pinned
	a.reloadConversations()
}

func (a *App) renameConversation() {
	if a.conv == nil {
		return
	}
	id := a.conv.ID
	entry := widget.NewEntry()
	entry.SetText(a.conv.Title)
	a.showDialog(dialog.NewForm("Rename chat", "Rename", "Cancel", []*widget.FormItem{widget.NewFormItem("Title", entry)}, func(ok bool) {
		title := strings.TrimSpace(entry.Text)
		if !ok || title == "" {
			return
		}
		a.setTitle(id, title)
	}, a.win), nil)
	a.win.Canvas().Focus(entry)
}

func (a *App) setTitle(id int64, title string) {
	if err := a.store.RenameConversation(id, title); err != nil {
		a.showError("The chat could not be renamed", err)
		return
	}
	if a.conv != nil && a.conv.ID == id {
		a.conv.Title = title
		a.chat.showHeader()
	}
	a.reloadConversations()
}

// editSystemPrompt edits the system prompt of the chat on screen (creating the
// chat if needed); it applies from the next reply.
func (a *App) editSystemPrompt() {
	conv, err := a.ensureConversation()
	if err != nil {
		a.showError("A new chat could not be created", err)
		return
	}
	id := conv.ID
	entry := widget.NewMultiLineEntry()
	entry.Wrapping = fyne.TextWrapWord
	entry.SetMinRowsVisible(6)
	entry.SetPlaceHolder("For example: You are a concise assistant. Answer in English.")
	entry.SetText(conv.SystemPrompt)
	d := dialog.NewForm("System prompt for “"+conv.Title+"”", "Save", "Cancel",
		[]*widget.FormItem{widget.NewFormItem("", entry)}, func(ok bool) {
			if ok {
				a.setSystemPrompt(id, strings.TrimSpace(entry.Text))
			}
		}, a.win)
	d.Resize(fyne.NewSize(560, 300))
	a.showDialog(d, nil)
	a.win.Canvas().Focus(entry)
}

func (a *App) setSystemPrompt(id int64, prompt string) {
	if err := a.store.SetSystemPrompt(id, prompt); err != nil {
		a.showError("The system prompt could not be saved", err)
		return
	}
	if a.conv != nil && a.conv.ID == id {
		a.conv.SystemPrompt = prompt
		a.chat.showHeader()
	}
	a.reloadConversations()
}

// deleteConversation asks, then deletes the chat on screen; one being answered
// is stopped first.
func (a *App) deleteConversation() {
	if a.conv == nil {
		return
	}
	conv := *a.conv
	a.confirmDanger("Delete chat", "Delete “"+conv.Title+"” and its messages? This cannot be undone.", func(ok bool) {
		if ok {
			a.removeConversation(conv.ID)
		}
	})
}

func (a *App) removeConversation(id int64) {
	remove := func() {
		if a.store == nil {
			return // the window has closed
		}
		if err := a.store.DeleteConversation(id); err != nil && !errors.Is(err, store.ErrNotFound) {
			a.showError("The chat could not be deleted", err)
			return
		}
		a.reloadConversations()
		if a.conv != nil && a.conv.ID == id {
			if len(a.convs) > 0 {
				a.selectConversation(a.convs[0].ID)
			} else {
				a.showConversation(nil, nil)
			}
		}
		delete(a.drafts, id) // put aside as the chat left the screen
	}
	if g := a.gens[id]; g != nil {
		// Wait for the generation to save its last words before deleting them.
		g.cancel()
		a.goSafe("deleting a chat", func() {
			<-g.done
			a.do(remove)
		})
		return
	}
	remove()
}

// conversationTitle is the title of chat id as the chat list shows it.
func (a *App) conversationTitle(id int64) string {
	for _, c := range a.convs {
		if c.ID == id {
			return c.Title
		}
	}
	return defaultTitle
}

// convID is conv's id; 0 stands for "no chat yet".
func convID(conv *store.Conversation) int64 {
	if conv == nil {
		return 0
	}
	return conv.ID
}

// putDraftAside keeps the composer's text as chat id's draft, in memory and in
// the chat database (where it outlives the app).
func (a *App) putDraftAside(id int64) {
	if a.draftImages == nil {
		a.draftImages = map[int64][]store.Image{}
	}
	if len(a.composer.attached) > 0 { // the chat's attached images go aside with its text
		a.draftImages[id] = a.composer.attached
	} else {
		delete(a.draftImages, id)
	}
	a.composer.attached = nil
	a.composer.showAttached()
	text := a.composer.entry.Text
	if strings.TrimSpace(text) != "" {
		a.drafts[id] = text
	} else {
		delete(a.drafts, id)
	}
	a.saveDraft(id, text)
}

// draftSaveDelay is how long the composer rests before what it holds is saved
// as the chat's draft: a crash loses at most that much typing.
const draftSaveDelay = 500 * time.Millisecond

// draftChanged saves the composer's text as the chat's draft once typing
// pauses; an edit of a message in the composer is not a draft.
func (a *App) draftChanged(text string) {
	a.countTokensSoon()
	if a.conv == nil || a.editing != nil {
		return
	}
	id, st := a.conv.ID, a.store
	if a.draftTimer != nil {
		a.draftTimer.Stop()
	}
	// The write runs on the timer's goroutine (the store is safe for that):
	// typing costs the UI thread nothing but this timer.
	a.draftTimer = time.AfterFunc(draftSaveDelay, func() {
		if err := st.SetDraft(id, text); err != nil && !errors.Is(err, store.ErrNotFound) {
			a.do(func() { a.showError("The draft could not be saved", err) })
		}
	})
}

// saveDraft stores text as chat id's draft; a failure is shown, the text stays
// in the composer.
func (a *App) saveDraft(id int64, text string) {
	if id == 0 || a.store == nil {
		return
	}
	if err := a.store.SetDraft(id, text); err != nil && !errors.Is(err, store.ErrNotFound) {
		a.showError("The draft could not be saved", err)
	}
}

// takeDraft returns chat id's draft ("" when none), which the composer now holds.
func (a *App) takeDraft(id int64) string {
	d := a.drafts[id]
	delete(a.drafts, id)
	a.composer.attached = a.draftImages[id] // its images come back with its text
	delete(a.draftImages, id)
	a.composer.showAttached()
	return d
}
