package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"bagel/engine"
	"bagel/store"
)

// TestSettingsRoundTrip changes settings through the settings dialog, checks
// the file, and starts a second app on the same config folder: it has the same
// settings and reloads the last model by itself.
func TestSettingsRoundTrip(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	dir := h.loadModel("tiny-moe")

	h.a.showSettings()
	f := h.a.settingsForm
	f.temperature.SetText("0.25")
	f.topP.SetText("0.9")
	f.topK.SetText("40")
	f.minP.SetText("0.05")
	f.repetition.SetText("1.1")
	f.seed.SetText("1234")
	f.maxTokens.SetText("77")
	f.draftLen.SetText("6")
	f.treeWidth.SetText("2")
	f.promptCache.SetText("300")
	f.promptChunk.SetText("2048")
	f.thinking.SetChecked(true)
	// every registered engine switch has a box; turn each on: the ones
	// that were off are saved, the others left alone are not
	wantSwitches := map[string]bool{}
	for _, sw := range engine.Switches() {
		if !f.switches[sw.Name].Checked {
			wantSwitches[sw.Name] = true
		}
		f.switches[sw.Name].SetChecked(true)
		t.Cleanup(func() { _ = engine.SetSwitch(sw.Name, sw.Default) })
	}
	f.submit()

	want := s
	want.Temperature, want.TopP, want.TopK, want.MinP, want.RepetitionPenalty = 0.25, 0.9, 40, 0.05, 1.1
	want.Seed, want.MaxTokens, want.Thinking, want.DraftLength, want.PromptCacheMB = 1234, 77, true, 6, 300
	want.PrefillChunk, want.DraftTreeWidth = 2048, 2
	want.LastModel, want.Recent = dir, []string{dir}
	want.Models = map[string]ModelSettings{dir: {Sampling: want.Sampling, Seed: 1234, MaxTokens: 77,
		ContextLength: want.ContextLength, Thinking: true, DraftLength: 6, DraftTreeWidth: 2}} // saved with the model loaded
	if len(wantSwitches) > 0 {
		want.Switches = wantSwitches
	}
	if !reflect.DeepEqual(h.a.settings, want) {
		t.Fatalf("settings after Save:\n%+v\nwant\n%+v", h.a.settings, want)
	}
	if !h.a.composer.think.Checked {
		t.Error("the composer's Think box does not follow the setting")
	}
	data, err := os.ReadFile(filepath.Join(h.configDir, "settings.json"))
	if err != nil || !strings.Contains(string(data), `"temperature": 0.25`) {
		t.Fatalf("settings.json: %s, %v", data, err)
	}

	// The bounded fields name their bound.
	for _, c := range []struct {
		e        *formEntry
		v        string
		want, ok string // ok: a value within the bound
	}{
		{h.a.settingsForm.draftLen, "16", "draft length must be at most 15", "8"},
		{h.a.settingsForm.treeWidth, "4", "draft tree width must be at most 3", "3"},
		{h.a.settingsForm.promptCache, "1048577", "prompt cache must be at most 1048576 MB", "8"},
		{h.a.settingsForm.promptChunk, "9000", "prompt chunk must be at most 8192 tokens", "8"},
		{h.a.settingsForm.promptChunk, "-1", "prompt chunk", "8"},
	} {
		if err := c.e.Validator(c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.v, err, c.want)
		}
		if err := c.e.Validator(c.ok); err != nil {
			t.Errorf("%s: %v", c.ok, err)
		}
	}

	// An invalid value is refused with a dialog and changes nothing.
	h.a.showSettings()
	h.a.settingsForm.topP.SetText("1.5")
	h.a.settingsForm.submit()
	if text := h.dialogText(); !strings.Contains(strings.ToLower(text), "top-p must be") {
		t.Errorf("an invalid top-p shows %q", text)
	}
	if h.a.settings.TopP != 0.9 {
		t.Errorf("an invalid top-p was applied: %g", h.a.settings.TopP)
	}
	h.a.win.Resize(fyne.NewSize(900, 640))
	h.a.split.Offset = 0.3
	h.close()

	// Closing records the window as it was left; the next app opens it so.
	want.WindowWidth, want.WindowHeight, want.ChatListShare = 900, 640, 0.3
	again := newHarness(t, nil, h.configDir, h.dataDir)
	if size := again.a.win.Canvas().Size(); size.Width != 900 || size.Height != 640 || again.a.split.Offset != 0.3 {
		t.Errorf("the window opens at %v with the chat list at %g, want 900×640 and 0.3", size, again.a.split.Offset)
	}
	if !reflect.DeepEqual(again.a.settings, want) {
		t.Fatalf("settings in a new app:\n%+v\nwant\n%+v", again.a.settings, want)
	}
	again.a.Start()
	again.waitFor("the last model to reload", func() bool { return again.a.eng != nil })
	if again.a.modelDir != dir {
		t.Errorf("reloaded %q, want %q", again.a.modelDir, dir)
	}
	if got := again.a.eng.PromptCacheBudget(); got != 300<<20 {
		t.Errorf("the model loaded with a prompt cache of %d bytes, want the setting's 300 MB", got)
	}
}

