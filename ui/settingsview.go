package ui

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"bagel/engine"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// settingsForm edits Settings. The engine switches section is built from the
// engine's registry, so a new switch appears here without a UI change.
type settingsForm struct {
	form                                          *widget.Form
	temperature, topP, topK, minP                 *formEntry
	repetition, seed, maxTokens, ctxLen           *formEntry
	draftLen, treeWidth, promptCache, promptChunk *formEntry
	preset                                        *widget.Select // fills the sampling fields
	reset                                         *widget.Button // fills every field with the defaults
	entries                                       []*formEntry
	// onEsc closes the dialog (Esc in a field); onValidity hears whether
	// every field holds a valid value (Save is enabled only then).
	onEsc      func()
	onValidity func(ok bool)
	thinking   *widget.Check
	autoTitles *widget.Check
	backend    *widget.Select
	// chatParallel is Replies at once: how many chats may answer together.
	chatParallel *widget.Select
	memory       *widget.Label // what the loaded model needs at the context length typed
	switches     map[string]*widget.Check
	// switchShown is each switch's box as the dialog opened (the engine's
	// value); switchesReset says Reset to defaults set them since. Only
	// the switches the user sets are saved (Settings.Switches), so that a
	// switch left alone keeps its default, or the value a model load picks
	// for it (engine.Options.Replies and tiled-gemv).
	switchShown   map[string]bool
	switchesReset bool
	// help is each item's line of help under its field (by the item's
	// label): a wrapped label, so a long one never widens the dialog past
	// the window (a form's own hint is one line of canvas text), and where
	// the field is a checked entry, its error instead while it is invalid.
	help map[string]*helpLine
	// sliders are the sampling fields' sliders, by field.
	sliders    map[*formEntry]*widget.Slider
	note       *widget.Label     // what the loaded model remembers
	switchForm *widget.Form      // the switches, inside advanced
	advanced   *widget.Accordion // folded by default
	submit     func()            // Save: validate, apply, close
	save       *widget.Button
	scroll     *container.Scroll // the form, under the dialog's title
}

