package ui

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/dustin/go-humanize"
)

// chatList is the sidebar: a New chat button over the saved conversations, the
// most recent first.
type chatList struct {
	a       *App
	root    fyne.CanvasObject
	list    *widget.List
	newChat *widget.Button
	// search filters the list to the chats whose title or text holds it.
	search *widget.Entry
	// menu is a row's right-click menu last shown (tests reach it).
	menu *fyne.Menu
	// quiet is set while the list's selection is changed from code, so that
	// OnSelected only reacts to the user.
	quiet bool
}

func newChatList(a *App) *chatList {
	c := &chatList{a: a}
	c.list = widget.NewList(
		func() int { return len(a.convs) },
		func() fyne.CanvasObject {
			title := widget.NewLabel("")
			title.Truncation = fyne.TextTruncateEllipsis
			when := widget.NewLabel("")
			when.Importance = widget.LowImportance
			when.SizeName = theme.SizeNameCaptionText
			return newChatRow(c, container.NewVBox(title, when))
		},
		func(id widget.ListItemID, o fyne.CanvasObject) {
			if id >= len(a.convs) {
				return
			}
			conv := a.convs[id]
			row := o.(*chatRow)
			row.id = conv.ID
			box := row.box
			title := conv.Title
			if conv.Pinned {
				title = "📌 " + title
			}
			box.Objects[0].(*widget.Label).SetText(title)
			when := humanize.Time(conv.Updated)
			if a.gens[conv.ID] != nil {
				when = "answering…"
			}
			box.Objects[1].(*widget.Label).SetText(when)
		},
	)
	c.list.OnSelected = func(id widget.ListItemID) {
		if c.quiet || id >= len(a.convs) {
			return
		}
		a.selectConversation(a.convs[id].ID)
	}
	c.newChat = widget.NewButtonWithIcon("New chat", theme.ContentAddIcon(), a.newConversation)
	c.newChat.Importance = widget.HighImportance
	c.search = widget.NewEntry()
	c.search.SetPlaceHolder("Search chats")
	c.search.OnChanged = func(text string) {
		a.chatFilter = strings.TrimSpace(text)
		a.reloadConversations()
	}
	c.root = container.NewBorder(container.NewVBox(container.NewPadded(c.newChat), c.search), nil, nil, nil, c.list)
	return c
}

// refresh redraws the list and selects the conversation on screen.
func (c *chatList) refresh() {
	c.quiet = true
	defer func() { c.quiet = false }()
	c.list.Refresh()
	if c.a.conv == nil {
		c.list.UnselectAll()
		return
	}
	for i, conv := range c.a.convs {
		if conv.ID == c.a.conv.ID {
			c.list.Select(i)
			return
		}
	}
	c.list.UnselectAll()
}

// chatRow is a chat list entry; a right click (or a two-finger tap) opens
// its menu: Pin (or Unpin), Rename, Duplicate, Export, Delete — acting on that chat, which
// is shown first.
type chatRow struct {
	widget.BaseWidget
	list *chatList
	box  *fyne.Container
	id   int64
}

func newChatRow(l *chatList, box *fyne.Container) *chatRow {
	r := &chatRow{list: l, box: box}
	r.ExtendBaseWidget(r)
	return r
}

func (r *chatRow) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(r.box) }

// TappedSecondary shows the chat and its menu where the click was.
func (r *chatRow) TappedSecondary(ev *fyne.PointEvent) {
	a := r.list.a
	if a.conv == nil || a.conv.ID != r.id {
		a.selectConversation(r.id)
	}
	pin := fyne.NewMenuItem("Pin to top", func() { a.pinConversation(true) })
	if a.conv != nil && a.conv.Pinned {
		pin = fyne.NewMenuItem("Unpin", func() { a.pinConversation(false) })
	}
	menu := fyne.NewMenu("",
		pin,
		fyne.NewMenuItem("Rename…", a.renameConversation),
		fyne.NewMenuItem("Duplicate", a.duplicateConversation),
		fyne.NewMenuItem("Export as Markdown…", a.exportConversation),
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("Delete…", a.deleteConversation),
	)
	r.list.menu = menu
	widget.ShowPopUpMenuAtPosition(menu, a.win.Canvas(), ev.AbsolutePosition)
}
