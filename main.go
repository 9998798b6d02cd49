// Command bagel is a desktop chat app for MLX-format Qwen3.5 models. With no
// arguments it opens the window (package ui); with a subcommand it runs that
// command line tool (package cli; see ARCHITECTURE.md, "Command line").
package main

import (
	"fmt"
	"os"

	"bagel/cli"
	"bagel/ui"
)

func main() {
	if len(os.Args) < 2 {
		if err := ui.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "bagel:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(cli.Run(os.Args[1:]))
}
