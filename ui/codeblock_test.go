package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"bagel/store"
)

func TestSplitFences(t *testing.T) {
	md := "Intro.\n\n```go\nfmt.Println(1)\n```\n\nMiddle.\n```\nplain\n```\nEnd ```not a fence\n```py\nunclosed"
	parts := splitFences(md)
	var got []string
	for _, p := range parts {
		if p.fenced {
			got = append(got, "["+p.lang+"]"+p.code)
		} else {
			got = append(got, p.src)
		}
	}
	want := []string{"Intro.\n\n", "[go]fmt.Println(1)", "\nMiddle.\n", "[]plain", "End ```not a fence\n```py\nunclosed"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("parts %q\nwant  %q", got, want)
	}
	var whole strings.Builder
	for _, p := range parts {
		whole.WriteString(p.src)
	}
	if whole.String() != md {
		t.Errorf("the parts do not add up to the text")
	}
}

// TestCodeBlocksCopyAlone: each complete code block of a reply shows its
// language and a Copy that copies that block alone and says Copied.
func TestCodeBlocksCopyAlone(t *testing.T) {
	a := test.NewTempApp(t)
	md := "Two ways:\n\n```go\nfmt.Println(\"hi\")\n```\n\nor\n\n```python\nprint(\"hi\")\n```\n\nDone.\n"
	v := newMessageView(store.Message{Role: store.RoleAssistant, Content: md, Status: store.StatusDone}, "Bagel", nil)
	v.post = func(f func()) {} // the feedback's reset is not waited for here
	v.root.Resize(fyne.NewSize(600, 800))
	if len(v.codes) != 2 {
		t.Fatalf("%d code views, want 2", len(v.codes))
	}
	var python *codeView
	for _, o := range v.done.Objects {
		if cv := v.codes[o]; cv != nil && strings.Contains(cv.code, "print") {
			python = cv
		}
	}
	if python == nil || !strings.Contains(strings.Join(rows(python.root), "\n"), "python") {
		t.Fatalf("no python block with its label: %v", python)
	}
	test.Tap(python.copy)
	if got := a.Clipboard().Content(); got != `print("hi")` || python.copy.Text != "Copied" {
		t.Errorf("clipboard %q, button %q", got, python.copy.Text)
	}
	if text := v.text(); !strings.Contains(text, `fmt.Println("hi")`) || !strings.Contains(text, "Done.") {
		t.Errorf("the reply's text %q", text)
	}
}
