//go:build !cgo

package main

import "fmt"

// runGUI explains why a binary built without cgo (the command-line build, or a
// cross-compiled check) has no window: Fyne's GLFW driver is cgo.
func runGUI() error {
	return fmt.Errorf("this bagel was built without cgo, so it has no window (the command-line tools work: 'bagel help'); build the app with 'make build'")
}
