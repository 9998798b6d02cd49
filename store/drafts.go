package store

import (
	"fmt"
	"strings"
	"time"
)

// SetDraft keeps text as what the composer holds for a conversation (blank
// text removes it). A draft does not change the conversation's Updated time:
// typing does not reorder the chat list.
func (s *Store) SetDraft(conversationID int64, text string) error {
	if strings.TrimSpace(text) == "" {
		if _, err := s.db.Exec(`DELETE FROM drafts WHERE conversation_id = ?`, conversationID); err != nil {
			return fmt.Errorf("saving a draft: %w", err)
		}
		return nil
	}
	_, err := s.db.Exec(`INSERT INTO drafts (conversation_id, text, updated_at) VALUES (?, ?, ?)
		ON CONFLICT(conversation_id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at`,
		conversationID, text, time.Now().UnixMilli())
	if err != nil {
		if strings.Contains(err.Error(), "FOREIGN KEY") {
			return fmt.Errorf("saving a draft: chat %d: %w", conversationID, ErrNotFound)
		}
		return fmt.Errorf("saving a draft: %w", err)
	}
	return nil
}

// Drafts returns every conversation's draft by conversation id.
func (s *Store) Drafts() (map[int64]string, error) {
	rows, err := s.db.Query(`SELECT conversation_id, text FROM drafts`)
	if err != nil {
		return nil, fmt.Errorf("reading drafts: %w", err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var text string
		if err := rows.Scan(&id, &text); err != nil {
			return nil, fmt.Errorf("reading drafts: %w", err)
		}
		out[id] = text
	}
	return out, rows.Err()
}
