package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// overflowLayout lays a row of buttons out from the left while they fit; the
// ones that do not are hidden and offered instead by the last object, a
// "more" button (its menu lists them): a message's actions never widen a
// narrow window, and a wide one shows them all. Its minimum width is the
// more button's.
type overflowLayout struct {
	hidden []*widget.Button // the buttons the last layout left out, in order
	labels map[*widget.Button]string
}

func (l *overflowLayout) MinSize(objects []fyne.CanvasObject) fyne.Size {
	var h float32
	for _, o := range objects {
		h = max(h, o.MinSize().Height)
	}
	if len(objects) == 0 {
		return fyne.Size{}
	}
	return fyne.NewSize(objects[len(objects)-1].MinSize().Width, h)
}

func (l *overflowLayout) Layout(objects []fyne.CanvasObject, size fyne.Size) {
	if len(objects) == 0 {
		return
	}
	buttons, more := objects[:len(objects)-1], objects[len(objects)-1]
	pad := theme.Padding()
	var all float32
	for i, b := range buttons {
		if i > 0 {
			all += pad
		}
		all += b.MinSize().Width
	}
	room := size.Width
	if all > size.Width {
		room -= more.MinSize().Width + pad // some go to the menu
	}
	// The buttons that fit, in order (once one is out, the rest are), laid
	// flush right with the more button after them.
	l.hidden = l.hidden[:0]
	var shown []fyne.CanvasObject
	width := float32(0)
	for _, o := range buttons {
		w := o.MinSize().Width
		if len(l.hidden) > 0 || width+w > room {
			o.Hide()
			if b, ok := o.(*widget.Button); ok {
				l.hidden = append(l.hidden, b)
			}
			continue
		}
		shown = append(shown, o)
		width += w + pad
	}
	if len(l.hidden) > 0 {
		shown = append(shown, more)
		width += more.MinSize().Width + pad
	} else {
		more.Hide()
	}
	x := size.Width - (width - pad)
	for _, o := range shown {
		w := o.MinSize().Width
		o.Show()
		o.Move(fyne.NewPos(x, 0))
		o.Resize(fyne.NewSize(w, size.Height))
		x += w + pad
	}
}

// newOverflowRow is an empty row of buttons with its more button, whose
// menu runs the buttons the row had no room for (setOverflowButtons fills
// it; labels name the buttons without text in the menu).
func newOverflowRow() *fyne.Container {
	l := &overflowLayout{labels: map[*widget.Button]string{}}
	more := widget.NewButtonWithIcon("", theme.MoreHorizontalIcon(), nil)
	more.Importance = widget.LowImportance
	row := &fyne.Container{Layout: l, Objects: []fyne.CanvasObject{more}}
	more.OnTapped = func() {
		c := fyne.CurrentApp().Driver().CanvasForObject(more)
		if m := l.menu(); c != nil && len(m.Items) > 0 {
			widget.ShowPopUpMenuAtRelativePosition(m, c, fyne.NewPos(0, more.Size().Height), more)
		}
	}
	return row
}

// setOverflowButtons puts buttons (named by labels, in order) in row, before
// its more button.
func setOverflowButtons(row *fyne.Container, buttons []*widget.Button, labels []string) {
	l := row.Layout.(*overflowLayout)
	more := row.Objects[len(row.Objects)-1]
	clear(l.labels)
	objects := make([]fyne.CanvasObject, 0, len(buttons)+1)
	for i, b := range buttons {
		objects = append(objects, b)
		l.labels[b] = labels[i]
	}
	row.Objects = append(objects, more)
	row.Refresh()
}

// menu is the more button's: the hidden buttons, in order.
func (l *overflowLayout) menu() *fyne.Menu {
	var items []*fyne.MenuItem
	for _, b := range l.hidden {
		item := fyne.NewMenuItem(l.labels[b], b.OnTapped)
		item.Disabled = b.Disabled()
		items = append(items, item)
	}
	return fyne.NewMenu("", items...)
}
