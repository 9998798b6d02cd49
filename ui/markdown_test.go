package ui

import (
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"bagel/store"
)

func TestTablesAsText(t *testing.T) {
	in := "Toppings:\n\n| Bagel | Topping |\n|---|:---:|\n| plain | cream cheese |\n| sesame | lox |\n\nEnjoy.\n```\n| not | a table |\n|---|---|\n```"
	want := "Toppings:\n\n```\nBagel   Topping\n------  ------------\nplain   cream cheese\nsesame  lox\n```\n\nEnjoy.\n```\n| not | a table |\n|---|---|\n```"
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
	if text := v.body.String(); strings.Contains(text, "|---|") || !strings.Contains(text, "a  b") {
		t.Errorf("the table shows as %q", text)
	}
}
