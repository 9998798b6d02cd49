package ui

import (
	"fmt"
	"image/color"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// sparkline draws one value over the last span of wall-clock time (decode
// tok/s over the last minute). Samples further apart than maxGap are not
// joined, so the idle time between replies shows as a gap, not a slope.
type sparkline struct {
	widget.BaseWidget
	span    time.Duration
	maxGap  time.Duration
	samples []sparkSample // oldest first
}

type sparkSample struct {
	at    time.Time
	value float64
}

func newSparkline(span time.Duration) *sparkline {
	s := &sparkline{span: span, maxGap: 2 * time.Second}
	s.ExtendBaseWidget(s)
	return s
}

// add records a sample and drops those older than the span.
func (s *sparkline) add(at time.Time, value float64) {
	s.samples = append(s.samples, sparkSample{at, value})
	cut := 0
	for cut < len(s.samples) && at.Sub(s.samples[cut].at) > s.span {
		cut++
	}
	s.samples = s.samples[cut:]
	s.Refresh()
}

// peak is the largest sample in the window (the scale's top).
func (s *sparkline) peak() float64 {
	p := 0.0
	for _, x := range s.samples {
		p = max(p, x.value)
	}
	return p
}

// shown is the time the plot covers: the span, or less while there is less
// history, so a short first reply fills the width instead of a sliver of it.
func (s *sparkline) shown() time.Duration {
	if len(s.samples) < 2 {
		return 0
	}
	return s.samples[len(s.samples)-1].at.Sub(s.samples[0].at)
}

// shortSpan formats a plot span: "8 s", "1 min".
func shortSpan(d time.Duration) string {
	if d >= 59*time.Second {
		return "minute"
	}
	return fmt.Sprintf("%.0f s", max(d.Seconds(), 1))
}

func (s *sparkline) CreateRenderer() fyne.WidgetRenderer {
	r := &sparkRenderer{s: s, bg: canvas.NewRectangle(color.Transparent), top: canvas.NewText("", theme.Color(theme.ColorNameDisabled))}
	r.bg.CornerRadius = theme.InputRadiusSize()
	r.top.TextSize = theme.CaptionTextSize()
	r.Refresh()
	return r
}

type sparkRenderer struct {
	s     *sparkline
	bg    *canvas.Rectangle
	top   *canvas.Text // the scale's peak value
	lines []*canvas.Line
	size  fyne.Size
}

func (r *sparkRenderer) MinSize() fyne.Size { return fyne.NewSize(120, 72) }

func (r *sparkRenderer) Layout(size fyne.Size) {
	r.size = size
	r.bg.Resize(size)
	r.top.Move(fyne.NewPos(theme.Padding(), 0))
	r.placeLines()
}

func (r *sparkRenderer) Refresh() {
	r.bg.FillColor = theme.Color(theme.ColorNameInputBackground)
	r.top.Color = theme.Color(theme.ColorNameDisabled)
	if p := r.s.peak(); p > 0 {
		r.top.Text = fmt.Sprintf("decode tok/s · peak %s · last %s", rate(p), shortSpan(r.s.shown()))
	} else {
		r.top.Text = "decode tok/s · last minute"
	}
	r.placeLines()
	r.bg.Refresh()
	r.top.Refresh()
}

// placeLines maps samples to segments: x by age (newest at the right edge),
// y by value over the window's peak.
func (r *sparkRenderer) placeLines() {
	samples := r.s.samples
	need := max(len(samples)-1, 0)
	for len(r.lines) < need {
		l := canvas.NewLine(theme.Color(theme.ColorNamePrimary))
		l.StrokeWidth = 2
		r.lines = append(r.lines, l)
	}
	w, h := r.size.Width, r.size.Height
	textH := r.top.MinSize().Height
	plotH := h - textH - 2*theme.Padding()
	peak := r.s.peak()
	if peak <= 0 || len(samples) == 0 || w <= 0 || plotH <= 0 {
		for _, l := range r.lines {
			l.Hide()
		}
		return
	}
	newest := samples[len(samples)-1].at
	shown := r.s.shown().Seconds()
	if shown <= 0 {
		shown = r.s.span.Seconds()
	}
	point := func(x sparkSample) fyne.Position {
		age := float32(newest.Sub(x.at).Seconds() / shown)
		return fyne.NewPos(w*(1-age), h-theme.Padding()-plotH*float32(x.value/peak))
	}
	for i, l := range r.lines {
		if i >= need || samples[i+1].at.Sub(samples[i].at) > r.s.maxGap {
			l.Hide()
			continue
		}
		l.StrokeColor = theme.Color(theme.ColorNamePrimary)
		l.Position1, l.Position2 = point(samples[i]), point(samples[i+1])
		l.Show()
		l.Refresh()
	}
}

func (r *sparkRenderer) Objects() []fyne.CanvasObject {
	objs := []fyne.CanvasObject{r.bg, r.top}
	for _, l := range r.lines {
		objs = append(objs, l)
	}
	return objs
}

func (r *sparkRenderer) Destroy() {}