// TestSettingsFile covers the file itself: defaults when missing, kept
// defaults for missing fields, and a readable error for a broken file.
func TestSettingsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	s, err := LoadSettings(path)
	if err != nil || !reflect.DeepEqual(s, DefaultSettings()) {
		t.Fatalf("missing file: %+v, %v", s, err)
	}
	os.WriteFile(path, []byte(`{"temperature": 0.1}`), 0o644)
	s, err = LoadSettings(path)
	if err != nil || s.Temperature != 0.1 || s.TopK != DefaultSettings().TopK {
		t.Fatalf("partial file: %+v, %v", s, err)
	}
	os.WriteFile(path, []byte(`{"temperature": -3}`), 0o644)
	if _, err := LoadSettings(path); err == nil || !strings.Contains(err.Error(), "temperature") {
		t.Fatalf("a negative temperature: %v", err)
	}
	os.WriteFile(path, []byte(`{oops`), 0o644)
	if _, err := LoadSettings(path); err == nil || !strings.Contains(err.Error(), "settings.json") {
		t.Fatalf("broken JSON: %v", err)
	}
	// A named pipe where the file should be: refused at once by name (a read
	// would wait forever for a writer), the defaults used.
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		s, err := LoadSettings(path)
		if !reflect.DeepEqual(s, DefaultSettings()) {
			err = fmt.Errorf("settings %+v, want the defaults (%v)", s, err)
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("a named pipe: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a named pipe as the settings file: LoadSettings still waiting after 5 s")
	}
}

// TestSettingsKeepWhatIsValid: one bad or wrongly typed value sets that
// setting aside, with a warning naming it, and keeps every other one (the
// recent models, a model's own settings, a pending download); the file as it
// was is copied to settings.json.bak before the app could save over it. (A
// bad value used to reset the whole file to the defaults.)
func TestSettingsKeepWhatIsValid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	file := `{"top_p": 5, "max_tokens": "lots", "repetition_context": 1000000000000000, "temperature": 0.3, "recent_models": ["/m/a", "/m/b"],
	  "pending_download": "org/name", "models": {"/m/a": {"temperature": 0.5, "max_tokens": 100}}}`
	os.WriteFile(path, []byte(file), 0o644)
	s, err := LoadSettings(path)
	if err == nil {
		t.Fatal("no warning for three bad values")
	}
	for _, w := range []string{"top_p", "max_tokens is a string; want a whole number", "repetition context must be 0 (the default, 20) to 262144 tokens", "settings.json.bak"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the warning %q does not mention %q", err, w)
		}
	}
	def := DefaultSettings()
	if s.TopP != def.TopP || s.MaxTokens != def.MaxTokens || s.RepetitionContext != def.RepetitionContext {
		t.Errorf("the bad values were kept: top_p %g, max_tokens %d, repetition_context %d", s.TopP, s.MaxTokens, s.RepetitionContext)
	}
	if s.Temperature != 0.3 || len(s.Recent) != 2 || s.PendingDownload != "org/name" || s.Models["/m/a"].MaxTokens != 100 {
		t.Errorf("valid settings were lost: %+v", s)
	}
	if bak, err := os.ReadFile(path + ".bak"); err != nil || string(bak) != file {
		t.Errorf("settings.json.bak: %q, %v; want the file as it was", bak, err)
	}
	if got, _ := os.ReadFile(path); string(got) != file {
		t.Error("loading changed the file")
	}
}

