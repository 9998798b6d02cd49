package ui

import (
	"image/color"

	"bagel/store"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
)

// A long chat opens at its end, and the messages far above it are not laid
// out until the reader scrolls near them: each is a placeholder of about its
// height (lazyView), which becomes the message's view once it comes within a
// screen of the visible part. Rendering a reply (Markdown to rich text, its
// lines shaped and wrapped) is most of what opening a chat costs: five
// replies of ~400 tokens took ~190 ms of CPU to open rendered whole, ~110
// so (Xvfb, software GL; docs/benchmarks.md).

// eagerScreens is how many screens of messages, from the end, a chat opens
// with rendered; eagerMessages how many at least.
const (
	eagerScreens  = 2
	eagerMessages = 4
)

// lazyView stands in for a message not rendered yet: slot holds a
// transparent block of the message's estimated height until materialize
// puts the message's view there.
type lazyView struct {
	msg     store.Message
	author  string
	actions []messageAction
	slot    *fyne.Container
}

// newLazyView is m's placeholder, estimated at width points wide.
func newLazyView(m store.Message, author string, actions []messageAction, width float32) *lazyView {
	block := canvas.NewRectangle(color.Transparent)
	block.SetMinSize(fyne.NewSize(1, estimateHeight(m, width)))
	return &lazyView{msg: m, author: author, actions: actions, slot: &fyne.Container{Layout: stackLayout{}, Objects: []fyne.CanvasObject{block}}}
}

// estimateHeight is about the height m's view takes at width points: its
// header, and its text's lines at the theme's text size (an average glyph
// half the size wide), a line a paragraph at least.
func estimateHeight(m store.Message, width float32) float32 {
	size := theme.TextSize()
	perLine := max(1, int(width/(size*0.5)))
	lines := 0
	for _, para := range splitLines(displayText(m)) {
		lines += 1 + len(para)/perLine
	}
	return 3*size + float32(lines)*size*1.45
}

// splitLines cuts s at its newlines.
func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// stackLayout lays its one object over its whole size (its minimum is the
// object's): the slot a placeholder's block and then the view fill.
type stackLayout struct{}

func (stackLayout) MinSize(objects []fyne.CanvasObject) fyne.Size {
	var s fyne.Size
	for _, o := range objects {
		s = s.Max(o.MinSize())
	}
	return s
}

func (stackLayout) Layout(objects []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objects {
		o.Move(fyne.Position{})
		o.Resize(size)
	}
}

// view is message id's view, rendered now if it was waiting (nil: no such
// message on screen).
func (c *chatView) view(id int64) *messageView {
	if v, ok := c.views[id]; ok {
		return v
	}
	if l, ok := c.lazy[id]; ok {
		return c.materialize(l)
	}
	return nil
}

// materialize renders l's message into its slot.
func (c *chatView) materialize(l *lazyView) *messageView {
	v := newMessageView(l.msg, l.author, l.actions)
	v.post = c.a.do
	v.setImages(c.a.store.ImagePath)
	c.views[l.msg.ID] = v
	delete(c.lazy, l.msg.ID)
	l.slot.Objects = []fyne.CanvasObject{v.root}
	l.slot.Refresh()
	return v
}

// materializeNear renders the waiting messages within a screen of the part
// shown, keeping what the reader sees in place: a message above it that
// grows or shrinks as it is rendered moves the offset by as much.
func (c *chatView) materializeNear() {
	if len(c.lazy) == 0 {
		return
	}
	screen := c.scroll.Size().Height
	top := c.scroll.Offset.Y
	slots := make(map[fyne.CanvasObject]*lazyView, len(c.lazy))
	for _, l := range c.lazy {
		slots[l.slot] = l
	}
	var shift float32
	for _, o := range c.box.Objects {
		l, ok := slots[o]
		if !ok {
			continue
		}
		y, h := o.Position().Y, o.Size().Height
		if y+h < top-screen || y > top+2*screen {
			continue
		}
		c.materialize(l)
		if y+h <= top { // above the view: what is shown moves by its change
			shift += l.slot.MinSize().Height - h
		}
	}
	if shift != 0 {
		c.box.Refresh()
		c.scroll.ScrollToOffset(fyne.NewPos(0, top+shift))
	}
}
