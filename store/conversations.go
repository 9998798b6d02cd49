package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Conversation is one chat: its title and its own system prompt.
type Conversation struct {
	ID           int64
	Title        string
	SystemPrompt string
	Created      time.Time
	Updated      time.Time // the last change to it or its messages
	Pinned       bool      // listed first (SetPinned)
}

// ErrNotFound is returned for an id that is not (or no longer) in the database.
var ErrNotFound = errors.New("not found")

// Conversations lists every conversation, the pinned ones first, each part
// the most recently changed first.
func (s *Store) Conversations() ([]Conversation, error) {
	rows, err := s.db.Query(`SELECT id, title, system_prompt, created_at, updated_at, pinned
		FROM conversations ORDER BY pinned DESC, updated_at DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("listing chats: %w", err)
	}
	return scanConversations(rows)
}

// Search lists the conversations whose title or a message shown in them
// (not an earlier version) holds text, case aside for ASCII letters, the
// most recently changed first. A scan with LIKE: a desktop's thousands of
// messages take half a millisecond (BenchmarkSearch), which an FTS5 index, with
// the triggers and migration it needs, would not improve on.
func (s *Store) Search(text string) ([]Conversation, error) {
	pattern := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(text) + "%"
	rows, err := s.db.Query(`SELECT id, title, system_prompt, created_at, updated_at, pinned FROM conversations c
		WHERE title LIKE ?1 ESCAPE '\'
		   OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.superseded = 0
		              AND (m.content LIKE ?1 ESCAPE '\' OR m.reasoning LIKE ?1 ESCAPE '\'))
		ORDER BY pinned DESC, updated_at DESC, id DESC`, pattern)
	if err != nil {
		return nil, fmt.Errorf("searching chats: %w", err)
	}
	return scanConversations(rows)
}

func scanConversations(rows *sql.Rows) ([]Conversation, error) {
	defer rows.Close()
	var out []Conversation
	for rows.Next() {
		var c Conversation
		var created, updated int64
		if err := rows.Scan(&c.ID, &c.Title, &c.SystemPrompt, &created, &updated, &c.Pinned); err != nil {
			return nil, fmt.Errorf("listing chats: %w", err)
		}
		c.Created, c.Updated = fromMillis(created), fromMillis(updated)
		out = append(out, c)
	}
	return out, rows.Err()
}

// Conversation reads one conversation.
func (s *Store) Conversation(id int64) (Conversation, error) {
	c := Conversation{ID: id}
	var created, updated int64
	err := s.db.QueryRow(`SELECT title, system_prompt, created_at, updated_at, pinned FROM conversations WHERE id = ?`, id).
		Scan(&c.Title, &c.SystemPrompt, &created, &updated, &c.Pinned)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("chat %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("reading chat %d: %w", id, err)
	}
	c.Created, c.Updated = fromMillis(created), fromMillis(updated)
	return c, nil
}

// CreateConversation adds an empty conversation.
func (s *Store) CreateConversation(title, systemPrompt string) (Conversation, error) {
	now := time.Now()
	res, err := s.db.Exec(`INSERT INTO conversations (title, system_prompt, created_at, updated_at) VALUES (?, ?, ?, ?)`,
		title, systemPrompt, millis(now), millis(now))
	if err != nil {
		return Conversation{}, fmt.Errorf("creating a chat: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Conversation{}, fmt.Errorf("creating a chat: %w", err)
	}
	return Conversation{ID: id, Title: title, SystemPrompt: systemPrompt, Created: fromMillis(millis(now)), Updated: fromMillis(millis(now))}, nil
}

// DuplicateConversation copies a conversation — its title with " (copy)",
// its system prompt and the messages shown in it (not earlier versions) —
// into a new one.
func (s *Store) DuplicateConversation(id int64) (Conversation, error) {
	src, err := s.Conversation(id)
	if err != nil {
		return Conversation{}, err
	}
	msgs, err := s.Messages(id)
	if err != nil {
		return Conversation{}, err
	}
	c, err := s.CreateConversation(src.Title+" (copy)", src.SystemPrompt)
	if err != nil {
		return Conversation{}, err
	}
	for i := range msgs {
		msgs[i].ID, msgs[i].ConversationID = 0, c.ID
	}
	if len(msgs) > 0 {
		if _, err := s.Replace(c.ID, 0, msgs...); err != nil {
			return Conversation{}, fmt.Errorf("copying the chat's messages: %w", err)
		}
	}
	return s.Conversation(c.ID)
}

// SetPinned pins a conversation to the top of the list, or unpins it; its
// place among the others (when it was last changed) does not move.
func (s *Store) SetPinned(id int64, pinned bool) error {
	v := 0
	if pinned {
		v = 1
	}
	res, err := s.db.Exec(`UPDATE conversations SET pinned = ? WHERE id = ?`, v, id)
	if err != nil {
		return fmt.Errorf("pinning chat %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("chat %d: %w", id, ErrNotFound)
	}
	return nil
}

// RenameConversation changes a conversation's title.
func (s *Store) RenameConversation(id int64, title string) error {
	return s.updateConversation(id, `title`, title)
}

// SetSystemPrompt changes a conversation's system prompt (used from its next reply on).
func (s *Store) SetSystemPrompt(id int64, prompt string) error {
	return s.updateConversation(id, `system_prompt`, prompt)
}

func (s *Store) updateConversation(id int64, column, value string) error {
	res, err := s.db.Exec(`UPDATE conversations SET `+column+` = ?, updated_at = ? WHERE id = ?`, value, millis(time.Now()), id)
	if err != nil {
		return fmt.Errorf("updating chat %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("chat %d: %w", id, ErrNotFound)
	}
	return nil
}

// DeleteConversation removes a conversation and its messages.
func (s *Store) DeleteConversation(id int64) error {
	var dropped []string // its image files, removed unless another chat lists them
	defer func() { s.pruneImages(dropped) }()
	return s.tx(func(tx *sql.Tx) error {
		var err error
		if dropped, err = imageFiles(tx, `conversation_id = ?`, id); err != nil {
			return fmt.Errorf("deleting chat %d: %w", id, err)
		}
		// The foreign key cascades too; deleting explicitly keeps that true even on
		// a database opened without foreign_keys.
		if _, err := tx.Exec(`DELETE FROM message_images WHERE message_id IN (SELECT id FROM messages WHERE conversation_id = ?)`, id); err != nil {
			return fmt.Errorf("deleting chat %d: %w", id, err)
		}
		if _, err := tx.Exec(`DELETE FROM messages WHERE conversation_id = ?`, id); err != nil {
			return fmt.Errorf("deleting chat %d: %w", id, err)
		}
		if _, err := tx.Exec(`DELETE FROM conversations WHERE id = ?`, id); err != nil {
			return fmt.Errorf("deleting chat %d: %w", id, err)
		}
		return nil
	})
}
