package main

import "fmt"

// runGUI opens the chat window.
func runGUI() error {
	return fmt.Errorf("the chat window is not built yet; run 'bagel help' for the command line tools")
}
