package store

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestSearch: a chat matches by its title or a message shown in it (its
// reasoning too), case aside; an earlier version of a reply does not match;
// %, _ and \ are text, not patterns.
func TestSearch(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "chats.db"))
	defer s.Close()
	a, _ := s.CreateConversation("Bagels in Montreal", "")
	b, _ := s.CreateConversation("Other", "")
	c, _ := s.CreateConversation("Rates", "")
	s.Replace(b.ID, 0, Message{Role: RoleUser, Content: "How do I boil a BAGEL?"}, Message{Role: RoleAssistant, Content: "Briefly.", Reasoning: "Think of honey water."})
	added, _ := s.Replace(c.ID, 0, Message{Role: RoleUser, Content: "What is 50% of 10_000?"}, Message{Role: RoleAssistant, Content: "old answer zebra"})
	s.RegenerateReply(c.ID, added[1].ID, Message{Role: RoleAssistant, Content: "5000"})
	for query, want := range map[string][]int64{
		"bagel":        {b.ID, a.ID},
		"honey":        {b.ID},
		"50%":          {c.ID},
		"10_000":       {c.ID},
		"%":            {c.ID},
		"zebra":        nil, // only in the superseded version
		"nothing like": nil,
	} {
		got, err := s.Search(query)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, conv := range got {
			ids = append(ids, conv.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Errorf("%q: %v, want %v", query, ids, want)
		}
	}
}

// BenchmarkSearch times a search over 1,000 messages in 100 chats (issue
// 41 asks ≤ 50 ms, for a list that filters as one types; 0.5 ms on the
// 2-core development machine): go test ./store -run '^$' -bench Search.
// Speed is measured, never asserted in a test.
func BenchmarkSearch(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "chats.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range 100 {
		conv, _ := s.CreateConversation(fmt.Sprintf("Chat %d", i), "")
		var msgs []Message
		for j := range 10 {
			role := RoleUser
			if j%2 == 1 {
				role = RoleAssistant
			}
			msgs = append(msgs, Message{Role: role, Content: fmt.Sprintf("message %d of chat %d: some ordinary words about bread, ovens and the weather, repeated to make it longer than a line %d", j, i, i*j)})
		}
		if _, err := s.Replace(conv.ID, 0, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if got, err := s.Search("line 891"); err != nil || len(got) == 0 {
			b.Fatalf("%v, %d found", err, len(got))
		}
	}
}

// TestDuplicateConversation: a copy holds the title with " (copy)", the
// system prompt and the messages shown, not earlier versions; the original
// is untouched.
func TestDuplicateConversation(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "chats.db"))
	defer s.Close()
	c, _ := s.CreateConversation("Bread", "be brief")
	added, _ := s.Replace(c.ID, 0, Message{Role: RoleUser, Content: "Rye?"}, Message{Role: RoleAssistant, Content: "old", Reasoning: "r"})
	s.RegenerateReply(c.ID, added[1].ID, Message{Role: RoleAssistant, Content: "new", Reasoning: "r2", Model: "m"})
	d, err := s.DuplicateConversation(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := s.Messages(d.ID)
	if d.Title != "Bread (copy)" || d.SystemPrompt != "be brief" || len(msgs) != 2 || msgs[1].Content != "new" || msgs[1].Reasoning != "r2" || msgs[1].Model != "m" {
		t.Errorf("copy %+v with %+v", d, msgs)
	}
	if orig, _ := s.Messages(c.ID); len(orig) != 2 || orig[1].Content != "new" {
		t.Errorf("the original became %+v", orig)
	}
	if _, err := s.DuplicateConversation(9999); err == nil {
		t.Error("duplicating a chat that does not exist")
	}
}
