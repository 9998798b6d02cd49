package store

import (
	"errors"
	"path/filepath"
	"testing"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWriteReopen: everything written is there, in order, after a reopen.
func TestWriteReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "chats.db")
	s := open(t, path)
	a, err := s.CreateConversation("first", "be brief")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateConversation("second", "")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Replace(a.ID, 0,
		Message{Role: RoleUser, Content: "hello"},
		Message{Role: RoleAssistant, Content: "hi **there**", Reasoning: "greet back", Summary: "3 tokens", Model: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].ID == 0 || msgs[1].ID <= msgs[0].ID || msgs[1].Status != StatusDone {
		t.Fatalf("Replace returned %+v", msgs)
	}
	if err := s.RenameConversation(b.ID, "renamed"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSystemPrompt(b.ID, "talk like a pirate"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	defer s.Close()
	convs, err := s.Conversations()
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) != 2 || convs[0].ID != b.ID || convs[0].Title != "renamed" || convs[0].SystemPrompt != "talk like a pirate" {
		t.Fatalf("conversations after reopen: %+v (want %q first: it changed last)", convs, "renamed")
	}
	got, err := s.Messages(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Content != "hello" || got[1].Content != "hi **there**" ||
		got[1].Reasoning != "greet back" || got[1].Summary != "3 tokens" || got[1].Model != "tiny" || got[1].Partial() {
		t.Fatalf("messages after reopen: %+v", got)
	}
}

// TestReplace covers the three edits a chat makes: regenerate (drop the last
// reply), edit the last question (drop it and its reply), and delete a chat.
func TestReplace(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "chats.db"))
	defer s.Close()
	c, _ := s.CreateConversation("c", "")
	if _, err := s.Replace(c.ID, 0, Message{Role: RoleUser, Content: "q1"}, Message{Role: RoleAssistant, Content: "a1"}); err != nil {
		t.Fatal(err)
	}
	turn2, _ := s.Replace(c.ID, 0, Message{Role: RoleUser, Content: "q2"}, Message{Role: RoleAssistant, Content: "a2"})

	if _, err := s.Replace(c.ID, turn2[1].ID, Message{Role: RoleAssistant, Content: "a2 again"}); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, s, c.ID); got != "q1|a1|q2|a2 again" {
		t.Fatalf("after regenerate: %s", got)
	}
	if _, err := s.Replace(c.ID, turn2[0].ID, Message{Role: RoleUser, Content: "q2 edited"}, Message{Role: RoleAssistant, Content: "a3"}); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, s, c.ID); got != "q1|a1|q2 edited|a3" {
		t.Fatalf("after edit: %s", got)
	}

	if _, err := s.Replace(12345, 0, Message{Role: RoleUser, Content: "x"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Replace on a missing chat: %v, want ErrNotFound", err)
	}
	if err := s.DeleteConversation(c.ID); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := s.Messages(c.ID); len(msgs) != 0 {
		t.Fatalf("messages survive their chat: %+v", msgs)
	}
	if _, err := s.Conversation(c.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted chat: %v, want ErrNotFound", err)
	}
}

func contents(t *testing.T, s *Store, id int64) string {
	t.Helper()
	msgs, err := s.Messages(id)
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for i, m := range msgs {
		if i > 0 {
			out += "|"
		}
		out += m.Content
	}
	return out
}

// TestIDsNotReused: a regenerated reply gets a new id, never the deleted one's
// (the UI keys message views and the live reply by id).
func TestIDsNotReused(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "chats.db"))
	defer s.Close()
	c, _ := s.CreateConversation("c", "")
	first, _ := s.Replace(c.ID, 0, Message{Role: RoleUser, Content: "q"}, Message{Role: RoleAssistant, Content: "a"})
	again, err := s.Replace(c.ID, first[1].ID, Message{Role: RoleAssistant, Content: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].ID <= first[1].ID {
		t.Fatalf("the new reply has id %d; the deleted one had %d", again[0].ID, first[1].ID)
	}
}
