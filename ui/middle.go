package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"
)

// middleLabel is a one-line label that, when its text does not fit, keeps
// its start and end and puts an ellipsis in the middle ("mlx-community/
// Qwen3.5-1…A10B-4bit"): a model's name ends in its size and quantization,
// which an ellipsis at the end would hide. Its minimum width is a few
// characters, so a long name never widens the window.
type middleLabel struct {
	widget.BaseWidget
	full  string
	label *widget.Label
}

func newMiddleLabel(style fyne.TextStyle) *middleLabel {
	m := &middleLabel{label: widget.NewLabelWithStyle("", fyne.TextAlignLeading, style)}
	m.ExtendBaseWidget(m)
	return m
}

// SetText shows text, cut to the label's width.
func (m *middleLabel) SetText(text string) {
	m.full = text
	m.fit(m.Size().Width)
}

// fit shows as much of the text as width holds.
func (m *middleLabel) fit(width float32) {
	shown := m.full
	if width > 0 && m.measure(shown) > width {
		r := []rune(m.full)
		lo, hi := 0, len(r) // the most runes kept that fit
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if m.measure(middleCut(r, mid)) <= width {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		shown = middleCut(r, lo)
	}
	if m.label.Text != shown {
		m.label.SetText(shown)
	}
}

// middleCut keeps n runes of r, half from each end, with an ellipsis
// between.
func middleCut(r []rune, n int) string {
	if n >= len(r) {
		return string(r)
	}
	head := (n + 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(n-head):])
}

// measure is the label's width for text (its padding included).
func (m *middleLabel) measure(text string) float32 {
	probe := widget.NewLabelWithStyle(text, fyne.TextAlignLeading, m.label.TextStyle)
	return probe.MinSize().Width
}

func (m *middleLabel) CreateRenderer() fyne.WidgetRenderer { return &middleRenderer{m: m} }

type middleRenderer struct{ m *middleLabel }

func (r *middleRenderer) Layout(size fyne.Size) {
	r.m.fit(size.Width)
	r.m.label.Resize(size)
}

// MinSize is a few characters wide: the label gives way before the window
// grows.
func (r *middleRenderer) MinSize() fyne.Size {
	h := r.m.label.MinSize().Height
	return fyne.NewSize(r.m.measure("Qwen…bit"), h)
}

func (r *middleRenderer) Refresh()                     { r.m.fit(r.m.Size().Width); r.m.label.Refresh() }
func (r *middleRenderer) Objects() []fyne.CanvasObject { return []fyne.CanvasObject{r.m.label} }
func (r *middleRenderer) Destroy()                     {}
