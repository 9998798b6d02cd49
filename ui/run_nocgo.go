//go:build !cgo

package ui

import "fmt"

// Run explains why a binary built without cgo (the command-line build, or a
// cross-compiled check) has no window: Fyne's GLFW driver is cgo.
func Run(model string) error {
	return fmt.Errorf("this bagel was built without cgo, so it has no window (the command-line tools work: 'bagel help'); build the app with 'make build'")
}
