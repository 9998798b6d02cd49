package ui

import (
	"path/filepath"
	"strings"
	"testing"

	"bagel/assets"
	"bagel/engine"
	"bagel/internal/testmodel"

	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// useDemo points the app at the repository's demo model for one test.
func useDemo(t *testing.T) string {
	dir := filepath.Join(testmodel.Root(t), "assets", "demo-model")
	old := demoDir
	demoDir = func() string { return dir }
	t.Cleanup(func() { demoDir = old })
	return dir
}

// TestFirstStartOpensTheDemo: with no model chosen, the app opens the demo
// model, names it as the demo in the model bar, points at Models… for real
// ones, and the first question gets a reply from the books.
func TestFirstStartOpensTheDemo(t *testing.T) {
	dir := useDemo(t)
	s := testSettings()
	s.MaxTokens = 24
	h := newHarness(t, &s, "", "")
	h.a.Start()
	h.waitFor("the demo to load", func() bool { return !h.a.loading && h.a.eng != nil })
	if h.a.modelDir != dir {
		t.Fatalf("opened %q, want the demo %q", h.a.modelDir, dir)
	}
	if got := h.a.bar.name.full; got != assets.DemoName {
		t.Errorf("the model bar says %q, want %q", got, assets.DemoName)
	}
	var words []string
	var models *widget.Button
	for _, o := range test.LaidOutObjects(h.a.chat.welcome) {
		switch o := o.(type) {
		case *canvas.Text:
			words = append(words, o.Text)
		case *widget.Label:
			words = append(words, o.Text)
		case *widget.Button:
			if strings.HasPrefix(o.Text, "Models…") {
				models = o
			}
		}
	}
	if text := strings.Join(words, " "); !strings.Contains(text, "Jargon File") || !strings.Contains(text, "demo") {
		t.Errorf("the welcome does not say it is the demo: %q", text)
	}
	if models == nil {
		t.Error("the welcome has no Models… button for real models")
	}
	h.typeAndSend("What is a kludge?")
	reply := h.waitReplyDone()
	if !strings.Contains(reply.Content, "shortcoming of a program") {
		t.Errorf("the demo's reply: %q", reply.Content)
	}
	if h.a.settings.LastModel != dir {
		t.Errorf("LastModel %q: the demo should reopen next time until another model is chosen", h.a.settings.LastModel)
	}
}

// TestChosenModelWinsOverTheDemo: a model chosen before reopens, not the demo.
func TestChosenModelWinsOverTheDemo(t *testing.T) {
	useDemo(t)
	s := testSettings()
	s.LastModel = testmodel.Dir(t, "tiny-moe")
	h := newHarness(t, &s, "", "")
	h.a.Start()
	h.waitFor("the model to load", func() bool { return !h.a.loading && h.a.eng != nil })
	if isDemo(h.a.modelDir) {
		t.Errorf("the demo opened over the chosen model %q", s.LastModel)
	}
}

// TestModelsListsTheDemoFirst: the Models dialog lists the demo, named as
// such, before the Hub cache's models, and offers no Delete for it.
func TestModelsListsTheDemoFirst(t *testing.T) {
	useDemo(t)
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	s := testSettings()
	h := newHarness(t, &s, "", "")
	l := &library{a: h.a}
	got := l.models()
	if len(got) == 0 || got[0].Name != assets.DemoName || got[0].ModelType != "qwen3_5" || got[0].Repo != "" {
		t.Fatalf("the dialog's first model: %+v", got)
	}
}

// TestSettingsSayWhetherTheModelHasAnMTPHead: the speculative-mtp switch's
// hint names the loaded model and says whether it has a head: the demo model
// has; the tiny test model has not, and the hint says the switch does nothing.
func TestSettingsSayWhetherTheModelHasAnMTPHead(t *testing.T) {
	hint := func(h *harness) string {
		h.a.showSettings()
		defer h.a.win.Canvas().Overlays().Top().Hide()
		if help := h.a.settingsForm.help[engine.SwitchSpeculativeMTP]; help != nil {
			return help.Text
		}
		return ""
	}
	useDemo(t)
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.a.Start()
	h.waitFor("the demo to load", func() bool { return !h.a.loading && h.a.eng != nil })
	if got := hint(h); !strings.Contains(got, "has an MTP head") {
		t.Errorf("with the demo loaded the switch's hint says %q", got)
	}
	h.loadModel("tiny-moe")
	if got := hint(h); !strings.Contains(got, "does nothing") {
		t.Errorf("with the tiny model loaded the switch's hint says %q", got)
	}
}
