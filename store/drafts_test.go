package store

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
)

// TestDrafts: a draft survives a reopen, blank text removes it, deleting the
// chat deletes it, a draft never moves its chat in the list, and a chat that
// does not exist is refused.
func TestDrafts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chats.db")
	s := open(t, path)
	a, _ := s.CreateConversation("a", "")
	b, _ := s.CreateConversation("b", "")
	if err := s.SetDraft(a.ID, "half a thought"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDraft(b.ID, "first"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDraft(b.ID, "second"); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.Conversations(); list[0].ID != b.ID {
		t.Error("the list order changed") // b was created last and stays first
	}
	s.Close()

	s = open(t, path)
	defer s.Close()
	d, err := s.Drafts()
	if err != nil || d[a.ID] != "half a thought" || d[b.ID] != "second" || len(d) != 2 {
		t.Fatalf("drafts after a reopen: %v, %v", d, err)
	}
	s.SetDraft(a.ID, "  ")
	if err := s.DeleteConversation(b.ID); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Drafts(); len(d) != 0 {
		t.Errorf("drafts left: %v", d)
	}
	if err := s.SetDraft(999, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a draft for a missing chat: %v", err)
	}
}

// TestSchemaOneGainsDrafts: a database of schema 1 (before drafts) opens,
// keeps its chats and takes drafts and pins.
func TestSchemaOneGainsDrafts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chats.db")
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE conversations (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, system_prompt TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`,
		`CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE, role TEXT NOT NULL, content TEXT NOT NULL DEFAULT '', reasoning TEXT NOT NULL DEFAULT '', status TEXT NOT NULL DEFAULT 'done', summary TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL)`,
		`INSERT INTO conversations (title, created_at, updated_at) VALUES ('old chat', 1, 1)`,
		`PRAGMA user_version = 1`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s := open(t, path)
	defer s.Close()
	list, err := s.Conversations()
	if err != nil || len(list) != 1 || list[0].Title != "old chat" {
		t.Fatalf("chats of schema 1: %v, %v", list, err)
	}
	if err := s.SetDraft(list[0].ID, "kept"); err != nil {
		t.Fatal(err)
	}
	// Schema 5's pin, on a chat from before it.
	if err := s.SetPinned(list[0].ID, true); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Conversation(list[0].ID); err != nil || !c.Pinned {
		t.Errorf("pinned after the migration: %+v, %v", c, err)
	}
}
