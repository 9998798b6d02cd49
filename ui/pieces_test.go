package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bagel/engine"
	"bagel/store"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
)

func TestExportMarkdown(t *testing.T) {
	conv := store.Conversation{Title: "Bagels", SystemPrompt: "Be brief.\nBe kind.", Created: time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC)}
	msgs := []store.Message{
		{Role: store.RoleUser, Content: "Why boil them?"},
		{Role: store.RoleAssistant, Model: "Qwen3.5-35B-A3B-4bit", Reasoning: "Think about crust.", Content: "\n\nFor the **crust**.", Summary: "5 tokens at 90 tok/s"},
		{Role: store.RoleUser, Content: "And then?"},
		{Role: store.RoleAssistant, Content: "Bake", Status: store.StatusStopped},
	}
	got := exportMarkdown(conv, msgs)
	for _, want := range []string{
		"# Bagels\n",
		"> Be brief.\n> Be kind.",
		"## You\n\nWhy boil them?\n",
		"## Qwen3.5-35B-A3B-4bit\n\n<details><summary>Reasoning</summary>\n\nThink about crust.\n\n</details>\n\nFor the **crust**.\n",
		"<sub>5 tokens at 90 tok/s</sub>",
		"## Assistant\n\nBake\n\n_(stopped)_",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the export lacks %q:\n%s", want, got)
		}
	}
	if name := exportFileName("What/is: a *bagel*?"); name != "Whatis a bagel.md" {
		t.Errorf("file name %q", name)
	}
}

func TestFitWarning(t *testing.T) {
	const gib = 1 << 30
	mem := engine.Memory{Weights: 18 * gib, Cache: 2 * gib}
	for _, c := range []struct {
		budget engine.MemoryBudget
		want   string
	}{
		{engine.MemoryBudget{}, ""},
		{engine.MemoryBudget{Total: 64 * gib, Available: 48 * gib, Source: "system RAM"}, ""},
		{engine.MemoryBudget{Total: 16 * gib, Available: 12 * gib, Source: "system RAM"}, "System RAM: 16 GiB in all"},
		{engine.MemoryBudget{Total: 32 * gib, Available: 8 * gib, Source: "system RAM"}, "Only 8.0 GiB of the 32 GiB of system RAM"},
		{engine.MemoryBudget{Total: 16 * gib, Source: "Metal's recommended working set (Apple M2)"}, "Metal's recommended working set (Apple M2): 16 GiB in all"},
		{engine.MemoryBudget{Total: 24 * gib, Source: "Metal's recommended working set (Apple M2)"}, ""}, // available unknown: no guess
	} {
		got := fitWarning(mem, c.budget)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("fitWarning(%+v) = %q, want %q", c.budget, got, c.want)
		}
	}
}

func TestRateMeter(t *testing.T) {
	var m rateMeter
	t0 := time.Now()
	if m.rate(t0) != 0 {
		t.Fatal("an empty meter reads non-zero")
	}
	for i := 0; i <= 100; i++ { // 50 tok/s for two seconds
		m.add(t0.Add(time.Duration(i) * 20 * time.Millisecond))
	}
	now := t0.Add(2 * time.Second)
	if r := m.rate(now); r < 45 || r > 55 {
		t.Errorf("rate %g, want about 50", r)
	}
	if r := m.rate(now.Add(3 * time.Second)); r != 0 {
		t.Errorf("a stalled meter reads %g", r)
	}
}

func TestSparkline(t *testing.T) {
	s := newSparkline(time.Minute)
	w := test.NewTempWindow(t, s)
	w.Resize(fyne.NewSize(300, 80))
	t0 := time.Now()
	for i := 0; i < 100; i++ {
		s.add(t0.Add(time.Duration(i)*time.Second), float64(i))
	}
	if len(s.samples) != 61 || s.peak() != 99 {
		t.Fatalf("kept %d samples, peak %g; want the last minute (61), peak 99", len(s.samples), s.peak())
	}
	// A gap (the time between two replies) is not joined by a line.
	s.add(t0.Add(130*time.Second), 5)
	r := test.TempWidgetRenderer(t, s).(*sparkRenderer)
	r.Layout(fyne.NewSize(300, 80))
	if last := r.lines[len(s.samples)-2]; last.Visible() {
		t.Error("the gap between replies is drawn as a line")
	}
}

// TestComposerKeys: Ctrl/Cmd+Enter sends too; Enter with nothing typed does nothing.
func TestComposerKeys(t *testing.T) {
	sent := 0
	e := newComposerEntry(func() { sent++ }, func() {})
	test.NewTempWindow(t, e)
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	e.TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyReturn, Modifier: fyne.KeyModifierControl})
	e.TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyEnter, Modifier: fyne.KeyModifierSuper})
	if sent != 3 {
		t.Errorf("sent %d times, want 3 (Enter, Ctrl+Enter, Cmd+Enter)", sent)
	}
	if e.Text != "" {
		t.Errorf("the entry holds %q", e.Text)
	}
}