// TestSettingsSwitches: the switches section lists the engine's registry
// (each switch's effect in its wrapped help line), or says there is none; and
// no help line widens the dialog: the form and the switches fit a window of
// 700 points.
func TestSettingsSwitches(t *testing.T) {
	f := newSettingsForm(DefaultSettings())
	if len(f.switches) != len(engine.Switches()) {
		t.Fatalf("the form has %d switches, the engine %d", len(f.switches), len(engine.Switches()))
	}
	for _, sw := range engine.Switches() {
		c, help := f.switches[sw.Name], f.help[sw.Name]
		if c == nil || help == nil || !strings.HasPrefix(help.Text, sw.Description) || c.Checked != engine.SwitchOn(sw.Name) {
			t.Errorf("switch %s is not shown as registered", sw.Name)
		}
	}
	none := false
	if f.advanced.Items[0].Open {
		t.Error("the engine switches are not folded away under Advanced")
	}
	for _, it := range f.switchForm.Items {
		if l, ok := it.Widget.(*widget.Label); ok && l.Text == "none registered" {
			none = true
		}
	}
	if none != (len(engine.Switches()) == 0) {
		t.Errorf(`"none registered" shown: %v, with %d switches`, none, len(engine.Switches()))
	}
	f.advanced.Open(0)
	if w := f.content().MinSize().Width; w > 700 {
		t.Errorf("the settings need %.0f points of width, more than a window of 700", w)
	}
}

// TestDefaultSettingsFollowTheEngine: the defaults are the engine's
// recommended sampling for their thinking mode, the hints say the same, and
// the file keeps its key names with the engine's type embedded.
func TestDefaultSettingsFollowTheEngine(t *testing.T) {
	s := DefaultSettings()
	want := engine.RecommendedSampling(s.Thinking)
	if got := s.Sampling; got != want {
		t.Errorf("default sampling %+v, want the engine's recommendation %+v", got, want)
	}
	f := newSettingsForm(s)
	if help := f.help["Temperature"]; help == nil || !strings.Contains(help.Text, "recommended 0.6 with thinking, 0.7 without") {
		t.Errorf("the temperature hint reads %v", help)
	}

	path := filepath.Join(t.TempDir(), "settings.json")
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	for _, key := range []string{`"temperature"`, `"top_p"`, `"top_k"`, `"min_p"`, `"repetition_penalty"`, `"seed": -1`} {
		if strings.Count(string(data), key) != 1 {
			t.Errorf("settings.json has %s %d times:\n%s", key, strings.Count(string(data), key), data)
		}
	}
	if strings.Contains(string(data), "Temperature") || strings.Contains(string(data), "repetition_context") {
		t.Errorf("settings.json has Go field names or an unset field:\n%s", data)
	}
}

