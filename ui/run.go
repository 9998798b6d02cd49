//go:build cgo

package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"bagel/assets"
)

// appID identifies Bagel to the desktop (preferences, notifications); it
// matches FyneApp.toml.
const appID = "dev.bagel.chat"

// Run opens the chat window (on the model folder model, when given; else the
// last model used) and returns when it is closed. The window needs cgo
// (Fyne's GLFW driver); run_nocgo.go stands in without it.
func Run(model string) error {
	if err := displayAvailable(); err != nil {
		return err
	}
	a := app.NewWithID(appID)
	a.SetIcon(fyne.NewStaticResource("icon.png", assets.IconPNG))
	w, err := New(a, Options{Recommend: true, Model: model})
	if err != nil {
		return err
	}
	w.ShowAndRun()
	return nil
}
