package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
)

// Keyboard shortcuts use the platform's modifier: Cmd on macOS, Ctrl elsewhere.
var (
	shortcutNewChat    = &desktop.CustomShortcut{KeyName: fyne.KeyN, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutOpenModel  = &desktop.CustomShortcut{KeyName: fyne.KeyO, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutExport     = &desktop.CustomShortcut{KeyName: fyne.KeyE, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutSettings   = &desktop.CustomShortcut{KeyName: fyne.KeyComma, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutRegenerate = &desktop.CustomShortcut{KeyName: fyne.KeyR, Modifier: fyne.KeyModifierShortcutDefault | fyne.KeyModifierShift}
)

// mainMenu is the menu bar (the macOS menu, an in-window bar elsewhere); its
// items carry the shortcuts, which then work whatever has the focus.
func (a *App) mainMenu() *fyne.MainMenu {
	item := func(label string, sc fyne.Shortcut, run func()) *fyne.MenuItem {
		it := fyne.NewMenuItem(label, run)
		it.Shortcut = sc
		return it
	}
	recent := fyne.NewMenuItem("Recent models", nil)
	recent.ChildMenu = fyne.NewMenu("", a.recentItems()...)
	file := fyne.NewMenu("File",
		item("New chat", shortcutNewChat, a.newConversation),
		fyne.NewMenuItemSeparator(),
		item("Open model folder…", shortcutOpenModel, a.chooseModelFolder),
		fyne.NewMenuItem("Models…", a.showLibrary),
		recent,
		fyne.NewMenuItem("Unload model", a.unloadModel),
		fyne.NewMenuItemSeparator(),
		item("Export chat as Markdown…", shortcutExport, a.exportConversation),
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
	view := fyne.NewMenu("View", perf)
	return fyne.NewMainMenu(file, chat, view)
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
	} {
		c.AddShortcut(sc, func(fyne.Shortcut) { run() })
	}
	c.SetOnTypedKey(func(k *fyne.KeyEvent) {
		if k.Name == fyne.KeyEscape && !a.closeTopDialog() {
			a.stopOrCancelEdit()
		}
	})
}
