package ui

import (
	"fmt"
	"image/color"
	"time"

	"bagel/engine"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/dustin/go-humanize"
)

// perfView is one state of the performance panel, assembled off the UI thread
// by the generation (or by the model loader) and shown with perfPanel.show.
type perfView struct {
	Phase     string       // what the engine is doing, in words
	Stats     engine.Stats // the engine's latest numbers
	DecodeNow float64      // decode tok/s over the last second, measured by the UI
	// Finished: the reply has ended, and DecodeNow is its average (the big
	// figure then reads "last reply", not "decode, now").
	Finished bool
	Elapsed  time.Duration // since the request was sent
	Memory   engine.Memory
}

// perfPanel is the live performance panel beside the chat.
type perfPanel struct {
	root      fyne.CanvasObject
	decodeNow *canvas.Text
	caption   *widget.Label // what the big figure is: "decode, now" or "last reply"
	phase     *widget.Label
	body      *fyne.Container // the panel's rows, laid out again when the phase's height changes
	spark     *sparkline
	kvBar     *meter
	values    map[string]*widget.Label
	updates   int // how many times show ran: tests watch it move
}

// perfRows are the panel's rows, in order.
var perfRows = []string{"Prefill", "First token", "Generated", "KV cache", "Cached prompt", "Speculative",
	"Backend", "Dispatches", "Cmd buffers", "Host syncs", "GPU time", "Weights", "Cache memory", "Prompt cache", "Scratch memory"}

