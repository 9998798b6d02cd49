//go:build cgo

package main

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"bagel/assets"
	"bagel/ui"
)

// appID identifies Bagel to the desktop (preferences, notifications); it
// matches FyneApp.toml.
const appID = "dev.bagel.chat"

// runGUI opens the chat window and returns when it is closed. The window needs
// cgo (Fyne's GLFW driver); gui_nocgo.go stands in without it.
func runGUI() error {
	a := app.NewWithID(appID)
	a.SetIcon(fyne.NewStaticResource("icon.png", assets.IconPNG))
	w, err := ui.New(a, ui.Options{})
	if err != nil {
		return err
	}
	w.ShowAndRun()
	return nil
}
