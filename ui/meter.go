package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// meter is a thin horizontal fill bar (KV cache use): lighter than a
// ProgressBar, which is as tall as a button and prints its own percentage.
type meter struct {
	widget.BaseWidget
	value float64 // 0..1
}

func newMeter() *meter {
	m := &meter{}
	m.ExtendBaseWidget(m)
	return m
}

func (m *meter) setValue(v float64) {
	v = min(max(v, 0), 1)
	if v != m.value {
		m.value = v
		m.Refresh()
	}
}

func (m *meter) CreateRenderer() fyne.WidgetRenderer {
	r := &meterRenderer{m: m, track: canvas.NewRectangle(color.Transparent), fill: canvas.NewRectangle(color.Transparent)}
	r.track.CornerRadius, r.fill.CornerRadius = 3, 3
	r.Refresh()
	return r
}

type meterRenderer struct {
	m           *meter
	track, fill *canvas.Rectangle
}

func (r *meterRenderer) MinSize() fyne.Size { return fyne.NewSize(40, 6) }

func (r *meterRenderer) Layout(size fyne.Size) {
	r.track.Resize(size)
	r.fill.Resize(fyne.NewSize(size.Width*float32(r.m.value), size.Height))
}

func (r *meterRenderer) Refresh() {
	r.track.FillColor = theme.Color(theme.ColorNameInputBackground)
	r.fill.FillColor = theme.Color(theme.ColorNamePrimary)
	r.Layout(r.m.Size())
	r.track.Refresh()
	r.fill.Refresh()
}

func (r *meterRenderer) Objects() []fyne.CanvasObject { return []fyne.CanvasObject{r.track, r.fill} }
func (r *meterRenderer) Destroy()                     {}