// TestSettingsValidate: a setting outside its range is refused by name, the
// sampling ones with the engine's message.
func TestSettingsValidate(t *testing.T) {
	for _, c := range []struct {
		change func(*Settings)
		want   string
	}{
		{func(s *Settings) { s.Temperature = -1 }, "temperature must be a number ≥ 0"},
		{func(s *Settings) { s.TopP = 2 }, "top-p must be in [0, 1]"},
		{func(s *Settings) { s.TopK = -1 }, "top-k must be ≥ 0"},
		{func(s *Settings) { s.MinP = -0.5 }, "min-p must be in [0, 1]"},
		{func(s *Settings) { s.RepetitionPenalty = -1 }, "repetition penalty must be between 0 and 100"},
		{func(s *Settings) { s.MaxTokens = -1 }, "max tokens must be ≥ 0"},
		{func(s *Settings) { s.DraftLength = 16 }, "draft length must be 0 (the default, 4) to 15"},
		{func(s *Settings) { s.DraftTreeWidth = 4 }, "draft tree width must be 0 (one line of guesses) to 3, got 4"},
		{func(s *Settings) { s.DraftTreeWidth = -1 }, "draft tree width must be 0"},
		{func(s *Settings) { s.TextScale = 9 }, "text scale must be 0.7 to 2"},
		{func(s *Settings) { s.ContextLength = -1 }, "context length must be ≥ 0"},
		{func(s *Settings) { s.PromptCacheMB = -1 }, "prompt cache must be 0 (the default, 1024 MB)"},
		{func(s *Settings) { s.PromptCacheMB = 1<<20 + 1 }, "prompt cache must be 0 (the default, 1024 MB) to 1048576 MB"},
		{func(s *Settings) { s.PrefillChunk = -1 }, "prompt chunk must be 0 (the default, 2048) to 8192 tokens"},
		{func(s *Settings) { s.PrefillChunk = 9000 }, "prompt chunk must be 0 (the default, 2048) to 8192 tokens, got 9000"},
		{func(s *Settings) { s.Backend = "tpu" }, `unknown backend "tpu"`},
		{func(s *Settings) { s.Seed = -1 }, ""},
	} {
		s := DefaultSettings()
		c.change(&s)
		err := s.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: Validate() = %v, want %q", s, err, c.want)
		}
	}
	f := newSettingsForm(DefaultSettings())
	if err := f.topP.Validator("1.5"); err == nil || !strings.Contains(err.Error(), "top-p must be") {
		t.Errorf("the top-p entry accepts 1.5: %v", err)
	}
	if err := f.temperature.Validator("warm"); err == nil || !strings.Contains(err.Error(), "temperature must be a number") {
		t.Errorf("the temperature entry accepts a word: %v", err)
	}
}

// TestSettingsShowTheMemoryEstimate: with a model loaded, the Memory line says
// what it needs at the context length typed, against the backend's memory,
// and follows the entry.
func TestSettingsShowTheMemoryEstimate(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.a.showSettings()
	if got := h.a.settingsForm.memory.Text; !strings.Contains(got, "load a model") {
		t.Errorf("no model: %q", got)
	}
	h.a.settingsForm.submit()

	h.loadModel("tiny-moe")
	h.a.memoryBudget = func(string) engine.MemoryBudget {
		return engine.MemoryBudget{Total: 64 << 20, Source: "a test machine"}
	}
	h.a.showSettings()
	f := h.a.settingsForm
	f.ctxLen.SetText("256")
	if got := f.memory.Text; !strings.Contains(got, "fits: needs about") || !strings.Contains(got, "of 64 MiB of a test machine") {
		t.Errorf("at 256 tokens: %q", got)
	}
	f.ctxLen.SetText("100000")
	if got := f.memory.Text; !strings.Contains(got, "does not fit") {
		t.Errorf("at 100000 tokens: %q", got)
	}
	f.ctxLen.SetText("lots")
	if got := f.memory.Text; got != "—" {
		t.Errorf("not a number: %q", got)
	}
}

