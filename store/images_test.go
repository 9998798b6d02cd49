package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pngBytes is a PNG signature with a tag: enough for the store, which only
// sniffs the format.
func pngBytes(tag string) []byte { return []byte("\x89PNG\r\n\x1a\n" + tag) }

// TestImagesKeptWithTheirMessages: a question's images come back in order
// after a reopen, the same bytes are one file, a duplicated chat lists the
// same files, and a file goes only when the last message listing it does
// (a deleted chat, a resent question); data that is not an image is refused.
func TestImagesKeptWithTheirMessages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chats.db")
	s := open(t, path)
	a, _ := s.CreateConversation("a", "")
	cat, err := s.SaveImage(pngBytes("cat"), "cat.png")
	if err != nil {
		t.Fatal(err)
	}
	dog, _ := s.SaveImage(pngBytes("dog"), "dog.png")
	again, _ := s.SaveImage(pngBytes("cat"), "other name.png")
	if again.File != cat.File || !strings.HasSuffix(cat.File, ".png") || len(cat.File) != 64+4 {
		t.Fatalf("files %q and %q for the same bytes", cat.File, again.File)
	}
	if _, err := s.SaveImage([]byte("hello"), "notes.txt"); err == nil || !strings.Contains(err.Error(), "notes.txt is not a PNG") {
		t.Errorf("a text file saved as an image: %v", err)
	}
	if _, err := s.Replace(a.ID, 0, Message{Role: RoleUser, Content: "both", Images: []Image{dog, cat}},
		Message{Role: RoleAssistant, Content: "two animals"}); err != nil {
		t.Fatal(err)
	}
	orphan, _ := s.SaveImage(pngBytes("never sent"), "draft.png") // attached, the app quit
	os.WriteFile(filepath.Join(s.ImageDir(), ".saving-123"), []byte("cut"), 0o644)
	s.Close()
	s = open(t, path)
	defer s.Close()
	if _, err := os.Stat(s.ImagePath(orphan)); !os.IsNotExist(err) {
		t.Error("an image no message lists survived the reopen")
	}
	if _, err := os.Stat(filepath.Join(s.ImageDir(), ".saving-123")); !os.IsNotExist(err) {
		t.Error("a cut save survived the reopen")
	}
	msgs, err := s.Messages(a.ID)
	if err != nil || len(msgs) != 2 || !slices.Equal(msgs[0].Images, []Image{dog, cat}) || msgs[1].Images != nil {
		t.Fatalf("after a reopen: %+v, %v", msgs, err)
	}
	if data, err := s.ReadImage(dog); err != nil || string(data) != string(pngBytes("dog")) {
		t.Fatalf("ReadImage: %q, %v", data, err)
	}
	exists := func(img Image) bool { _, err := os.Stat(s.ImagePath(img)); return err == nil }

	b, err := s.DuplicateConversation(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if copied, _ := s.Messages(b.ID); !slices.Equal(copied[0].Images, []Image{dog, cat}) {
		t.Fatalf("the copy's images: %+v", copied[0].Images)
	}
	if err := s.DeleteConversation(a.ID); err != nil {
		t.Fatal(err)
	}
	if !exists(cat) || !exists(dog) {
		t.Fatal("deleting a chat removed files its copy still lists")
	}
	// The copy's question resent without the dog: the dog's file goes.
	copied, _ := s.Messages(b.ID)
	if _, err := s.Replace(b.ID, copied[0].ID, Message{Role: RoleUser, Content: "just the cat", Images: []Image{cat}}); err != nil {
		t.Fatal(err)
	}
	if !exists(cat) || exists(dog) {
		t.Errorf("after the resend: cat kept %v (want true), dog kept %v (want false)", exists(cat), exists(dog))
	}
	if err := s.DeleteConversation(b.ID); err != nil {
		t.Fatal(err)
	}
	if exists(cat) {
		t.Error("the last chat listing the cat was deleted, its file stayed")
	}
	if _, err := s.ReadImage(cat); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Errorf("reading a removed image: %v", err)
	}
}
