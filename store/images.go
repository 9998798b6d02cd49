package store

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Images a message carries live as files beside the database, in images/,
// each named by the SHA-256 of its bytes and its format's extension: the
// same picture sent twice, or a chat duplicated, is one file. The database
// lists each message's images in order (message_images); a file goes when
// the last message listing it does (a chat deleted, a question resent).

// Image is one image of a message: its file in the store's image folder
// and the name it came with (the dropped file's, for the message and an
// export).
type Image struct {
	File string // "<sha256>.png"
	Name string
}

// ImageDir is the folder of the store's image files.
func (s *Store) ImageDir() string { return filepath.Join(filepath.Dir(s.Path), "images") }

// ImagePath is where img's file is.
func (s *Store) ImagePath(img Image) string {
	return filepath.Join(s.ImageDir(), filepath.Base(img.File))
}

// imageExts are the formats kept, by their sniffed content type.
var imageExts = map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}

// SaveImage keeps data as an image file (once for the same bytes) and
// returns it named name. Data that is not a PNG, JPEG, GIF or WebP file is
// refused.
func (s *Store) SaveImage(data []byte, name string) (Image, error) {
	ext, ok := imageExts[http.DetectContentType(data)]
	if !ok && heif(data) {
		ext, ok = ".heic", true
	}
	if !ok {
		return Image{}, fmt.Errorf("%s is not a PNG, JPEG, GIF, WebP or HEIC image", name)
	}
	sum := sha256.Sum256(data)
	img := Image{File: hex.EncodeToString(sum[:]) + ext, Name: name}
	path := s.ImagePath(img)
	if fi, err := os.Stat(path); err == nil && fi.Size() == int64(len(data)) {
		return img, nil
	}
	if err := os.MkdirAll(s.ImageDir(), 0o755); err != nil {
		return Image{}, fmt.Errorf("saving image %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(s.ImageDir(), ".saving-*")
	if err != nil {
		return Image{}, fmt.Errorf("saving image %s: %w", name, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return Image{}, fmt.Errorf("saving image %s: %w", name, err)
	}
	return img, nil
}

// heif tells a HEIC/HEIF photo by its ftyp box's brand (which
// http.DetectContentType does not know).
func heif(data []byte) bool {
	if len(data) < 12 || string(data[4:8]) != "ftyp" {
		return false
	}
	switch string(data[8:12]) {
	case "heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1":
		return true
	}
	return false
}

// ReadImage reads an image's file.
func (s *Store) ReadImage(img Image) ([]byte, error) {
	data, err := os.ReadFile(s.ImagePath(img))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("image %s: its file %s is gone", img.Name, img.File)
	}
	return data, err
}

// insertImages lists message id's images.
func insertImages(tx *sql.Tx, id int64, images []Image) error {
	for i, img := range images {
		if _, err := tx.Exec(`INSERT INTO message_images (message_id, position, file, name) VALUES (?, ?, ?, ?)`,
			id, i, img.File, img.Name); err != nil {
			return err
		}
	}
	return nil
}

// loadImages sets the images of msgs (one conversation's) from the database.
func (s *Store) loadImages(conversationID int64, msgs []Message) error {
	rows, err := s.db.Query(`SELECT i.message_id, i.file, i.name FROM message_images i
		JOIN messages m ON m.id = i.message_id WHERE m.conversation_id = ? ORDER BY i.message_id, i.position`, conversationID)
	if err != nil {
		return err
	}
	defer rows.Close()
	at := map[int64]int{}
	for i, m := range msgs {
		at[m.ID] = i
	}
	for rows.Next() {
		var id int64
		var img Image
		if err := rows.Scan(&id, &img.File, &img.Name); err != nil {
			return err
		}
		if i, ok := at[id]; ok {
			msgs[i].Images = append(msgs[i].Images, img)
		}
	}
	return rows.Err()
}

// imageFiles lists the image files of the messages a query selects (its one
// argument list): what a deletion may leave unreferenced.
func imageFiles(tx *sql.Tx, where string, args ...any) ([]string, error) {
	rows, err := tx.Query(`SELECT DISTINCT file FROM message_images WHERE message_id IN (SELECT id FROM messages WHERE `+where+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var files []string
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, rows.Err()
}

// pruneOrphans removes, when the store opens, the image files no message
// lists: images attached and never sent before the app quit, and a save cut
// short (nothing of this run is attached yet).
func (s *Store) pruneOrphans() {
	entries, err := os.ReadDir(s.ImageDir())
	if err != nil {
		return
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			files = append(files, e.Name())
		}
	}
	s.pruneImages(files)
}

// pruneImages removes those of files no message lists any more. A file that
// cannot be removed stays (it costs disk, not a chat).
func (s *Store) pruneImages(files []string) {
	for _, f := range files {
		var n int
		if err := s.db.QueryRow(`SELECT COUNT(*) FROM message_images WHERE file = ?`, f).Scan(&n); err != nil || n > 0 {
			continue
		}
		if strings.ContainsAny(f, `/\`) {
			continue
		}
		os.Remove(filepath.Join(s.ImageDir(), f))
	}
}
