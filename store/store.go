// Package store keeps the app's conversations and messages in one SQLite file
// (the pure-Go modernc.org/sqlite driver, so no cgo). Every change is one
// transaction, and the database runs in WAL mode with full syncs, so a crash or a
// kill loses at most the reply being generated — and even that is kept up to its
// last saved chunk, marked interrupted on the next open.
package store

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Store is an open chat database. Its methods are safe for concurrent use (the
// UI reads while a generation goroutine saves its reply).
type Store struct {
	db   *sql.DB
	Path string
}

// schemaVersion is PRAGMA user_version for the schema below.
const schemaVersion = 6

const schema = `
CREATE TABLE IF NOT EXISTS conversations (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	title         TEXT    NOT NULL,
	system_prompt TEXT    NOT NULL DEFAULT '',
	created_at    INTEGER NOT NULL, -- unix milliseconds
	updated_at    INTEGER NOT NULL,
	pinned        INTEGER NOT NULL DEFAULT 0 -- schema 5: 1 keeps the chat at the top of the list
);
CREATE TABLE IF NOT EXISTS messages (
	id              INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: the order within a conversation, and the UI's key
	conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
	role            TEXT    NOT NULL,
	content         TEXT    NOT NULL DEFAULT '',
	reasoning       TEXT    NOT NULL DEFAULT '',
	status          TEXT    NOT NULL DEFAULT 'done',
	summary         TEXT    NOT NULL DEFAULT '',
	model           TEXT    NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	superseded      INTEGER NOT NULL DEFAULT 0, -- schema 3: 1 for an earlier version of a message, kept out of the chat
	version_of      INTEGER NOT NULL DEFAULT 0, -- schema 3: the first version's id, for every version of a regenerated or edited message
	branch          INTEGER NOT NULL DEFAULT 0  -- schema 4: for a message hidden with the version it followed, that version's id
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, id);
-- schema 2: what the composer holds for each chat, kept across restarts
-- schema 6: the images a message carries, in order (files in images/, images.go)
CREATE TABLE IF NOT EXISTS message_images (
	message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	position   INTEGER NOT NULL,
	file       TEXT    NOT NULL, -- "<sha256>.<ext>"
	name       TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (message_id, position)
);
CREATE INDEX IF NOT EXISTS message_images_by_file ON message_images(file);
CREATE TABLE IF NOT EXISTS drafts (
	conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
	text            TEXT    NOT NULL,
	updated_at      INTEGER NOT NULL
);
`

// Open opens (creating if needed) the database at path. Replies a previous run
// left "generating" — it crashed or was killed mid-reply — become "interrupted".
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("chat database: %w", err)
	}
	q := url.Values{}
	for _, p := range []string{"foreign_keys(1)", "busy_timeout(5000)", "journal_mode(WAL)", "synchronous(FULL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate") // writers take the lock up front: no upgrade deadlocks
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("chat database %s: %w", path, err)
	}
	s := &Store{db: db, Path: path}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, openError(path, err)
	}
	if _, err := db.Exec(`UPDATE messages SET status = ? WHERE status = ?`, StatusInterrupted, StatusGenerating); err != nil {
		db.Close()
		return nil, openError(path, err)
	}
	s.pruneOrphans()
	return s, nil
}

// openError says why the database at path could not be opened, in words
// for a file that cannot be written (SQLite's "attempt to write a readonly
// database": its permissions, an immutable file, a read-only disk).
func openError(path string, err error) error {
	if strings.Contains(err.Error(), "readonly database") {
		return fmt.Errorf("chat database %s cannot be written: the file or its folder is read-only (%w)", path, err)
	}
	return fmt.Errorf("chat database %s: %w", path, err)
}

func (s *Store) migrate() error {
	var version int
	if err := s.db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	if version > schemaVersion {
		return fmt.Errorf("written by a newer Bagel (schema %d, this one knows %d)", version, schemaVersion)
	}
	return s.tx(func(tx *sql.Tx) error {
		if _, err := tx.Exec(schema); err != nil {
			return err
		}
		var added []string
		if version > 0 && version < 3 { // reply versions: two columns more
			added = append(added, "superseded", "version_of")
		}
		if version > 0 && version < 4 { // branches of edited messages
			added = append(added, "branch")
		}
		for _, col := range added {
			if _, err := tx.Exec(`ALTER TABLE messages ADD COLUMN ` + col + ` INTEGER NOT NULL DEFAULT 0`); err != nil {
				return err
			}
		}
		if version > 0 && version < 5 { // pinned chats
			if _, err := tx.Exec(`ALTER TABLE conversations ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0`); err != nil {
				return err
			}
		}
		_, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion))
		return err
	})
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// tx runs f in one transaction, committed when f returns nil.
func (s *Store) tx(f func(*sql.Tx) error) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func millis(t time.Time) int64      { return t.UnixMilli() }
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms) }
