package store

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

// TestReplyVersions: regenerating keeps every earlier reply as a version; the
// chat shows the newest, another can be chosen, and the choice survives a
// reopen.
func TestReplyVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chats.db")
	s := open(t, path)
	c, _ := s.CreateConversation("c", "")
	added, err := s.Replace(c.ID, 0, Message{Role: RoleUser, Content: "q"}, Message{Role: RoleAssistant, Content: "first"})
	if err != nil {
		t.Fatal(err)
	}
	first := added[1]
	second, err := s.RegenerateReply(c.ID, first.ID, Message{Role: RoleAssistant, Content: "second"})
	if err != nil {
		t.Fatal(err)
	}
	third, err := s.RegenerateReply(c.ID, second.ID, Message{Role: RoleAssistant, Content: "third"})
	if err != nil {
		t.Fatal(err)
	}
	shown := func() []string {
		msgs, err := s.Messages(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.Content)
		}
		return out
	}
	if got := shown(); !slices.Equal(got, []string{"q", "third"}) {
		t.Fatalf("the chat shows %v", got)
	}
	ids, cur, err := s.Versions(c.ID, third.ID)
	if err != nil || !slices.Equal(ids, []int64{first.ID, second.ID, third.ID}) || cur != 2 {
		t.Fatalf("versions %v, current %d, %v", ids, cur, err)
	}
	if err := s.SelectVersion(c.ID, first.ID); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path)
	defer s.Close()
	if got := shown(); !slices.Equal(got, []string{"q", "first"}) {
		t.Fatalf("after choosing the first version and a reopen, the chat shows %v", got)
	}
	if _, cur, _ := s.Versions(c.ID, first.ID); cur != 0 {
		t.Errorf("current version %d, want 0", cur)
	}
	// A reply never regenerated is its only version; a message of another chat is not found.
	if ids, cur, err := s.Versions(c.ID, added[0].ID); err != nil || len(ids) != 1 || cur != 0 {
		t.Errorf("the question's versions: %v %d %v", ids, cur, err)
	}
	other, _ := s.CreateConversation("other", "")
	if _, err := s.RegenerateReply(other.ID, first.ID, Message{Role: RoleAssistant}); !errors.Is(err, ErrNotFound) {
		t.Errorf("regenerating another chat's message: %v", err)
	}
	// Editing the question (Replace from it) removes the reply and all its versions.
	if _, err := s.Replace(c.ID, added[0].ID, Message{Role: RoleUser, Content: "q2"}); err != nil {
		t.Fatal(err)
	}
	if got := shown(); !slices.Equal(got, []string{"q2"}) {
		t.Errorf("after the edit the chat shows %v", got)
	}
	if ids, _, err := s.Versions(c.ID, third.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("versions of a deleted reply: %v, %v", ids, err)
	}
}

// TestEditForks: editing an earlier question makes a new version of it with
// its own reply; the old question comes back with everything that followed it
// (a reply regenerated there keeps its versions), and the new branch comes
// back in turn; the choice survives a reopen.
func TestEditForks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chats.db")
	s := open(t, path)
	c, _ := s.CreateConversation("c", "")
	shown := func() []string {
		msgs, err := s.Messages(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.Content)
		}
		return out
	}
	a, _ := s.Replace(c.ID, 0, Message{Role: RoleUser, Content: "q1"}, Message{Role: RoleAssistant, Content: "r1"})
	b, _ := s.Replace(c.ID, 0, Message{Role: RoleUser, Content: "q2"}, Message{Role: RoleAssistant, Content: "r2"})
	if _, err := s.RegenerateReply(c.ID, b[1].ID, Message{Role: RoleAssistant, Content: "r2b"}); err != nil {
		t.Fatal(err)
	}
	edited, err := s.EditMessage(c.ID, a[0].ID, Message{Role: RoleUser, Content: "q1 edited"}, Message{Role: RoleAssistant, Content: "r1 edited"})
	if err != nil {
		t.Fatal(err)
	}
	if got := shown(); !slices.Equal(got, []string{"q1 edited", "r1 edited"}) {
		t.Fatalf("after the edit the chat shows %v", got)
	}
	ids, cur, err := s.Versions(c.ID, edited[0].ID)
	if err != nil || !slices.Equal(ids, []int64{a[0].ID, edited[0].ID}) || cur != 1 {
		t.Fatalf("the question's versions %v, current %d, %v", ids, cur, err)
	}
	if err := s.SelectVersion(c.ID, a[0].ID); err != nil {
		t.Fatal(err)
	}
	if got := shown(); !slices.Equal(got, []string{"q1", "r1", "q2", "r2b"}) {
		t.Fatalf("the old question's branch shows %v", got)
	}
	if ids, cur, _ := s.Versions(c.ID, b[1].ID); len(ids) != 2 || cur != 1 {
		t.Errorf("the regenerated reply in the old branch: versions %v, current %d", ids, cur)
	}
	s.Close()
	s = open(t, path)
	defer s.Close()
	if got := shown(); !slices.Equal(got, []string{"q1", "r1", "q2", "r2b"}) {
		t.Fatalf("after a reopen the chat shows %v", got)
	}
	if err := s.SelectVersion(c.ID, edited[0].ID); err != nil {
		t.Fatal(err)
	}
	if got := shown(); !slices.Equal(got, []string{"q1 edited", "r1 edited"}) {
		t.Fatalf("back on the edit the chat shows %v", got)
	}
}
