package ui

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"bagel/store"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
)

// exportMarkdown writes a chat as a Markdown document: the title, the system
// prompt, each turn under a heading, a question's images (files in an
// images folder beside the document: exportImages), reasoning in a collapsed
// <details> block, partial replies marked, and each reply's performance
// summary.
func exportMarkdown(conv store.Conversation, msgs []store.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", conv.Title)
	fmt.Fprintf(&b, "_Exported from Bagel · started %s_\n\n", conv.Created.Format("2006-01-02 15:04"))
	if conv.SystemPrompt != "" {
		fmt.Fprintf(&b, "**System prompt:**\n\n%s\n\n", quote(conv.SystemPrompt))
	}
	for _, m := range msgs {
		if m.Role == store.RoleUser {
			b.WriteString("## You\n\n")
		} else {
			author := m.Model
			if author == "" {
				author = "Assistant"
			}
			fmt.Fprintf(&b, "## %s\n\n", author)
		}
		for _, img := range m.Images {
			fmt.Fprintf(&b, "![%s](images/%s)\n\n", strings.NewReplacer("[", "(", "]", ")").Replace(img.Name), img.File)
		}
		if m.Reasoning != "" {
			fmt.Fprintf(&b, "<details><summary>Reasoning</summary>\n\n%s\n\n</details>\n\n", strings.TrimSpace(m.Reasoning))
		}
		if text := strings.TrimSpace(displayText(m)); text != "" {
			b.WriteString(text + "\n\n")
		}
		if s := statusText(m.Status); s != "" {
			fmt.Fprintf(&b, "_(%s)_\n\n", strings.TrimPrefix(s, "· "))
		}
		if m.Role == store.RoleAssistant && m.Summary != "" {
			fmt.Fprintf(&b, "<sub>%s</sub>\n\n", m.Summary)
		}
	}
	return b.String()
}

func quote(s string) string {
	return "> " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n> ")
}

var unsafeName = regexp.MustCompile(`[^\p{L}\p{N} ._-]+`)

// exportFileName is a file name for a chat: its title without path characters.
func exportFileName(title string) string {
	name := strings.TrimSpace(unsafeName.ReplaceAllString(title, ""))
	if name == "" {
		name = "chat"
	}
	return name + ".md"
}

// exportConversation saves the chat on screen as a Markdown file the user picks.
func (a *App) exportConversation() {
	if a.conv == nil {
		return
	}
	conv := *a.conv
	msgs, err := a.store.Messages(conv.ID)
	if err != nil {
		a.showError("The chat could not be read", err)
		return
	}
	text := exportMarkdown(conv, msgs)
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
		if err != nil {
			a.showError("The chat could not be exported", err)
			return
		}
		if w == nil {
			return // cancelled
		}
		if err := writeAndClose(w, text); err != nil {
			a.showError("The chat could not be exported", fmt.Errorf("%s: %w", w.URI().Path(), err))
			return
		}
		if err := exportImages(a.store, filepath.Dir(w.URI().Path()), msgs); err != nil {
			a.showError("The chat's images could not be exported", err)
		}
	}, a.win)
	d.SetFileName(exportFileName(conv.Title))
	if loc := exportFolder(); loc != nil { // not the folder the app was started in (the model's, often)
		d.SetLocation(loc)
	}
	d.SetFilter(storage.NewExtensionFileFilter([]string{".md"}))
	d.Resize(fyne.NewSize(760, 520))
	a.showDialog(d, nil)
}

// exportAll writes every chat into dir as a Markdown file (exportMarkdown),
// one file a chat named after its title, " (2)", " (3)", ... after a name
// taken already in this export or in the folder: an export never overwrites a
// file. It returns how many chats it wrote; it stops at the first failure.
func exportAll(st *store.Store, dir string) (int, error) {
	convs, err := st.Conversations()
	if err != nil {
		return 0, err
	}
	used := map[string]bool{}
	for i, conv := range convs {
		msgs, err := st.Messages(conv.ID)
		if err != nil {
			return i, fmt.Errorf("reading %q: %w", conv.Title, err)
		}
		name := freeExportName(dir, exportFileName(conv.Title), used)
		used[name] = true
		// O_EXCL: a file made since freeExportName looked is not overwritten either.
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return i, err
		}
		if err := writeAndClose(f, exportMarkdown(conv, msgs)); err != nil {
			return i, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
		}
		if err := exportImages(st, dir, msgs); err != nil {
			return i, err
		}
	}
	return len(convs), nil
}

// exportImages copies the images of msgs into dir/images, where their
// Markdown links point (a file already there, by its content-addressed
// name, is the same image).
func exportImages(st *store.Store, dir string, msgs []store.Message) error {
	for _, m := range msgs {
		for _, img := range m.Images {
			dst := filepath.Join(dir, "images", img.File)
			if _, err := os.Stat(dst); err == nil {
				continue
			}
			data, err := st.ReadImage(img)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeAndClose writes text to w and closes it: the first error of the two.
func writeAndClose(w io.WriteCloser, text string) error {
	_, err := io.WriteString(w, text)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// freeExportName is name, or name with " (2)", " (3)", ... before its
// extension, the first that neither used nor dir has.
func freeExportName(dir, name string, used map[string]bool) string {
	ext := filepath.Ext(name)
	base := strings.TrimSuffix(name, ext)
	for n := 1; ; n++ {
		try := name
		if n > 1 {
			try = fmt.Sprintf("%s (%d)%s", base, n, ext)
		}
		if _, err := os.Lstat(filepath.Join(dir, try)); !used[try] && os.IsNotExist(err) {
			return try
		}
	}
}

// exportAllConversations asks for a folder and writes every chat into it.
func (a *App) exportAllConversations() {
	d := dialog.NewFolderOpen(func(dir fyne.ListableURI, err error) {
		if err != nil {
			a.showError("The chats could not be exported", err)
			return
		}
		if dir == nil {
			return // cancelled
		}
		n, err := exportAll(a.store, dir.Path())
		if err != nil {
			a.showError(fmt.Sprintf("The chats could not all be exported (%d written to %s)", n, dir.Path()), err)
			return
		}
		a.showMessage("Chats exported", fmt.Sprintf("%d chats written to %s as Markdown files.", n, dir.Path()))
	}, a.win)
	if loc := exportFolder(); loc != nil {
		d.SetLocation(loc)
	}
	d.Resize(fyne.NewSize(760, 520))
	a.showDialog(d, nil)
}

// exportFolder is where an export starts: the user's Documents folder, else
// their home folder; nil when neither can be listed.
func exportFolder() fyne.ListableURI {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	for _, dir := range []string{filepath.Join(home, "Documents"), home} {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			if loc, err := storage.ListerForURI(storage.NewFileURI(dir)); err == nil {
				return loc
			}
		}
	}
	return nil
}
