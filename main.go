// Command bagel is a desktop chat app for MLX-format Qwen3.5 models. With no
// arguments it opens the window; with a subcommand it runs that command line tool
// (see ARCHITECTURE.md, "Command line").
package main

import (
	"fmt"
	"os"
	"sort"
)

// command is one subcommand: it parses its own flags and returns an error for the user.
type command struct {
	summary string
	run     func(args []string) error
}

var commands = map[string]command{}

func main() {
	if len(os.Args) < 2 {
		if err := runGUI(); err != nil {
			fmt.Fprintln(os.Stderr, "bagel:", err)
			os.Exit(1)
		}
		return
	}
	name := os.Args[1]
	if name == "help" || name == "-h" || name == "--help" {
		usage()
		return
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "bagel: unknown command %q\n\n", name)
		usage()
		os.Exit(2)
	}
	if err := cmd.run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "bagel %s: %v\n", name, err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bagel [command] [flags]\n\nWith no command, bagel opens the chat window.\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-11s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'bagel COMMAND -h' for a command's flags.")
}
