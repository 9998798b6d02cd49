// Command bagel is a desktop chat app for MLX-format Qwen3.5 models. With no
// arguments it opens the window (package ui); with a model folder alone it
// opens the window on that model; with a subcommand it runs that command
// line tool (package cli; see ARCHITECTURE.md, "Command line").
package main

import (
	"fmt"
	"os"

	"bagel/cli"
	"bagel/ui"
)

func main() {
	model := ""
	if len(os.Args) == 2 && !cli.IsCommand(os.Args[1]) {
		if st, err := os.Stat(os.Args[1]); err == nil && st.IsDir() {
			model = os.Args[1] // bagel PATH: the window, on that model folder
		}
	}
	if len(os.Args) < 2 || model != "" {
		if err := ui.Run(model); err != nil {
			fmt.Fprintln(os.Stderr, "bagel:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(cli.Run(os.Args[1:]))
}