// TestNarrowWindow: with a model loaded and the performance panel shown the
// window fits half a 1470-point laptop screen (735; the composer's hint is
// cut, not the window widened for it; a reply's actions that do not fit go
// under a more button); with the panel hidden (View menu) it fits 720, and
// the choice is kept.
func TestNarrowWindow(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	if !h.a.perfPane.Visible() {
		t.Fatal("the performance panel starts hidden")
	}
	h.loadModel("tiny-moe")
	h.typeAndSend("Hi")
	h.waitReplyDone()
	if w := h.a.win.Content().MinSize().Width; w > 735 {
		t.Errorf("with a model, a reply and the panel shown the minimum width is %g, want at most 735", w)
	}
	h.a.togglePerformance()
	if w := h.a.win.Content().MinSize().Width; h.a.perfPane.Visible() || w > 720 {
		t.Errorf("panel visible %v, minimum width %g: want hidden and at most 720", h.a.perfPane.Visible(), w)
	}
	// A reply with every action (Copy, Select, Copy code, ‹ 2/2 ›, Regenerate) too.
	conv, _ := h.a.store.CreateConversation("wide", "")
	added, _ := h.a.store.Replace(conv.ID, 0, store.Message{Role: store.RoleUser, Content: "Hi"},
		store.Message{Role: store.RoleAssistant, Content: "```\nx\n```"})
	h.a.store.RegenerateReply(conv.ID, added[1].ID, store.Message{Role: store.RoleAssistant, Content: "```\ny\n```", Model: "Qwen3.5-35B-A3B-4bit"})
	h.a.reloadConversations()
	h.a.selectConversation(conv.ID)
	if w := h.a.win.Content().MinSize().Width; w > 720 {
		t.Errorf("with a reply showing every action the minimum width is %g, want at most 720", w)
	}
	h.a.togglePerformance() // the actions that do not fit go under their more button
	if w := h.a.win.Content().MinSize().Width; !h.a.perfPane.Visible() || w > 735 {
		t.Errorf("panel shown beside every action: minimum width %g, want at most 735", w)
	}
	h.a.togglePerformance()
	h.close()
	again := newHarness(t, nil, h.configDir, h.dataDir)
	if again.a.perfPane.Visible() || !again.a.settings.HidePerformance {
		t.Error("the hidden panel came back after a restart")
	}
}

// TestFailedReloadRestoresTheSettings: reloading the model for a backend that
// cannot open here (CUDA without a driver, as on this machine) puts the
// backend back and loads the model again, saying why, instead of leaving no
// model.
func TestFailedReloadRestoresTheSettings(t *testing.T) {
	if !slices.Contains(engine.BackendsHere(), "cuda") {
		t.Skip("no cuda backend in this build")
	}
	if engine.DeviceMemory("cuda").Source != "" && !strings.Contains(engine.DeviceMemory("cuda").Source, "unavailable") {
		t.Skip("a CUDA device answers here")
	}
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	next := h.a.settings
	next.Backend = "cuda"
	h.a.applySettings(next)
	h.a.dialogs[len(h.a.dialogs)-1].(*dialog.ConfirmDialog).Confirm() // reload now
	h.waitFor("the model to load again", func() bool { return !h.a.loading && h.a.eng != nil && h.a.restoreOnFailure == nil })
	if h.a.settings.Backend != s.Backend || h.a.eng.Backend != "cpu" {
		t.Errorf("backend %q setting, %q loaded; want %q", h.a.settings.Backend, h.a.eng.Backend, s.Backend)
	}
	if text := h.dialogText(); !strings.Contains(text, "back to what they were") {
		t.Errorf("the message reads %q", text)
	}
}

// TestSettingsFollowTheModel: the sampling and context length saved with a
// model loaded come back when that model loads again, after another model
// with its own.
func TestSettingsFollowTheModel(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	a := h.loadModel("tiny-moe")
	first := h.a.settings
	first.Temperature, first.ContextLength = 0.3, 256
	h.a.applySettings(first)
	h.a.closeTopDialog() // not now: the context length applies at the next load

	b := h.loadModel("tiny-dense")
	if h.a.settings.Temperature != 0.3 {
		t.Fatalf("a model with no settings of its own changed them: temperature %g", h.a.settings.Temperature)
	}
	second := h.a.settings
	second.Temperature = 0.9
	h.a.applySettings(second)
	h.a.closeTopDialog()

	h.a.loadModel(a, "")
	h.waitFor("the first model", func() bool { return !h.a.loading && h.a.modelDir == a })
	if h.a.settings.Temperature != 0.3 || h.a.eng.ContextLength() != 256 {
		t.Errorf("back to %s: temperature %g, context %d; want 0.3 and 256", a, h.a.settings.Temperature, h.a.eng.ContextLength())
	}
	h.a.loadModel(b, "")
	h.waitFor("the second model", func() bool { return !h.a.loading && h.a.modelDir == b })
	if h.a.settings.Temperature != 0.9 {
		t.Errorf("back to %s: temperature %g, want 0.9", b, h.a.settings.Temperature)
	}
}

