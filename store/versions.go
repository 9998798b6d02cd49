package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Regenerating a reply, or editing a message, keeps the old one: it is marked
// superseded and every version carries the first version's id (version_of),
// so the chat can show "2/3" and switch between them. What followed a version
// when another one took its place (the replies after an edited question) is
// hidden with it, each such message carrying that version's id (branch), and
// comes back when the version is shown again: an edit forks the chat.

// RegenerateReply supersedes reply replyID (and anything after it, which a
// regenerate of the last reply never has) and appends add as its next version,
// in one transaction. It returns add with its id and time set.
func (s *Store) RegenerateReply(conversationID, replyID int64, add Message) (Message, error) {
	now := time.Now()
	err := s.tx(func(tx *sql.Tx) error {
		group, err := versionGroup(tx, conversationID, replyID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE conversations SET updated_at = ? WHERE id = ?`, millis(now), conversationID); err != nil {
			return err
		}
		if err := hideFrom(tx, conversationID, replyID, group); err != nil {
			return err
		}
		out := make([]Message, 1)
		if err := insertMessages(tx, conversationID, now, group, []Message{add}, out); err != nil {
			return err
		}
		add = out[0]
		return nil
	})
	if err != nil {
		return Message{}, fmt.Errorf("saving chat %d: %w", conversationID, err)
	}
	return add, nil
}

// Versions lists the ids of every version of message id, oldest first, and the
// index of the one the chat shows. A message never regenerated is its only version.
func (s *Store) Versions(conversationID, id int64) (ids []int64, current int, err error) {
	err = s.tx(func(tx *sql.Tx) error {
		group, err := versionGroup(tx, conversationID, id)
		if err != nil {
			return err
		}
		rows, err := tx.Query(`SELECT id, superseded FROM messages
			WHERE conversation_id = ? AND (id = ? OR version_of = ?) ORDER BY id`, conversationID, group, group)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v int64
			var superseded int
			if err := rows.Scan(&v, &superseded); err != nil {
				return err
			}
			if superseded == 0 {
				current = len(ids)
			}
			ids = append(ids, v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("reading the versions of message %d: %w", id, err)
	}
	return ids, current, nil
}

// EditMessage makes add[0] the next version of message id (a question
// edited) and appends the rest of add after it (its reply), in one
// transaction: id and what followed it are hidden as id's branch, shown again
// by SelectVersion(id). It returns add with their ids and times set.
func (s *Store) EditMessage(conversationID, id int64, add ...Message) ([]Message, error) {
	now := time.Now()
	out := make([]Message, len(add))
	err := s.tx(func(tx *sql.Tx) error {
		group, err := versionGroup(tx, conversationID, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE conversations SET updated_at = ? WHERE id = ?`, millis(now), conversationID); err != nil {
			return err
		}
		if err := hideFrom(tx, conversationID, id, group); err != nil {
			return err
		}
		return insertMessages(tx, conversationID, now, group, add, out)
	})
	if err != nil {
		return nil, fmt.Errorf("saving chat %d: %w", conversationID, err)
	}
	return out, nil
}

// hideFrom hides message id (a version of group, which it joins) and the
// messages shown after it, which become id's branch.
func hideFrom(tx *sql.Tx, conversationID, id, group int64) error {
	if _, err := tx.Exec(`UPDATE messages SET branch = ? WHERE conversation_id = ? AND id > ? AND superseded = 0`,
		id, conversationID, id); err != nil {
		return err
	}
	_, err := tx.Exec(`UPDATE messages SET superseded = 1,
		version_of = CASE WHEN id = ? AND version_of = 0 THEN ? ELSE version_of END
		WHERE conversation_id = ? AND id >= ? AND superseded = 0`, id, group, conversationID, id)
	return err
}

// SelectVersion makes version id the one the chat shows, in place of the
// other versions of the same message: the version shown until now is hidden
// with what followed it (its branch), and id comes back with its own branch.
func (s *Store) SelectVersion(conversationID, id int64) error {
	err := s.tx(func(tx *sql.Tx) error {
		group, err := versionGroup(tx, conversationID, id)
		if err != nil {
			return err
		}
		var shown int64
		err = tx.QueryRow(`SELECT id FROM messages WHERE conversation_id = ? AND (id = ? OR version_of = ?) AND superseded = 0`,
			conversationID, group, group).Scan(&shown)
		switch {
		case errors.Is(err, sql.ErrNoRows): // no version shown: nothing to hide
		case err != nil:
			return err
		case shown == id:
			return nil
		default:
			if err := hideFrom(tx, conversationID, shown, group); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(`UPDATE messages SET superseded = 0 WHERE id = ?`, id); err != nil {
			return err
		}
		_, err = tx.Exec(`UPDATE messages SET superseded = 0, branch = 0 WHERE conversation_id = ? AND branch = ?`,
			conversationID, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("choosing version %d: %w", id, err)
	}
	return nil
}

// versionGroup is the id that names message id's versions: the first
// version's. ErrNotFound when the message is not in the conversation.
func versionGroup(tx *sql.Tx, conversationID, id int64) (int64, error) {
	var group int64
	err := tx.QueryRow(`SELECT version_of FROM messages WHERE id = ? AND conversation_id = ?`, id, conversationID).Scan(&group)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("message %d of chat %d: %w", id, conversationID, ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	if group == 0 {
		group = id
	}
	return group, nil
}
