package ui

import (
	"runtime"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
)

// Keyboard shortcuts use the platform's modifier: Cmd on macOS, Ctrl elsewhere.
var (
	shortcutNewChat    = &desktop.CustomShortcut{KeyName: fyne.KeyN, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutOpenModel  = &desktop.CustomShortcut{KeyName: fyne.KeyO, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutExport     = &desktop.CustomShortcut{KeyName: fyne.KeyE, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutSettings   = &desktop.CustomShortcut{KeyName: fyne.KeyComma, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutRegenerate = &desktop.CustomShortcut{KeyName: fyne.KeyR, Modifier: fyne.KeyModifierShortcutDefault | fyne.KeyModifierShift}
	shortcutBigger     = &desktop.CustomShortcut{KeyName: fyne.KeyEqual, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutSmaller    = &desktop.CustomShortcut{KeyName: fyne.KeyMinus, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutActualSize = &desktop.CustomShortcut{KeyName: fyne.Key0, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutNextChat   = &desktop.CustomShortcut{KeyName: fyne.KeyRightBracket, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutPrevChat   = &desktop.CustomShortcut{KeyName: fyne.KeyLeftBracket, Modifier: fyne.KeyModifierShortcutDefault}
)

// windowMenuChats is how many of the newest chats the Window menu lists.
const windowMenuChats = 9

// textStep is one step of View › Bigger / Smaller text; the scale stays
// between minTextScale and maxTextScale.
const (
	textStep     = 1.1
	minTextScale = 0.7
	maxTextScale = 2.0
)

// scaleText multiplies the text size by factor (0: back to the actual size),
// applies it to the whole window and keeps it in the settings.
func (a *App) scaleText(factor float32) {
	scale := a.settings.TextScale
	if scale <= 0 {
		scale = 1
	}
	scale *= factor
	if factor == 0 {
		scale = 1
	}
	scale = min(max(scale, minTextScale), maxTextScale)
	a.settings.TextScale = scale
	a.saveSettings()
	a.fyne.Settings().SetTheme(newReadableTheme(scale))
}

// mainMenu is the menu bar (the macOS menu, an in-window bar elsewhere); its
// items carry the shortcuts, which then work whatever has the focus.
func (a *App) mainMenu() *fyne.MainMenu {
	item := func(label string, sc fyne.Shortcut, run func()) *fyne.MenuItem {
		it := fyne.NewMenuItem(label, run)
		it.Shortcut = sc
		return it
	}
	server := fyne.NewMenuItem("Local server…", a.showServer)
	server.Checked = a.settings.ServerOn
	recent := fyne.NewMenuItem("Recent models", nil)
	recent.ChildMenu = fyne.NewMenu("", a.recentItems()...)
	file := fyne.NewMenu("File",
		item("New chat", shortcutNewChat, a.newConversation),
		fyne.NewMenuItemSeparator(),
		item("Open model folder…", shortcutOpenModel, a.chooseModelFolder),
		fyne.NewMenuItem("Models…", a.showLibrary),
		fyne.NewMenuItem("Add remote engine…", a.showAddRemote),
		recent,
		fyne.NewMenuItem("Unload model", a.unloadModel),
		fyne.NewMenuItemSeparator(),
		server,
		fyne.NewMenuItemSeparator(),
		item("Export chat as Markdown…", shortcutExport, a.exportConversation),
		fyne.NewMenuItem("Export all chats…", a.exportAllConversations),
		item("Settings…", shortcutSettings, a.showSettings),
	)
	chat := fyne.NewMenu("Chat",
		fyne.NewMenuItem("Stop the reply (Esc)", a.stop),
		item("Regenerate the last reply", shortcutRegenerate, a.regenerate),
		fyne.NewMenuItem("Edit the last message", a.editLast),
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("Rename chat…", a.renameConversation),
		fyne.NewMenuItem("System prompt…", a.editSystemPrompt),
		fyne.NewMenuItem("Delete chat…", a.deleteConversation),
	)
	perf := fyne.NewMenuItem("Performance panel", a.togglePerformance)
	perf.Checked = !a.settings.HidePerformance
	clip := a.fyne.Clipboard()
	edit := fyne.NewMenu("Edit",
		item("Cut", &fyne.ShortcutCut{Clipboard: clip}, func() { a.toFocused(&fyne.ShortcutCut{Clipboard: clip}) }),
		item("Copy", &fyne.ShortcutCopy{Clipboard: clip}, func() { a.toFocused(&fyne.ShortcutCopy{Clipboard: clip}) }),
		item("Paste", &fyne.ShortcutPaste{Clipboard: clip}, func() { a.toFocused(&fyne.ShortcutPaste{Clipboard: clip}) }),
		item("Select All", &fyne.ShortcutSelectAll{}, func() { a.toFocused(&fyne.ShortcutSelectAll{}) }),
	)
	help := fyne.NewMenu("Help",
		fyne.NewMenuItem("Keyboard shortcuts", a.showShortcuts),
		fyne.NewMenuItem("About Bagel", a.showAbout),
	)
	view := fyne.NewMenu("View", perf, fyne.NewMenuItemSeparator(),
		item("Bigger text", shortcutBigger, func() { a.scaleText(textStep) }),
		item("Smaller text", shortcutSmaller, func() { a.scaleText(1 / textStep) }),
		item("Actual size", shortcutActualSize, func() { a.scaleText(0) }),
	)
	window := fyne.NewMenu("Window", a.windowItems(item)...)
	return fyne.NewMainMenu(file, edit, chat, view, window, help)
}

// windowItems are the Window menu: full screen, the next and previous chats,
// and the newest chats by title (the selected one checked).
func (a *App) windowItems(item func(string, fyne.Shortcut, func()) *fyne.MenuItem) []*fyne.MenuItem {
	full := fyne.NewMenuItem("Full screen", func() {
		a.win.SetFullScreen(!a.win.FullScreen())
		a.win.SetMainMenu(a.mainMenu())
	})
	full.Checked = a.win.FullScreen()
	items := []*fyne.MenuItem{full, fyne.NewMenuItemSeparator(),
		item("Next chat", shortcutNextChat, func() { a.stepConversation(1) }),
		item("Previous chat", shortcutPrevChat, func() { a.stepConversation(-1) }),
	}
	if len(a.convs) > 0 {
		items = append(items, fyne.NewMenuItemSeparator())
	}
	for _, c := range a.convs[:min(len(a.convs), windowMenuChats)] {
		title := c.Title
		if title == "" {
			title = defaultTitle
		}
		it := fyne.NewMenuItem(title, func() { a.selectConversation(c.ID) })
		it.Checked = a.conv != nil && a.conv.ID == c.ID
		items = append(items, it)
	}
	return items
}

// stepConversation selects the chat step places after (1) or before (−1) the
// one shown, in the chat list's order, wrapping around.
func (a *App) stepConversation(step int) {
	n := len(a.convs)
	if n == 0 {
		return
	}
	i := 0
	if a.conv != nil {
		for j, c := range a.convs {
			if c.ID == a.conv.ID {
				i = (j + step + n) % n
				break
			}
		}
	}
	a.selectConversation(a.convs[i].ID)
}

// addShortcuts registers the shortcuts on the canvas too (the menu handles
// them while it exists; the canvas when nothing focused takes them), and Esc
// for when the composer does not have the focus: it closes the dialog on top,
// else stops the reply or the edit.
func (a *App) addShortcuts() {
	c := a.win.Canvas()
	for sc, run := range map[*desktop.CustomShortcut]func(){
		shortcutNewChat:    a.newConversation,
		shortcutOpenModel:  a.chooseModelFolder,
		shortcutExport:     a.exportConversation,
		shortcutSettings:   a.showSettings,
		shortcutRegenerate: a.regenerate,
		shortcutBigger:     func() { a.scaleText(textStep) },
		shortcutSmaller:    func() { a.scaleText(1 / textStep) },
		shortcutActualSize: func() { a.scaleText(0) },
		shortcutNextChat:   func() { a.stepConversation(1) },
		shortcutPrevChat:   func() { a.stepConversation(-1) },
	} {
		c.AddShortcut(sc, func(fyne.Shortcut) { run() })
	}
	c.SetOnTypedKey(func(k *fyne.KeyEvent) {
		switch k.Name {
		case fyne.KeyEscape:
			if !a.closeTopDialog() {
				a.stopOrCancelEdit()
			}
		case fyne.KeyReturn, fyne.KeyEnter:
			a.enterOnTop()
		}
	})
}

// toFocused hands an Edit menu shortcut to the focused widget (an entry), as
// its keys would.
func (a *App) toFocused(sc fyne.Shortcut) {
	if f, ok := a.win.Canvas().Focused().(fyne.Shortcutable); ok {
		f.TypedShortcut(sc)
	}
}

// shortcutsText lists the keyboard shortcuts (Help › Keyboard shortcuts).
const shortcutsText = `Enter — send · Shift+Enter — new line · Esc — stop the reply, cancel an edit, close a dialog
Ctrl/Cmd+N — new chat · Ctrl/Cmd+O — open a model folder · Ctrl/Cmd+, — settings
Ctrl/Cmd+Shift+R — regenerate the last reply · Ctrl/Cmd+E — export the chat
Ctrl/Cmd+] / [ — next, previous chat
Ctrl/Cmd + / − / 0 — bigger, smaller, actual text size
Ctrl/Cmd+X, C, V, A — cut, copy, paste, select all in the composer`

func (a *App) showShortcuts() {
	a.showDialog(dialog.NewInformation("Keyboard shortcuts", shortcutsFor(runtime.GOOS), a.win), nil)
}

// shortcutsFor is shortcutsText as the platform writes its keys: ⌘ and ⇧ on
// a Mac, Ctrl and Shift elsewhere.
func shortcutsFor(goos string) string {
	if goos == "darwin" {
		return strings.NewReplacer("Ctrl/Cmd+Shift+", "⇧⌘", "Ctrl/Cmd + / − / 0", "⌘+ / ⌘− / ⌘0", "Ctrl/Cmd+X, C, V, A", "⌘X, ⌘C, ⌘V, ⌘A",
			"Ctrl/Cmd+] / [", "⌘] / ⌘[", "Ctrl/Cmd+", "⌘", "Shift+Enter", "⇧Enter").Replace(shortcutsText)
	}
	return strings.NewReplacer("Ctrl/Cmd+", "Ctrl+", "Ctrl/Cmd + / − / 0", "Ctrl + / − / 0").Replace(shortcutsText)
}

func (a *App) showAbout() {
	a.showDialog(dialog.NewInformation("About Bagel",
		"Bagel runs MLX-format Qwen3.5 / Qwen3.6 models on this computer (Metal, CUDA or the CPU) and shows how fast.\n\n"+
			"Chats: "+a.store.Path+"\nSettings: "+a.settingsPath, a.win), nil)
}
