package ui

import (
	"fmt"
	"strings"

	"bagel/store"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// chatView is the conversation on screen: a header with the chat's actions, the
// messages in a scroll, and, for an empty chat, a welcome that says what to do.
type chatView struct {
	a       *App
	root    fyne.CanvasObject
	title   *widget.Label
	system  *widget.Label
	actions []*widget.Button // disabled without a chat
	box     *fyne.Container
	scroll  *container.Scroll
	views   map[int64]*messageView
	lazy    map[int64]*lazyView // the messages waiting for the reader to come near (lazy.go)
	welcome *fyne.Container
	shown   int64 // the chat the view was last built for (0: none)
}

func newChatView(a *App) *chatView {
	c := &chatView{a: a, views: map[int64]*messageView{}, lazy: map[int64]*lazyView{}}
	c.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	c.title.Truncation = fyne.TextTruncateEllipsis
	c.system = widget.NewLabel("")
	c.system.Importance = widget.LowImportance
	c.system.Truncation = fyne.TextTruncateEllipsis
	// Icons only (the Chat and File menus name them): the header stays narrow
	// enough for a window half a laptop screen wide.
	c.actions = []*widget.Button{
		widget.NewButtonWithIcon("", theme.DocumentCreateIcon(), a.renameConversation),
		widget.NewButtonWithIcon("", theme.DocumentSaveIcon(), a.exportConversation),
		widget.NewButtonWithIcon("", theme.DeleteIcon(), a.deleteConversation),
	}
	systemBtn := widget.NewButtonWithIcon("", theme.SettingsIcon(), a.editSystemPrompt)
	systemBtn.Importance = widget.LowImportance
	buttons := container.NewHBox(systemBtn)
	for _, b := range c.actions {
		b.Importance = widget.LowImportance
		buttons.Add(b)
	}
	header := container.NewBorder(nil, nil, nil, buttons, container.NewVBox(c.title, c.system))

	c.box = container.NewVBox()
	c.scroll = container.NewVScroll(c.box)
	c.scroll.OnScrolled = func(fyne.Position) { c.materializeNear() }
	c.welcome = container.New(maxWidth{welcomeWidth})
	c.root = container.NewBorder(container.NewVBox(header, widget.NewSeparator()), nil, nil, nil,
		container.NewStack(c.scroll, c.welcome))
	return c
}

// show rebuilds the view for the app's conversation and messages. Another
// chat opens at its end; the same chat rebuilt (a reply finished, an edit)
// keeps a reader who scrolled up where they were.
func (c *chatView) show() {
	a := c.a
	keep := c.shown == convID(a.conv) && !c.atBottom()
	offset := c.scroll.Offset
	c.shown = convID(a.conv)
	c.showHeader()
	c.box.RemoveAll()
	// A message shown before keeps its view (its rendered text, its Thinking
	// section as the user left it); only its buttons change. A finished long
	// reply is then not laid out again.
	old := c.views
	c.views, c.lazy = map[int64]*messageView{}, map[int64]*lazyView{}
	eager := c.eagerFrom()
	lastUser, lastReply := -1, -1
	for i, m := range a.msgs {
		if m.Role == store.RoleUser {
			lastUser = i
		} else {
			lastReply = i
		}
	}
	busy := a.shownGen() != nil
	for i, m := range a.msgs {
		if a.editing != nil && m.ID >= a.editing.ID {
			break // the turn being edited is in the composer, not here
		}
		actions := []messageAction{{"Copy", theme.ContentCopyIcon(), func() { a.copyMessage(m.ID) }, false}}
		if m.Role == store.RoleAssistant && displayText(m) != "" {
			// A word, no icon: an eye alone did not say that it makes the text
			// selectable, and an icon beside the word would widen the header
			// past a half-screen window (TestNarrowWindow).
			actions = append(actions, messageAction{"Select", nil, func() { a.selectText(m.ID) }, false})
		}
		if m.Role == store.RoleAssistant && len(codeBlocks(displayText(m))) > 0 {
			actions = append(actions, messageAction{"Copy code", theme.FileTextIcon(), func() { a.copyCode(m.ID) }, true})
		}
		switch {
		case busy:
		case m.Role == store.RoleUser:
			actions = append(append(actions, c.versionActions(m)...),
				messageAction{"Edit", theme.DocumentCreateIcon(), func() { a.editMessage(m.ID) }, false})
		case i == lastReply && lastReply > lastUser:
			actions = append(append(actions, c.versionActions(m)...),
				messageAction{"Regenerate", theme.ViewRefreshIcon(), a.regenerate, false})
		}
		v, ok := old[m.ID]
		switch {
		case ok:
			v.update(m)
			v.setActions(actions)
			v.setImages(c.a.store.ImagePath)
		case i < eager: // far above the end: rendered when the reader comes near
			l := newLazyView(m, c.author(m), actions, c.width())
			c.lazy[m.ID] = l
			c.box.Add(l.slot)
			continue
		default:
			v = newMessageView(m, c.author(m), actions)
			v.post = c.a.do
			v.setImages(c.a.store.ImagePath)
		}
		c.views[m.ID] = v
		c.box.Add(v.root)
	}
	c.refreshEmpty()
	if keep {
		c.scroll.ScrollToOffset(offset)
	} else {
		c.scroll.ScrollToBottom()
	}
}

// width is the messages' width (a guess before the first layout).
func (c *chatView) width() float32 {
	if w := c.scroll.Size().Width; w > 0 {
		return w
	}
	return 700
}

// eagerFrom is the first of the app's messages rendered when the chat
// opens: the last eagerMessages, and as many more as fill eagerScreens of
// the view, estimated; those before it wait (lazy.go).
func (c *chatView) eagerFrom() int {
	msgs := c.a.msgs
	screen := c.scroll.Size().Height
	if screen <= 0 {
		screen = 800
	}
	var height float32
	i := len(msgs)
	for i > 0 && (len(msgs)-i < eagerMessages || height < eagerScreens*screen) {
		i--
		height += estimateHeight(msgs[i], c.width())
	}
	return i
}

// versionActions are a message's ‹ n/N › switch when it has versions (the
// last reply regenerated, a question edited): ‹ shows the version before, ›
// the one after.
func (c *chatView) versionActions(m store.Message) []messageAction {
	a := c.a
	ids, cur, err := a.store.Versions(m.ConversationID, m.ID)
	if err != nil || len(ids) < 2 {
		return nil
	}
	show := func(i int) func() { // nil, a disabled button, past either end
		if i < 0 || i >= len(ids) {
			return nil
		}
		return func() { a.showVersion(ids[i]) }
	}
	return []messageAction{
		{fmt.Sprintf("‹ %d/%d", cur+1, len(ids)), nil, show(cur - 1), false},
		{"›", nil, show(cur + 1), false},
	}
}

// atBottom reports whether the view shows the end of the chat (within two
// lines), where a streaming reply is followed down.
func (c *chatView) atBottom() bool {
	return c.scroll.Offset.Y >= c.box.MinSize().Height-c.scroll.Size().Height-2*theme.TextSize()
}

// author is the header of a message: "You", or the model that wrote a reply.
func (c *chatView) author(m store.Message) string {
	if m.Role == store.RoleUser {
		return "You"
	}
	if m.Model != "" {
		return m.Model
	}
	return "Assistant"
}

func (c *chatView) showHeader() {
	a := c.a
	if a.conv == nil {
		c.title.SetText(defaultTitle)
		c.system.SetText("no system prompt")
		for _, b := range c.actions {
			b.Disable()
		}
		return
	}
	c.title.SetText(a.conv.Title)
	if p := strings.TrimSpace(a.conv.SystemPrompt); p != "" {
		c.system.SetText("System: " + strings.ReplaceAll(p, "\n", " "))
	} else {
		c.system.SetText("no system prompt")
	}
	for _, b := range c.actions {
		b.Enable()
	}
}

// updateMessage shows a new state of a streaming reply, following it down when
// the view was at the bottom (a reader who scrolled up is left alone).
func (c *chatView) updateMessage(m store.Message) {
	v, ok := c.views[m.ID]
	if !ok {
		return
	}
	atBottom := c.atBottom()
	v.update(m)
	if atBottom {
		c.scroll.ScrollToBottom()
	}
}

// welcomeWidth is the widest the empty chat's welcome grows.
const welcomeWidth = 560

// maxWidth lays its objects out as wide as the space, up to Width, at their
// height, centred both ways; its minimum is its objects' (a wrapping label's
// is narrow).
type maxWidth struct{ Width float32 }

func (m maxWidth) MinSize(objects []fyne.CanvasObject) fyne.Size {
	var s fyne.Size
	for _, o := range objects {
		s = s.Max(o.MinSize())
	}
	return s
}

func (m maxWidth) Layout(objects []fyne.CanvasObject, size fyne.Size) {
	w := min(size.Width, m.Width)
	for _, o := range objects {
		o.Resize(fyne.NewSize(w, o.MinSize().Height))
		h := min(o.MinSize().Height, size.Height) // wrapped at w
		o.Resize(fyne.NewSize(w, h))
		o.Move(fyne.NewPos((size.Width-w)/2, (size.Height-h)/2))
	}
}

// refreshEmpty shows the welcome when the chat has no messages: what to do
// first, depending on whether a model is loaded.
func (c *chatView) refreshEmpty() {
	a := c.a
	if len(c.box.Objects) > 0 {
		c.welcome.Hide()
		return
	}
	var items []fyne.CanvasObject
	big := widget.NewLabelWithStyle("", fyne.TextAlignCenter, fyne.TextStyle{Bold: true})
	big.SizeName = theme.SizeNameHeadingText
	big.Wrapping = fyne.TextWrapWord
	hint := widget.NewLabel("")
	hint.Alignment = fyne.TextAlignCenter
	hint.Importance = widget.LowImportance
	hint.Wrapping = fyne.TextWrapWord
	switch {
	case a.ready() && a.remote == nil && isDemo(a.modelDir):
		big.SetText("Ask the demo what a word means")
		hint.SetText("A 5 MB model trained on the Jargon File and The Devil's Dictionary: try “What is a kludge?” or “What is marriage?”. It knows those books and nothing else.")
		models := widget.NewButtonWithIcon("Models… (download a real one)", theme.DownloadIcon(), a.showLibrary)
		items = append(items, big, hint, container.NewCenter(models))
	case a.ready():
		big.SetText("Ask " + a.modelName() + " anything")
		hint.SetText("Enter sends · Shift+Enter adds a line · Esc stops · Ctrl/Cmd+N starts a new chat")
		items = append(items, big, hint)
	case a.loading:
		big.SetText("Loading the model…")
		items = append(items, big)
	default:
		big.SetText("Drop a model folder here")
		hint.SetText("an MLX-format Qwen3.5 checkpoint, e.g. mlx-community/Qwen3.5-35B-A3B-4bit")
		open := widget.NewButtonWithIcon("Open model folder…", theme.FolderOpenIcon(), a.chooseModelFolder)
		open.Importance = widget.HighImportance
		models := widget.NewButtonWithIcon("Download or pick a model…", theme.DownloadIcon(), a.showLibrary)
		items = append(items, widget.NewIcon(theme.DownloadIcon()), big, hint, container.NewCenter(container.NewVBox(open, models)))
		a.fetchRecommendations()
		items = append(items, a.recommendedItems()...)
		if len(a.settings.Recent) > 0 {
			recent := widget.NewLabelWithStyle("Recent models", fyne.TextAlignCenter, fyne.TextStyle{Bold: true})
			items = append(items, recent)
			for _, dir := range a.settings.Recent {
				b := widget.NewButton(modelLabel(dir), func() { a.openModel(dir) })
				b.Importance = widget.LowImportance
				items = append(items, b)
			}
		}
	}
	items = append(items, a.pausedDownloadItems()...)
	// At most welcomeWidth wide, narrower in a narrow window: the labels wrap.
	c.welcome.Objects = []fyne.CanvasObject{container.NewVBox(items...)}
	c.welcome.Show()
	c.welcome.Refresh()
}
