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
	shortcutBigger     = &desktop.CustomShortcut{KeyName: fyne.KeyEqual, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutSmaller    = &desktop.CustomShortcut{KeyName: fyne.KeyMinus, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutActualSize = &desktop.CustomShortcut{KeyName: fyne.Key0, Modifier: fyne.KeyModifierShortcutDefault}
)

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
	view := fyne.NewMenu("View", perf, fyne.NewMenuItemSeparator(),
		item("Bigger text", shortcutBigger, func() { a.scaleText(textStep) }),
		item("Smaller text", shortcutSmaller, func() { a.scaleText(1 / textStep) }),
		item("Actual size", shortcutActualSize, func() { a.scaleText(0) }),
	)
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
		shortcutBigger:     func() { a.scaleText(textStep) },
		shortcutSmaller:    func() { a.scaleText(1 / textStep) },
		shortcutActualSize: func() { a.scaleText(0) },
	} {
		c.AddShortcut(sc, func(fyne.Shortcut) { run() })
	}
	c.SetOnTypedKey(func(k *fyne.KeyEvent) {
		if k.Name == fyne.KeyEscape && !a.closeTopDialog() {
			a.stopOrCancelEdit()
		}
	})
}
