package store

import (
	"database/sql"
	"fmt"
	"time"
)

// Message roles, as the chat template names them.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message statuses. Everything but StatusDone marks a partial message: the reply
// is kept, and shown with what stopped it.
const (
	StatusDone        = "done"        // complete (a user message, or a reply that hit a stop token)
	StatusGenerating  = "generating"  // the reply is being generated now
	StatusStopped     = "stopped"     // the user stopped it, or the model was unloaded
	StatusLength      = "length"      // cut at the max-tokens setting
	StatusContext     = "context"     // cut because the context was full
	StatusInterrupted = "interrupted" // the app crashed or was killed while generating it
	StatusError       = "error"       // the engine failed; Summary holds the error
)

// Message is one turn of a conversation.
type Message struct {
	ID             int64
	ConversationID int64
	Role           string
	Content        string
	Reasoning      string // the model's thinking, without <think> tags
	Status         string
	Summary        string // the one-line performance summary of a reply (or its error)
	Model          string // the model folder's name that wrote a reply
	Created        time.Time
	Images         []Image // a question's images, in order (images.go)
}

// Partial tells whether the message is not a complete one.
func (m Message) Partial() bool { return m.Status != StatusDone && m.Status != "" }

// Messages lists a conversation's messages in order (the chosen version of a
// regenerated reply; the others are Versions).
func (s *Store) Messages(conversationID int64) ([]Message, error) {
	rows, err := s.db.Query(`SELECT id, role, content, reasoning, status, summary, model, created_at
		FROM messages WHERE conversation_id = ? AND superseded = 0 ORDER BY id`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("reading chat %d: %w", conversationID, err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m := Message{ConversationID: conversationID}
		var created int64
		if err := rows.Scan(&m.ID, &m.Role, &m.Content, &m.Reasoning, &m.Status, &m.Summary, &m.Model, &created); err != nil {
			return nil, fmt.Errorf("reading chat %d: %w", conversationID, err)
		}
		m.Created = fromMillis(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading chat %d: %w", conversationID, err)
	}
	if err := s.loadImages(conversationID, out); err != nil {
		return nil, fmt.Errorf("reading chat %d's images: %w", conversationID, err)
	}
	return out, nil
}

// Replace deletes the conversation's messages from id fromID on (0: none) and
// appends add, in one transaction: a question sent and its reply's place are
// one atomic change. (Edits and regenerations keep the old messages instead:
// EditMessage, RegenerateReply.) It returns add with their ids and times set.
func (s *Store) Replace(conversationID, fromID int64, add ...Message) ([]Message, error) {
	now := time.Now()
	out := make([]Message, len(add))
	var dropped []string // image files of the deleted messages
	err := s.tx(func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE conversations SET updated_at = ? WHERE id = ?`, millis(now), conversationID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("chat %d: %w", conversationID, ErrNotFound)
		}
		if fromID > 0 {
			if dropped, err = imageFiles(tx, `conversation_id = ? AND id >= ?`, conversationID, fromID); err != nil {
				return err
			}
			if _, err := tx.Exec(`DELETE FROM messages WHERE conversation_id = ? AND id >= ?`, conversationID, fromID); err != nil {
				return err
			}
		}
		return insertMessages(tx, conversationID, now, 0, add, out)
	})
	if err != nil {
		return nil, fmt.Errorf("saving chat %d: %w", conversationID, err)
	}
	s.pruneImages(dropped)
	return out, nil
}

// insertMessages appends add to the conversation at time now, writing each
// with its id and time set into out; the first one is a version of
// firstVersionOf (0: none).
func insertMessages(tx *sql.Tx, conversationID int64, now time.Time, firstVersionOf int64, add, out []Message) error {
	for i, m := range add {
		if m.Status == "" {
			m.Status = StatusDone
		}
		versionOf := int64(0)
		if i == 0 {
			versionOf = firstVersionOf
		}
		res, err := tx.Exec(`INSERT INTO messages (conversation_id, role, content, reasoning, status, summary, model, created_at, version_of)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			conversationID, m.Role, m.Content, m.Reasoning, m.Status, m.Summary, m.Model, millis(now), versionOf)
		if err != nil {
			return err
		}
		if m.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		if err := insertImages(tx, m.ID, m.Images); err != nil {
			return err
		}
		m.ConversationID, m.Created = conversationID, fromMillis(millis(now))
		out[i] = m
	}
	return nil
}

// UpdateMessage saves a message's text, reasoning, status and summary: the
// streaming reply calls it every second or so and once at the end.
func (s *Store) UpdateMessage(m Message) error {
	res, err := s.db.Exec(`UPDATE messages SET content = ?, reasoning = ?, status = ?, summary = ? WHERE id = ?`,
		m.Content, m.Reasoning, m.Status, m.Summary, m.ID)
	if err != nil {
		return fmt.Errorf("saving message %d: %w", m.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("message %d: %w", m.ID, ErrNotFound)
	}
	return nil
}
