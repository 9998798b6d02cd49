package ui

import (
	"bagel/internal/testmodel"
	"bagel/store"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// TestBrokenChatDatabaseOpensTheWindow: a corrupt chats.db no longer stops
// the app with one line on stderr: the window opens, says what is wrong and
// where the file is, and "Move aside and start fresh" renames the file
// (nothing deleted) and gives a working, empty chat list whose chats are
// saved at the usual path.
func TestBrokenChatDatabaseOpensTheWindow(t *testing.T) {
	dataDir := t.TempDir()
	path := filepath.Join(dataDir, "chats.db")
	junk := []byte(strings.Repeat("this is not a database ", 400))
	if err := os.WriteFile(path, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	s := testSettings()
	h := newHarness(t, &s, "", dataDir)
	h.a.Start()
	text := h.dialogText()
	for _, w := range []string{"could not open its saved chats", path, "Move aside"} {
		if !strings.Contains(text, w) {
			t.Errorf("the dialog does not say %q:\n%s", w, text)
		}
	}
	var move *widget.Button
	for _, b := range findButtons(h.a.win.Canvas().Overlays().Top()) {
		if b.Text == "Move aside and start fresh" {
			move = b
		}
	}
	if move == nil {
		t.Fatal("no Move aside button")
	}
	test.Tap(move)
	if h.a.dbProblem != nil {
		t.Fatalf("still on the stand-in database: %v", h.dialogText())
	}
	aside, _ := filepath.Glob(path + ".broken-*")
	if len(aside) != 1 {
		t.Fatalf("the broken file was not kept beside: %v", aside)
	}
	if kept, _ := os.ReadFile(aside[0]); string(kept) != string(junk) {
		t.Error("the broken file changed")
	}
	h.a.newConversation()
	if h.a.conv == nil {
		t.Fatal("no chat can be started on the fresh database")
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("no fresh database at %s: %v", path, err)
	}
}

// findButtons lists the buttons under o.
func findButtons(o fyne.CanvasObject) []*widget.Button {
	var out []*widget.Button
	if o == nil {
		return nil
	}
	for _, x := range test.LaidOutObjects(o) {
		if b, ok := x.(*widget.Button); ok {
			out = append(out, b)
		}
	}
	return out
}

// TestSecondAppOnOneDataFolder: a second app on the same chats says, first
// thing, that another one is running and offers to quit; once the first has
// closed, a new one starts without the question.
func TestSecondAppOnOneDataFolder(t *testing.T) {
	s := testSettings()
	dataDir := t.TempDir()
	first := newHarness(t, &s, "", dataDir)
	first.a.Start()
	if text := first.dialogText(); strings.Contains(text, "already running") {
		t.Fatalf("the first app asks: %s", text)
	}
	second := newHarness(t, &s, "", dataDir)
	model := testmodel.Dir(t, "tiny-moe")
	second.a.openAtStart = model // as bagel PATH
	second.a.Start()
	if text := second.dialogText(); !strings.Contains(text, "already running") || !strings.Contains(text, dataDir) ||
		!strings.Contains(text, "brought to the front") {
		t.Errorf("the second app does not say another runs on %s, brought to the front: %q", dataDir, text)
	}
	// The first came to the front and opens the model the second was given.
	first.waitFor("the first to be raised and to load the model", func() bool {
		return first.a.raised == 1 && !first.a.loading && first.a.modelDir == model
	})
	if second.a.loading || second.a.eng != nil {
		t.Error("the second app loads a model too")
	}
	second.close()
	first.close()
	third := newHarness(t, &s, "", dataDir)
	third.a.Start()
	if text := third.dialogText(); strings.Contains(text, "already running") {
		t.Errorf("after the first closed, a new app still asks: %s", text)
	}
}

// TestReadOnlyChatDatabaseOpensTheWindow: a chats.db that cannot be written
// (made immutable with chattr, which even root cannot write) opens the window
// on a stand-in with the dialog saying the file is read-only and where it
// is; moving it aside fails with a message, and the file is left as it was.
func TestReadOnlyChatDatabaseOpensTheWindow(t *testing.T) {
	dataDir := t.TempDir()
	path := filepath.Join(dataDir, "chats.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateConversation("kept", ""); err != nil {
		t.Fatal(err)
	}
	st.Close()
	before, _ := os.ReadFile(path)
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		t.Skipf("chattr +i is not possible here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", path).Run() })
	s := testSettings()
	h := newHarness(t, &s, "", dataDir)
	h.a.Start()
	text := h.dialogText()
	for _, w := range []string{"could not open its saved chats", "read-only", path} {
		if !strings.Contains(text, w) {
			t.Errorf("the dialog does not say %q:\n%s", w, text)
		}
	}
	for _, b := range findButtons(h.a.win.Canvas().Overlays().Top()) {
		if b.Text == "Move aside and start fresh" {
			test.Tap(b)
		}
	}
	if h.a.dbProblem == nil || !strings.Contains(h.dialogText(), "could not be moved aside") {
		t.Errorf("moving an immutable file aside: problem %v, dialog %q", h.a.dbProblem, h.dialogText())
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the read-only file changed")
	}
}
