package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"bagel/store"
)

// TestTablesAsText: a table becomes a grid whose columns keep their
// delimiter row's alignment (left, centred, right); a table in a code block
// and pipes without a delimiter row stay as they are.
func TestTablesAsText(t *testing.T) {
	in := "Toppings:\n\n| Bagel | Topping | Price |\n|---|:---:|---:|\n| plain | cream cheese | 2.50 |\n| sesame | lox | 11 |\n\nEnjoy.\n```\n| not | a table |\n|---|---|\n```"
	want := "Toppings:\n\n```\n" +
		"Bagel  │   Topping    │ Price\n" +
		"───────┼──────────────┼──────\n" +
		"plain  │ cream cheese │  2.50\n" +
		"sesame │     lox      │    11\n" +
		"```\n\nEnjoy.\n```\n| not | a table |\n|---|---|\n```"
	if got := tablesAsText(in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, plain := range []string{"a | b without a rule", "no pipes at all", "| just one row |"} {
		if got := tablesAsText(plain); got != plain {
			t.Errorf("%q became %q", plain, got)
		}
	}
}

func TestCodeBlocks(t *testing.T) {
	md := "Run:\n```sh\nmake test\n```\nthen\n```go\nfmt.Println(1)\nfmt.Println(2)\n```\nand\n```\nstill streaming"
	want := []string{"make test", "fmt.Println(1)\nfmt.Println(2)", "still streaming"}
	if got := codeBlocks(md); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := codeBlocks("no code"); got != nil {
		t.Errorf("no code: %q", got)
	}
}

// TestCopyCode: a reply with code has Copy code, which puts its code blocks
// (and nothing else) on the clipboard; a table shows as aligned text.
func TestCopyCode(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	conv, err := h.a.store.CreateConversation("code", "")
	if err != nil {
		t.Fatal(err)
	}
	reply := "Build it:\n```sh\nmake test\n```\n| a | b |\n|---|---|\n| 1 | 2 |"
	if _, err := h.a.store.Replace(conv.ID, 0, store.Message{Role: store.RoleUser, Content: "How?"},
		store.Message{Role: store.RoleAssistant, Content: reply}); err != nil {
		t.Fatal(err)
	}
	h.a.reloadConversations()
	h.a.selectConversation(conv.ID)
	v := h.lastView()
	if v.buttons["Copy code"] == nil {
		t.Fatalf("no Copy code on a reply with code: %v", v.buttons)
	}
	test.Tap(v.buttons["Copy code"])
	if got := h.a.fyne.Clipboard().Content(); got != "make test" {
		t.Errorf("clipboard %q, want the code", got)
	}
	if text := v.text(); strings.Contains(text, "|---|") || !strings.Contains(text, "a │ b") {
		t.Errorf("the table shows as %q", text)
	}
}

func TestCompleteBlocksEnd(t *testing.T) {
	for md, want := range map[string]string{
		"one para still growing":           "",
		"para one\n\npara two grow":        "para one\n\n",
		"a\n\nb\n\nc":                      "a\n\nb\n\n",
		"```\ncode\n\nmore code\n":         "",
		"x\n\n```\ncode\n\nmore\n```\n\ny": "x\n\n```\ncode\n\nmore\n```\n\n",
		"ends with a blank line\n\n":       "ends with a blank line\n\n",
		"- a\n- b\n\n1. c":                 "- a\n- b\n\n",
	} {
		if got := md[:completeBlocksEnd(md)]; got != want {
			t.Errorf("%q: complete part %q, want %q", md, got, want)
		}
	}
}

// TestStreamingReplyRendersBlocksOnce: as a reply grows, its finished
// paragraphs are rendered once into their own blocks, and the whole text is
// what a single render would show.
func TestStreamingReplyRendersBlocksOnce(t *testing.T) {
	test.NewTempApp(t)
	m := store.Message{Role: store.RoleAssistant}
	v := newMessageView(m, "model", nil)
	var whole string
	for i := range 30 {
		whole += fmt.Sprintf("word%d ", i)
		if i%10 == 9 {
			whole += "\n\n"
		}
		m.Content = whole
		v.update(m)
	}
	if n := len(v.done.Objects); n < 2 {
		t.Errorf("%d finished blocks, want the paragraphs done as they finished", n)
	}
	first := v.done.Objects[0]
	m.Content = whole + "more"
	v.update(m)
	if v.done.Objects[0] != first {
		t.Error("a finished block was rendered again")
	}
	single := widget.NewRichText()
	single.ParseMarkdown(m.Content)
	if got, want := strings.Join(strings.Fields(v.text()), " "), strings.Join(strings.Fields(single.String()), " "); got != want {
		t.Errorf("blocks read %q, one render %q", got, want)
	}
	m.Content = "replaced"
	v.update(m)
	if len(v.done.Objects) != 0 || v.text() != "replaced" {
		t.Errorf("a text that is not an extension: %d blocks, %q", len(v.done.Objects), v.text())
	}
}

// TestSelectText: a reply's Select (a word, where an eye alone said nothing)
// shows its text as written, selectable, in place of the rendered Markdown,
// and its Formatted brings the Markdown back.
func TestSelectText(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	conv, _ := h.a.store.CreateConversation("select", "")
	if _, err := h.a.store.Replace(conv.ID, 0, store.Message{Role: store.RoleUser, Content: "Hi"},
		store.Message{Role: store.RoleAssistant, Content: "**Bold** words to copy in part."}); err != nil {
		t.Fatal(err)
	}
	h.a.reloadConversations()
	h.a.selectConversation(conv.ID)
	v := h.lastView()
	if b := v.buttons["Select"]; b == nil || b.Text != "Select" {
		t.Fatalf("the reply's select control is not labelled: %v", v.buttons)
	}
	test.Tap(v.buttons["Select"])
	if v.buttons["Select"].Text != "Formatted" {
		t.Errorf("while selecting, the control says %q", v.buttons["Select"].Text)
	}
	if !v.plain.Visible() || !v.plain.Selectable || v.plain.Text != "**Bold** words to copy in part." || v.body.Visible() || v.done.Visible() {
		t.Errorf("selecting: plain %v %q (selectable %v), Markdown shown %v/%v", v.plain.Visible(), v.plain.Text, v.plain.Selectable, v.body.Visible(), v.done.Visible())
	}
	if len(h.a.dialogs) != 0 {
		t.Errorf("%d dialogs: Select works in place", len(h.a.dialogs))
	}
	test.Tap(v.buttons["Select"])
	if v.plain.Visible() || !v.body.Visible() || !strings.Contains(v.text(), "Bold words") {
		t.Errorf("after the second Select: plain %v, Markdown %v %q", v.plain.Visible(), v.body.Visible(), v.text())
	}
}

// TestLongParagraphCut: a long growing paragraph is cut after its last
// finished sentence well before the end; a short one, one without a sentence
// end, and one inside an open code block are not.
func TestLongParagraphCut(t *testing.T) {
	sentence := "The bagel is boiled before it is baked. "
	long := strings.Repeat(sentence, 60) + "And this one is still being writ"
	cut := longParagraphCut(long)
	if cut < paragraphChunk || cut > len(long)-200 || !strings.HasSuffix(long[:cut], "baked. ") {
		t.Errorf("cut at %d of %d: %q", cut, len(long), long[max(0, cut-20):cut])
	}
	for name, md := range map[string]string{
		"short":         strings.Repeat(sentence, 10),
		"no sentence":   strings.Repeat("word ", 600),
		"open code":     "```go\\n" + strings.Repeat("x := 1. y := 2. ", 200),
		"only near end": strings.Repeat("word ", 400) + "End. " + strings.Repeat("more ", 10),
	} {
		if got := longParagraphCut(md); got != 0 {
			t.Errorf("%s: cut at %d, want none", name, got)
		}
	}
}

// TestMathShownAsWritten: TeX math is shown as written (as code), not given to
// the Markdown renderer, which would eat its stars and underscores; prices,
// code spans and code blocks are left alone.
func TestMathShownAsWritten(t *testing.T) {
	for in, want := range map[string]string{
		"The area is $\\pi r^2$ and $a*b*c$.":   "The area is `$\\pi r^2$` and `$a*b*c$`.",
		"It costs $5 and $10, or $ 3 $.":        "It costs $5 and $10, or $ 3 $.",
		"Sum:\n$$\nx_1 + y_2\n$$\ndone":         "Sum:\n```\nx_1 + y_2\n```\ndone",
		"  $$e^{i\\pi} + 1 = 0$$":               "```\ne^{i\\pi} + 1 = 0\n```",
		"Code `$x_1$` stays; so does $$ alone?": "Code `$x_1$` stays; so does $$ alone?",
		"```\n$a*b$\n```\nthen $x_i$ here":      "```\n$a*b$\n```\nthen `$x_i$` here",
		"no dollars here":                       "no dollars here",
	} {
		if got := tablesAsText(in); got != want {
			t.Errorf("%q\ngave %q\nwant %q", in, got, want)
		}
	}
	// Through the renderer: the stars and underscores survive.
	rt := widget.NewRichTextFromMarkdown(tablesAsText("Let $a*b*c = x_1 + y_2$ hold."))
	if got := rt.String(); !strings.Contains(got, "a*b*c = x_1 + y_2") {
		t.Errorf("rendered: %q", got)
	}
}