func newSettingsForm(s Settings) *settingsForm {
	f := &settingsForm{switches: map[string]*widget.Check{}, switchShown: map[string]bool{}, help: map[string]*helpLine{}, sliders: map[*formEntry]*widget.Slider{}}
	num := func(v string, check func(string) error) *formEntry {
		e := newFormEntry(func() {
			if f.onEsc != nil {
				f.onEsc()
			}
		})
		e.SetText(v)
		e.Validator = check
		e.OnChanged = func(string) {
			if f.onValidity != nil {
				f.onValidity(f.valid())
			}
		}
		f.entries = append(f.entries, e)
		return e
	}
	float := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	f.temperature = num(float(s.Temperature), samplingField("temperature", func(s *engine.Sampling, x float64) { s.Temperature = x }))
	f.topP = num(float(s.TopP), samplingField("top-p", func(s *engine.Sampling, x float64) { s.TopP = x }))
	f.topK = num(strconv.Itoa(s.TopK), intAtLeast("top-k", 0))
	f.minP = num(float(s.MinP), samplingField("min-p", func(s *engine.Sampling, x float64) { s.MinP = x }))
	f.repetition = num(float(s.RepetitionPenalty), samplingField("repetition penalty", func(s *engine.Sampling, x float64) { s.RepetitionPenalty = x }))
	seed := "random"
	if s.Seed >= 0 {
		seed = strconv.FormatInt(s.Seed, 10)
	}
	f.seed = num(seed, func(v string) error {
		if strings.TrimSpace(v) == "random" {
			return nil
		}
		return intAtLeast("seed", 0)(v)
	})
	f.maxTokens = num(strconv.Itoa(s.MaxTokens), intAtLeast("max tokens", 0))
	f.ctxLen = num(strconv.Itoa(s.ContextLength), intAtLeast("context length", 0))
	// intUpTo checks a whole number from 0 to most (of unit, if any).
	intUpTo := func(name string, most int, unit string) func(string) error {
		return func(v string) error {
			if err := intAtLeast(name, 0)(v); err != nil {
				return err
			}
			if n, _ := strconv.Atoi(strings.TrimSpace(v)); n > most {
				return fmt.Errorf("%s must be at most %s", name, strings.TrimSpace(fmt.Sprintf("%d %s", most, unit)))
			}
			return nil
		}
	}
	f.draftLen = num(strconv.Itoa(s.DraftLength), intUpTo("draft length", engine.MaxDraftLength, ""))
	f.treeWidth = num(strconv.Itoa(s.DraftTreeWidth), intUpTo("draft tree width", engine.MaxTreeWidth, ""))
	f.promptCache = num(strconv.Itoa(s.PromptCacheMB), intUpTo("prompt cache", maxPromptCacheMB, "MB"))
	f.promptChunk = num(strconv.Itoa(s.PrefillChunk), intUpTo("prompt chunk", engine.MaxPrefillChunk, "tokens"))
	f.thinking = widget.NewCheck("let the model think before it answers", nil)
	f.thinking.SetChecked(s.Thinking)
	f.autoTitles = widget.NewCheck("the model names each new chat after its first reply", nil)
	f.autoTitles.SetChecked(!s.ManualTitles)
	f.backend = widget.NewSelect(engine.BackendsHere(), nil)
	f.backend.SetSelected(s.Backend)
	f.chatParallel = widget.NewSelect(chatParallelChoices, nil)
	f.chatParallel.SetSelected(strconv.Itoa(max(1, s.ChatParallel)))
	f.note = widget.NewLabel("")
	f.note.Wrapping = fyne.TextWrapWord
	f.note.Importance = widget.LowImportance
	f.note.Hide()
	f.memory = widget.NewLabel("load a model to see what it needs")
	f.memory.Wrapping = fyne.TextWrapWord

	header := func(text string) *widget.FormItem {
		return widget.NewFormItem("", widget.NewLabelWithStyle(text, fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	}
	item := func(label string, w fyne.CanvasObject, hint string) *widget.FormItem {
		return widget.NewFormItem(label, f.withHelp(label, w, hint))
	}
	f.preset = widget.NewSelect(presetNames, func(name string) { f.applyPreset(name) })
	f.preset.PlaceHolder = "choose to fill the fields below"
	f.reset = widget.NewButton("Reset to defaults", func() { f.fill(DefaultSettings()) })
	items := []*widget.FormItem{
		header("Sampling (applies to the next reply)"),
		item("Preset", container.NewBorder(nil, nil, nil, f.reset, f.preset), "Precise for code and facts, Creative for stories; Reset puts every field back to its default"),
		item("Temperature", f.withSlider(f.temperature, 0, 2, 0.05), "0 to 2 (more typed); 0 is greedy; "+recommended(func(s engine.Sampling) string { return float(s.Temperature) })),
		item("Top-p", f.withSlider(f.topP, 0, 1, 0.01), "0 or 1 turns it off; "+recommended(func(s engine.Sampling) string { return float(s.TopP) })),
		item("Top-k", f.withSlider(f.topK, 0, 100, 1), "0 turns it off (more than 100 typed); "+recommended(func(s engine.Sampling) string { return strconv.Itoa(s.TopK) })),
		item("Min-p", f.withSlider(f.minP, 0, 1, 0.01), "0 turns it off; "+recommended(func(s engine.Sampling) string { return float(s.MinP) })),
		item("Repetition penalty", f.withSlider(f.repetition, 1, 2, 0.01), "1 turns it off"),
		item("Seed", f.seed, "a number for repeatable replies, or random"),
		item("Max tokens", f.maxTokens, "per reply; 0: until the model stops or the context is full"),
		item("Thinking", f.thinking, ""),
		item("Chat titles", f.autoTitles, "off: a chat keeps the first words of its first message as its title"),
		item("Prompt chunk", f.promptChunk, fmt.Sprintf("prompt tokens read per step: more reads a long prompt faster and takes more memory, fewer pauses the other chats' replies for less while it is read; 0: the default, %d; at most %d", engine.DefaultPrefillChunk, engine.MaxPrefillChunk)),
		header("Model (applies when a model is loaded)"),
		item("Context length", f.ctxLen, "tokens of KV cache; 0: the model's default (at most 8,192)"),
		item("Backend", f.backend, "auto picks Metal on a Mac, CUDA with an NVIDIA GPU, else the CPU"),
		item("Replies at once", f.chatParallel, "chats answering together: above 1, a chat answers while another does, their steps decoded in one batch, each in a cache of the context length (memory), their speculative drafts (when on) in the same steps, and on an NVIDIA GPU the steps' projections on the matrix units (faster together, slower alone; from the next model load); 1: one at a time"),
		item("Prompt cache (MB)", f.promptCache, fmt.Sprintf("memory for the conversations kept between turns, so that a reply to a long chat reads only the new part; 0: the default, %d MB", engine.DefaultPromptCacheBytes>>20)),
		item("Memory", f.memory, "the loaded model's weights and cache at this context length, against this backend's memory"),
		header("Speculative decoding"),
		item("Draft length", f.draftLen, fmt.Sprintf("with the speculative-ngram switch under Advanced (greedy replies, or sampling with a top-k): most tokens guessed per step (fewer while the model rejects them); 0: the default, %d; at most %d", engine.DefaultDraftLength, engine.MaxDraftLength)),
		item("Draft tree width", f.treeWidth, fmt.Sprintf("greedy replies: guess up to this many continuations per step as a tree, all checked at once (pays when single guesses often miss; each branch costs about a guess); 0: one line of guesses; at most %d", engine.MaxTreeWidth)),
	}
	f.form = widget.NewForm(items...)
	// The engine switches are for developers and benchmarks: folded away
	// under Advanced, below the settings a user changes.
	var switchItems []*widget.FormItem
	switches := engine.Switches()
	if len(switches) == 0 {
		none := widget.NewLabel("none registered")
		none.Importance = widget.LowImportance
		switchItems = append(switchItems, widget.NewFormItem("", none))
	}
	for _, sw := range switches {
		c := widget.NewCheck("on", nil)
		c.SetChecked(engine.SwitchOn(sw.Name))
		f.switches[sw.Name] = c
		f.switchShown[sw.Name] = c.Checked
		hint := sw.Description + " · default " + onOff(sw.Default)
		if sw.Env != "" {
			hint += " · environment " + sw.Env
		}
		if len(sw.Backends) > 0 {
			hint += " · " + strings.Join(sw.Backends, ", ")
		}
		switchItems = append(switchItems, item(sw.Name, c, hint))
	}
	f.switchForm = widget.NewForm(switchItems...)
	f.advanced = widget.NewAccordion(widget.NewAccordionItem("Advanced: engine switches (apply from the next load or reply)", f.switchForm))
	return f
}

// sayMTP puts under the speculative-mtp switch whether the loaded model (name)
// can draft with its MTP head (why: "" when it can), so that the switch is
// never on for nothing.
func (f *settingsForm) sayMTP(name, why string) {
	help := f.help[engine.SwitchSpeculativeMTP]
	if help == nil {
		return
	}
	if why == "" {
		help.hint += " · " + name + " has an MTP head"
	} else {
		help.hint += " · " + name + ": " + why + " (the switch does nothing for it)"
	}
	help.SetText(help.hint)
}

// content is the settings with the Advanced section under them, and a note
// on top while a model is loaded.
// presetNames are the sampling presets, the model's recommended first.
var presetNames = []string{"The model's recommended", "Precise", "Balanced", "Creative"}

// applyPreset fills the sampling fields with a preset's values.
func (f *settingsForm) applyPreset(name string) {
	s := engine.RecommendedSampling(f.thinking.Checked)
	switch name {
	case "Precise":
		s = engine.Sampling{Temperature: 0.2, TopP: 0.9, TopK: 20, RepetitionPenalty: 1}
	case "Balanced":
		s = engine.Sampling{Temperature: 0.7, TopP: 0.95, TopK: 40, RepetitionPenalty: 1}
	case "Creative":
		s = engine.Sampling{Temperature: 1.0, TopP: 0.95, MinP: 0.05, RepetitionPenalty: 1}
	}
	float := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	f.temperature.SetText(float(s.Temperature))
	f.topP.SetText(float(s.TopP))
	f.topK.SetText(strconv.Itoa(s.TopK))
	f.minP.SetText(float(s.MinP))
	f.repetition.SetText(float(s.RepetitionPenalty))
}

// fill puts s into every field (Reset to defaults; nothing is saved until
// Save).
func (f *settingsForm) fill(s Settings) {
	float := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	f.temperature.SetText(float(s.Temperature))
	f.topP.SetText(float(s.TopP))
	f.topK.SetText(strconv.Itoa(s.TopK))
	f.minP.SetText(float(s.MinP))
	f.repetition.SetText(float(s.RepetitionPenalty))
	seed := "random"
	if s.Seed >= 0 {
		seed = strconv.FormatInt(s.Seed, 10)
	}
	f.seed.SetText(seed)
	f.maxTokens.SetText(strconv.Itoa(s.MaxTokens))
	f.ctxLen.SetText(strconv.Itoa(s.ContextLength))
	f.draftLen.SetText(strconv.Itoa(s.DraftLength))
	f.treeWidth.SetText(strconv.Itoa(s.DraftTreeWidth))
	f.promptCache.SetText(strconv.Itoa(s.PromptCacheMB))
	f.promptChunk.SetText(strconv.Itoa(s.PrefillChunk))
	f.thinking.SetChecked(s.Thinking)
	f.autoTitles.SetChecked(!s.ManualTitles)
	f.backend.SetSelected(s.Backend)
	f.chatParallel.SetSelected(strconv.Itoa(max(1, s.ChatParallel)))
	for _, sw := range engine.Switches() {
		if c := f.switches[sw.Name]; c != nil {
			c.SetChecked(sw.Default)
		}
	}
	f.switchesReset = true
}

// valid reports every field valid.
func (f *settingsForm) valid() bool {
	for _, e := range f.entries {
		if e.Validator != nil && e.Validator(e.Text) != nil {
			return false
		}
	}
	return true
}

// formEntry is a settings field: Esc in it closes the dialog, as Esc does
// anywhere else in the window (an entry would keep the key).
type formEntry struct {
	widget.Entry
	onEsc func()
}

func newFormEntry(onEsc func()) *formEntry {
	e := &formEntry{onEsc: onEsc}
	// No scroller of its own (a number never needs one): the wheel over a
	// field then scrolls the form, where the field's own scroller took it.
	e.Scroll = container.ScrollNone
	e.ExtendBaseWidget(e)
	return e
}

func (e *formEntry) TypedKey(k *fyne.KeyEvent) {
	if k.Name == fyne.KeyEscape && e.onEsc != nil {
		e.onEsc()
		return
	}
	e.Entry.TypedKey(k)
}

func (f *settingsForm) content() fyne.CanvasObject {
	return container.NewVBox(f.note, f.form, f.advanced)
}

// showEstimate keeps the Memory line current as the context length or the
// backend changes: estimate gives the verdict for a context length and a
// backend (a loaded model's; see showSettings).
func (f *settingsForm) showEstimate(estimate func(contextLength int, backend string) string) {
	update := func() {
		n, err := strconv.Atoi(strings.TrimSpace(f.ctxLen.Text))
		if err != nil || n < 0 {
			f.memory.SetText("—")
			return
		}
		f.memory.SetText(estimate(n, f.backend.Selected))
	}
	checked := f.ctxLen.OnChanged // the validity check
	f.ctxLen.OnChanged = func(s string) {
		if checked != nil {
			checked(s)
		}
		update()
	}
	f.backend.OnChanged = func(string) { update() }
	update()
}

// recommended states the engine's recommended value of one sampling setting
// with thinking on and off, for the setting's hint.
func recommended(value func(engine.Sampling) string) string {
	on, off := value(engine.RecommendedSampling(true)), value(engine.RecommendedSampling(false))
	if on == off {
		return "recommended " + on
	}
	return "recommended " + on + " with thinking, " + off + " without"
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// samplingField checks one sampling entry against the engine's own ranges
// (Sampling.Validate): the value is set on valid sampling and validated.
func samplingField(name string, set func(*engine.Sampling, float64)) func(string) error {
	return func(v string) error {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fmt.Errorf("%s must be a number, got %q", name, v)
		}
		s := engine.RecommendedSampling(true)
		set(&s, x)
		return s.Validate()
	}
}

func intAtLeast(name string, lo int) func(string) error {
	return func(v string) error {
		x, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || x < lo {
			return fmt.Errorf("%s must be a whole number ≥ %d", name, lo)
		}
		return nil
	}
}

// read returns base with the form's values, or the first invalid field's error.
func (f *settingsForm) read(base Settings) (Settings, error) {
	s := base
	var errs []error
	parseF := func(e *formEntry, dst *float64) {
		if err := e.Validator(e.Text); err != nil {
			errs = append(errs, err)
			return
		}
		*dst, _ = strconv.ParseFloat(strings.TrimSpace(e.Text), 64)
	}
	parseI := func(e *formEntry, dst *int) {
		if err := e.Validator(e.Text); err != nil {
			errs = append(errs, err)
			return
		}
		*dst, _ = strconv.Atoi(strings.TrimSpace(e.Text))
	}
	parseF(f.temperature, &s.Temperature)
	parseF(f.topP, &s.TopP)
	parseI(f.topK, &s.TopK)
	parseF(f.minP, &s.MinP)
	parseF(f.repetition, &s.RepetitionPenalty)
	parseI(f.maxTokens, &s.MaxTokens)
	parseI(f.ctxLen, &s.ContextLength)
	parseI(f.draftLen, &s.DraftLength)
	parseI(f.treeWidth, &s.DraftTreeWidth)
	parseI(f.promptCache, &s.PromptCacheMB)
	parseI(f.promptChunk, &s.PrefillChunk)
	if err := f.seed.Validator(f.seed.Text); err != nil {
		errs = append(errs, err)
	} else if t := strings.TrimSpace(f.seed.Text); t == "random" {
		s.Seed = -1
	} else {
		s.Seed, _ = strconv.ParseInt(t, 10, 64)
	}
	s.Thinking = f.thinking.Checked
	s.ManualTitles = !f.autoTitles.Checked
	s.Backend = f.backend.Selected
	s.ChatParallel, _ = strconv.Atoi(f.chatParallel.Selected)
	if s.ChatParallel == 1 {
		s.ChatParallel = 0 // the default: one at a time
	}
	s.Switches = f.readSwitches(base.Switches)
	if len(s.Switches) == 0 {
		s.Switches = nil
	}
	if err := errors.Join(errs...); err != nil {
		return base, err
	}
	return s, s.Validate()
}

// readSwitches is the switches to save: those set before (the ones this
// build lacks are kept for builds that have them; after Reset to defaults,
// none of this build's) and those whose box the user changed.
func (f *settingsForm) readSwitches(before map[string]bool) map[string]bool {
	out := map[string]bool{}
	for name, on := range before {
		if f.switches[name] == nil || !f.switchesReset {
			out[name] = on
		}
	}
	defaults := map[string]bool{}
	for _, sw := range engine.Switches() {
		defaults[sw.Name] = sw.Default
	}
	for name, c := range f.switches {
		shown := f.switchShown[name]
		if f.switchesReset {
			shown = defaults[name]
		}
		if _, set := out[name]; set || c.Checked != shown {
			out[name] = c.Checked
		}
	}
	return out
}

// showSettings opens the settings dialog. Save and Cancel sit under the
// scrolling form, so they are in view however long the switch list grows.
func (a *App) showSettings() {
	f := newSettingsForm(a.settings)
	if eng := a.eng; eng != nil && !a.loading {
		name := a.modelName()
		f.note.SetText("Saved with " + name + " loaded, the sampling, max tokens, thinking, context length and draft length are remembered for it and come back when it loads.")
		f.note.Show()
		f.showEstimate(func(n int, backend string) string {
			verdict, _ := a.memoryBudget(backend).Verdict(eng.MemoryAt(n))
			return name + " " + verdict
		})
		f.sayMTP(name, eng.MTPStatus())
	}
	var d dialog.Dialog
	f.submit = func() {
		s, err := f.read(a.settings)
		if err != nil {
			a.showError("A setting is not valid", err)
			return
		}
		d.Hide()
		a.applySettings(s)
	}
	save := widget.NewButtonWithIcon("Save", theme.ConfirmIcon(), f.submit)
	save.Importance = widget.HighImportance
	f.onValidity = func(ok bool) { // Save waits for every field to be valid
		if ok {
			save.Enable()
		} else {
			save.Disable()
		}
	}
	f.onEsc = func() { d.Hide() }
	f.save = save
	cancel := widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() { d.Hide() })
	scroll := container.NewVScroll(f.content())
	scroll.SetMinSize(fyne.NewSize(640, 500))
	f.scroll = scroll
	buttons := container.NewHBox(layout.NewSpacer(), cancel, save)
	d = dialog.NewCustomWithoutButtons("Settings", container.NewBorder(nil, buttons, nil, nil, scroll), a.win)
	a.showDialog(d, nil)
	a.settingsForm = f
}

// applySettings saves s and applies it: sampling from the next reply, switches
// at once, and — after asking — a reload for a new backend or context length.
func (a *App) applySettings(s Settings) {
	old := a.settings
	a.settings = s
	if a.modelDir != "" {
		a.settings.rememberFor(a.modelDir)
	}
	a.saveSettings()
	if err := s.applySwitches(); err != nil {
		a.showError("An engine switch could not be set", err)
	}
	a.composer.think.SetChecked(s.Thinking)
	if old.ChatParallel != s.ChatParallel {
		a.setupBatch()
		a.composer.refresh()
	}
	if a.eng != nil && (old.Backend != s.Backend || old.ContextLength != s.ContextLength) {
		dir := a.modelDir
		a.confirm("Reload the model?", "The backend and the context length apply when the model is loaded. Reload "+a.modelName()+" now?", func(ok bool) {
			if ok && a.modelDir == dir && !a.loading {
				// Should the new backend or context length fail, the model
				// loads again as it was (modelLoaded).
				a.restoreOnFailure = &old
				a.loadModel(dir, "")
			}
		})
	}
}

// withSlider puts a slider over lo..hi (in steps of step) beside e: moving
// it writes its value into e, and a number typed in e moves it (a number
// past its ends puts it at the end; the field keeps what was typed, which
// the field's own check judges).
func (f *settingsForm) withSlider(e *formEntry, lo, hi, step float64) fyne.CanvasObject {
	s := widget.NewSlider(lo, hi)
	s.Step = step
	f.sliders[e] = s
	syncing := false // a change the other made
	follow := func(text string) {
		if x, err := strconv.ParseFloat(strings.TrimSpace(text), 64); err == nil {
			syncing = true
			s.SetValue(min(hi, max(lo, x)))
			syncing = false
		}
	}
	follow(e.Text)
	s.OnChanged = func(x float64) {
		if syncing {
			return
		}
		syncing = true
		e.SetText(strconv.FormatFloat(math.Round(x/step)*step, 'f', decimals(step), 64))
		syncing = false
	}
	typed := e.OnChanged
	e.OnChanged = func(text string) {
		if typed != nil {
			typed(text)
		}
		if !syncing {
			follow(text)
		}
	}
	field := container.New(layout.NewGridWrapLayout(fyne.NewSize(88, e.MinSize().Height)), e)
	return container.NewBorder(nil, nil, nil, field, s)
}

// decimals is how many decimals a multiple of step needs (0.05: 2; 1: 0).
func decimals(step float64) int {
	n := 0
	for x := step; n < 6 && math.Abs(x-math.Round(x)) > 1e-9; x *= 10 {
		n++
	}
	return n
}

// helpLine is a field's help: hint, or the field's error while it has one.
type helpLine struct {
	*widget.Label
	hint string
}

// withHelp puts hint under w in a wrapped line, kept in f.help[label]; when
// w is a checked entry (alone, or with its slider) the line shows the
// entry's error instead while its value is invalid.
func (f *settingsForm) withHelp(label string, w fyne.CanvasObject, hint string) fyne.CanvasObject {
	if hint == "" {
		return w
	}
	help := &helpLine{Label: widget.NewLabel(hint), hint: hint}
	help.Wrapping = fyne.TextWrapWord
	help.Importance = widget.LowImportance
	help.SizeName = theme.SizeNameCaptionText
	f.help[label] = help
	if e := entryIn(w); e != nil && e.Validator != nil {
		e.SetOnValidationChanged(func(err error) {
			if err != nil {
				help.Importance = widget.DangerImportance
				help.SetText(err.Error())
				return
			}
			help.Importance = widget.LowImportance
			help.SetText(help.hint)
		})
	}
	return container.NewVBox(w, help)
}

// entryIn is the form entry w is, or holds (withSlider's field); nil if none.
func entryIn(w fyne.CanvasObject) *formEntry {
	switch w := w.(type) {
	case *formEntry:
		return w
	case *fyne.Container:
		for _, o := range w.Objects {
			if e := entryIn(o); e != nil {
				return e
			}
		}
	}
	return nil
}