// TestWheelScrollsTheSettingsOverFields: the mouse wheel over a settings
// field scrolls the form (a field's own scroller used to take the wheel).
func TestWheelScrollsTheSettingsOverFields(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.a.win.Resize(fyne.NewSize(1000, 700))
	h.a.showSettings()
	f := h.a.settingsForm
	at := fyne.CurrentApp().Driver().AbsolutePositionForObject(f.topP).Add(fyne.NewPos(10, 10))
	before := f.scroll.Offset.Y
	test.Scroll(h.a.win.Canvas(), at, 0, -120)
	if f.scroll.Offset.Y <= before {
		t.Errorf("the wheel over the Top-p field left the form at %.0f (was %.0f)", f.scroll.Offset.Y, before)
	}
}

// TestSamplingSliders: each sampling value has a slider over its range beside
// its field: moving it writes the value into the field, a value typed moves
// it (one past its end puts it at the end), a preset moves them all, and a
// value out of range shows the field's error in its help line until fixed.
func TestSamplingSliders(t *testing.T) {
	test.NewTempApp(t)
	f := newSettingsForm(testSettings())
	temp := f.sliders[f.temperature]
	if temp == nil || temp.Min != 0 || temp.Max != 2 || len(f.sliders) != 5 {
		t.Fatalf("sliders: %d, temperature's %+v", len(f.sliders), temp)
	}
	temp.SetValue(1.25)
	if f.temperature.Text != "1.25" {
		t.Errorf("the slider at 1.25 wrote %q", f.temperature.Text)
	}
	f.temperature.SetText("0.4")
	if temp.Value != 0.4 {
		t.Errorf("0.4 typed put the slider at %g", temp.Value)
	}
	f.topK.SetText("500")
	if v := f.sliders[f.topK].Value; v != 100 || f.topK.Text != "500" {
		t.Errorf("top-k 500 typed: slider %g, field %q", v, f.topK.Text)
	}
	f.applyPreset("Creative")
	if v := f.sliders[f.minP].Value; v != 0.05 {
		t.Errorf("the Creative preset left min-p's slider at %g", v)
	}
	help := f.help["Temperature"]
	f.temperature.SetText("-3")
	if help.Importance != widget.DangerImportance || !strings.Contains(help.Text, "temperature") {
		t.Errorf("temperature -3: help %q", help.Text)
	}
	f.temperature.SetText("0.7")
	if help.Importance == widget.DangerImportance || help.Text != help.hint {
		t.Errorf("temperature fixed: help %q", help.Text)
	}
}

// TestSettingsSaveOnlyTheSwitchesSet: Save keeps the switches set before
// (this build's and another's), adds the ones whose box changed, and leaves
// the rest unsaved, so that they keep their defaults (or what a model load
// picks for them); after Reset to defaults none of this build's is kept.
func TestSettingsSaveOnlyTheSwitchesSet(t *testing.T) {
	all := engine.Switches()
	if len(all) < 2 {
		t.Skip("fewer than two switches registered")
	}
	set, changed := all[0], all[1]
	base := DefaultSettings()
	base.Switches = map[string]bool{"a-switch-of-another-build": true, set.Name: set.Default}
	f := newSettingsForm(base)
	f.switches[changed.Name].SetChecked(!f.switches[changed.Name].Checked)
	got, err := f.read(base)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"a-switch-of-another-build": true, set.Name: set.Default, changed.Name: !engine.SwitchOn(changed.Name)}
	if !reflect.DeepEqual(got.Switches, want) {
		t.Errorf("saved switches %v, want %v", got.Switches, want)
	}
	f.fill(DefaultSettings())
	got, err = f.read(base)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"a-switch-of-another-build": true}; !reflect.DeepEqual(got.Switches, want) {
		t.Errorf("after Reset to defaults: saved switches %v, want %v", got.Switches, want)
	}
}