func TestTitleFrom(t *testing.T) {
	for in, want := range map[string]string{
		"  Hello there \nsecond line":                                         "Hello there",
		"Explain the difference between a bagel and a bialy in detail please": "Explain the difference between a bagel and a…",
	} {
		if got := titleFrom(in); got != want {
			t.Errorf("titleFrom(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSpeculativeText(t *testing.T) {
	for _, c := range []struct {
		st   engine.Stats
		want string
	}{
		{engine.Stats{}, "off"},
		{engine.Stats{Speculative: true}, "on, no drafts yet"},
		{engine.Stats{Speculative: true, DraftProposed: 40, DraftAccepted: 30}, "30/40 drafts accepted (75%)"},
		{engine.Stats{Speculative: true, DraftProposed: 40, DraftAccepted: 30, Verifies: 12, VerifyTime: 120 * time.Millisecond},
			"30/40 drafts accepted (75%), 3.5 tokens a verify of 10 ms"},
	} {
		if got := speculativeText(c.st); got != c.want {
			t.Errorf("%+v: %q, want %q", c.st, got, c.want)
		}
	}
}

// TestModelBarKeepsItsHeightWhileLoading: the progress shown while a model
// loads does not make the bar taller (the window would jump down).
func TestModelBarKeepsItsHeightWhileLoading(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	b := h.a.bar
	idle := b.root.MinSize().Height
	for _, fraction := range []float64{-1, 0.4} {
		b.showBusy("Loading tiny-moe…", fraction)
		if got := b.root.MinSize().Height; got != idle {
			t.Errorf("progress %v: the bar is %v high, %v when idle", fraction, got, idle)
		}
	}
	b.refresh()
}

// TestExportAll writes every chat as its own Markdown file: titles that clash
// (with each other or with a file already in the folder) get " (2)", " (3)",
// and nothing already there is overwritten.
func TestExportAll(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "chats.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct{ title, text string }{{"Bagels", "boil"}, {"Bagels", "bake"}, {"Rye", "seeds"}} {
		conv, err := st.CreateConversation(c.title, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Replace(conv.ID, 0, store.Message{Role: store.RoleUser, Content: c.text}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Rye.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := exportAll(st, dir)
	if err != nil || n != 3 {
		t.Fatalf("exportAll: %d chats, %v; want 3", n, err)
	}
	texts := map[string]string{}
	for _, name := range []string{"Bagels.md", "Bagels (2).md", "Rye.md", "Rye (2).md"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		texts[name] = string(data)
	}
	if texts["Rye.md"] != "mine" {
		t.Errorf("a file already in the folder was overwritten: %q", texts["Rye.md"])
	}
	if !strings.Contains(texts["Rye (2).md"], "seeds") {
		t.Errorf("Rye (2).md: %q", texts["Rye (2).md"])
	}
	if both := texts["Bagels.md"] + texts["Bagels (2).md"]; !strings.Contains(both, "boil") || !strings.Contains(both, "bake") {
		t.Errorf("the two Bagels chats: %q", both)
	}
	if _, err := exportAll(st, filepath.Join(dir, "no such folder")); err == nil {
		t.Error("exporting into a missing folder did not fail")
	}

	// A question's image: linked from the Markdown, its file beside it.
	img, err := st.SaveImage([]byte("\x89PNG\r\n\x1a\ncat"), "my [cat].png")
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := st.CreateConversation("Cat", "")
	if _, err := st.Replace(conv.ID, 0, store.Message{Role: store.RoleUser, Content: "what is it?", Images: []store.Image{img}}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := exportAll(st, out); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, "Cat.md"))
	if link := "![my (cat).png](images/" + img.File + ")"; !strings.Contains(string(md), link) {
		t.Errorf("Cat.md lacks %q:\n%s", link, md)
	}
	if data, err := os.ReadFile(filepath.Join(out, "images", img.File)); err != nil || string(data) != "\x89PNG\r\n\x1a\ncat" {
		t.Errorf("the exported image: %q, %v", data, err)
	}
}

func TestActivityText(t *testing.T) {
	for _, c := range []struct {
		v    perfView
		want string
	}{
		{perfView{Phase: "reading the prompt… 40%"}, "reading the prompt… 40%"},
		{perfView{Phase: "reading the prompt… 80%", Stats: engine.Stats{PrefillTokensPerSec: 4210}}, "reading the prompt… 80% · prompt 4210 tok/s"},
		{perfView{Phase: "writing the answer…", DecodeNow: 142.4, Stats: engine.Stats{GeneratedTokens: 9, TimeToFirstToken: 310 * time.Millisecond}},
			"writing the answer… · 142 tok/s · first token 310 ms"},
		{perfView{Phase: "thinking…", Stats: engine.Stats{GeneratedTokens: 1}}, "thinking…"},
	} {
		if got := activityText(c.v); got != c.want {
			t.Errorf("activityText(%+v) = %q, want %q", c.v, got, c.want)
		}
	}
	if got := replySpeedText(engine.Stats{GeneratedTokens: 40, DecodeTokensPerSec: 88.25, TimeToFirstToken: 2 * time.Second}); got != "last reply 88.2 tok/s, first token 2000 ms" {
		t.Errorf("replySpeedText: %q", got)
	}
	if got := replySpeedText(engine.Stats{}); got != "" {
		t.Errorf("replySpeedText of a reply without tokens: %q", got)
	}
}

// TestProgressThrottle: updates of one stage come at most every 50 ms, but a
// new stage and the end always show.
func TestProgressThrottle(t *testing.T) {
	var th progressThrottle
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		ms       int
		fraction float64
		stage    string
		want     bool
	}{
		{0, 0.1, "binding weights", true},
		{10, 0.2, "binding weights", false},
		{60, 0.3, "binding weights", true},
		{61, 0.92, "preparing the GPU kernels", true}, // a new stage, 1 ms later
		{62, 0.95, "allocating the cache", true},
		{63, 1, "ready", true},
		{64, 1, "ready", true}, // the end always shows
	} {
		if got := th.show(c.fraction, c.stage, t0.Add(time.Duration(c.ms)*time.Millisecond)); got != c.want {
			t.Errorf("%d ms, %q: show %v, want %v", c.ms, c.stage, got, c.want)
		}
	}
}