func newPerfPanel() *perfPanel {
	p := &perfPanel{values: map[string]*widget.Label{}}
	p.decodeNow = canvas.NewText("– tok/s", theme.Color(theme.ColorNameForeground))
	p.decodeNow.TextSize = 2.2 * theme.TextSize()
	p.decodeNow.TextStyle = fyne.TextStyle{Bold: true}
	p.phase = widget.NewLabel("no model loaded")
	p.phase.Importance = widget.LowImportance
	p.phase.Wrapping = fyne.TextWrapWord
	p.spark = newSparkline(time.Minute)
	p.kvBar = newMeter()

	form := container.New(layout.NewFormLayout())
	for _, name := range perfRows {
		key := widget.NewLabel(name)
		key.Importance = widget.LowImportance
		val := widget.NewLabel("–")
		val.Wrapping = fyne.TextWrapWord
		p.values[name] = val
		form.Add(key)
		if name == "KV cache" {
			form.Add(container.NewVBox(val, p.kvBar))
		} else {
			form.Add(val)
		}
	}
	title := widget.NewLabelWithStyle("Performance", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	caption := widget.NewLabel(captionLive)
	caption.Importance = widget.LowImportance
	p.caption = caption
	// The panel keeps its width so the numbers do not wrap as they change.
	width := canvas.NewRectangle(color.Transparent)
	width.SetMinSize(fyne.NewSize(330, 0))
	// The phase keeps three lines' height whatever it says: its height
	// changing with its text left the rows below overlapping its last line
	// until the next layout, and made the panel jump as a reply went on.
	lines := canvas.NewRectangle(color.Transparent)
	lines.SetMinSize(fyne.NewSize(0, 3*fyne.MeasureText("M", theme.TextSize(), fyne.TextStyle{}).Height+2*theme.InnerPadding()))
	p.body = container.NewVBox(
		title,
		container.NewHBox(p.decodeNow, container.NewCenter(caption)),
		p.spark,
		container.NewStack(lines, container.NewVBox(p.phase)),
		widget.NewSeparator(),
		form,
	)
	p.root = container.NewStack(width, container.NewVScroll(container.NewThemeOverride(p.body, compactTheme{})))
	return p
}

// The big figure's captions: live while a reply streams, then its average.
const (
	captionLive     = "decode, now"
	captionFinished = "last reply"
)

func captionFor(v perfView) string {
	if v.Finished {
		return captionFinished
	}
	return captionLive
}

func (p *perfPanel) set(row, text string) {
	if l := p.values[row]; l.Text != text {
		l.SetText(text)
	}
}

// show puts v on screen; a live generation calls it about five times a second.
func (p *perfPanel) show(v perfView) {
	p.updates++
	st := v.Stats
	p.decodeNow.Text = rate(v.DecodeNow) + " tok/s"
	if v.DecodeNow == 0 && st.GeneratedTokens == 0 {
		p.decodeNow.Text = "– tok/s"
	}
	p.decodeNow.Color = theme.Color(theme.ColorNameForeground)
	p.decodeNow.Refresh()
	if c := captionFor(v); p.caption.Text != c {
		p.caption.SetText(c)
	}
	if v.Phase != "" && p.phase.Text != v.Phase {
		p.phase.SetText(v.Phase)
	}
	if st.PromptTokens > 0 {
		speed := rate(st.PrefillTokensPerSec) + " tok/s"
		if st.PrefillTokensPerSec == 0 { // a remote engine's: its server does not say
			speed = "speed not reported"
		}
		p.set("Prefill", fmt.Sprintf("%s · %s tokens", speed, humanize.Comma(int64(st.PromptTokens))))
	}
	switch {
	case st.TimeToFirstToken > 0:
		p.set("First token", duration(st.TimeToFirstToken))
	case v.Elapsed > 0:
		p.set("First token", "waiting · "+duration(v.Elapsed))
	}
	if st.GeneratedTokens > 0 || v.Elapsed > 0 {
		p.set("Generated", humanize.Comma(int64(st.GeneratedTokens))+" tokens · "+rate(st.DecodeTokensPerSec)+" tok/s avg")
	}
	if st.ContextLength > 0 {
		p.set("KV cache", kvText(st))
		p.kvBar.setValue(float64(st.KVLength) / float64(st.ContextLength))
	}
	p.set("Cached prompt", humanize.Comma(int64(st.ReusedPromptTokens))+" tokens")
	p.set("Speculative", speculativeText(st))
	if st.Backend != "" {
		p.set("Backend", st.Backend)
	}
	if st.DispatchesPerToken > 0 {
		p.set("Dispatches", fmt.Sprintf("%.0f per token", st.DispatchesPerToken))
		p.set("Cmd buffers", fmt.Sprintf("%.1f per token", st.CommandBuffersPerTok))
		p.set("Host syncs", fmt.Sprintf("%.1f per token", st.HostSyncsPerToken))
	}
	if st.GPUTimePerToken > 0 { // measured on Metal only, for now
		p.set("GPU time", fmt.Sprintf("%.2f ms per token", float64(st.GPUTimePerToken.Microseconds())/1000))
	}
	if v.Memory.Weights > 0 {
		p.set("Weights", humanize.IBytes(uint64(v.Memory.Weights)))
		p.set("Cache memory", humanize.IBytes(uint64(v.Memory.Cache))+" KV + state")
		scratch := "– until a reply"
		if v.Memory.Scratch > 0 {
			scratch = humanize.IBytes(uint64(v.Memory.Scratch)) + " activations"
		}
		p.set("Scratch memory", scratch)
		p.set("Prompt cache", promptCacheText(v.Memory))
	}
}

// sample adds a point to the decode sparkline.
func (p *perfPanel) sample(at time.Time, decodeNow float64) { p.spark.add(at, decodeNow) }

// showModel resets the panel for a newly loaded model (backend "": none).
func (p *perfPanel) showModel(backend string, ctxLen int, mem engine.Memory, phase string) {
	for _, row := range perfRows {
		p.set(row, "–")
	}
	p.set("Speculative", "off")
	p.kvBar.setValue(0)
	p.show(perfView{Phase: phase, Stats: engine.Stats{Backend: backend, ContextLength: ctxLen}, Memory: mem})
}

// promptCacheText says what the prompt cache holds: the conversations whose
// state is kept for the next turn and their memory, of the budget.
func promptCacheText(m engine.Memory) string {
	if m.PromptCacheBudget <= 0 {
		return "off"
	}
	what := "no conversation"
	switch n := m.PromptCacheConversations; {
	case n == 1:
		what = "1 conversation"
	case n > 1:
		what = fmt.Sprintf("%d conversations", n)
	}
	return fmt.Sprintf("%s · %s of %s", what, humanize.IBytes(uint64(m.PromptCache)), humanize.IBytes(uint64(m.PromptCacheBudget)))
}
