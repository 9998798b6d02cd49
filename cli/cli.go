// Package cli is Bagel's command line: the subcommands of ARCHITECTURE.md
// ("Command line"), whose flags, output and exit status scripts and tests rely
// on. Each command parses its own flags (flags.go) and returns an error meant
// for the user; Run prints it and turns it into the exit status.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand. run writes its result to out, its flags' help to
// errOut, and returns an error for the user.
type command struct {
	summary string
	run     func(args []string, out, errOut io.Writer) error
}

// commands is the command table; usage lists it in name order. (Set in init:
// the commands' help reads it.)
var commands map[string]command

func init() {
	commands = map[string]command{
		"generate":   {"stream a reply to a prompt and print the speed", runGenerate},
		"score":      {"teacher-forced logits of a token sequence, one JSON line per position", runScore},
		"tokenize":   {"print the token ids of a text as a JSON array", runTokenize},
		"detokenize": {"print the text of comma-separated token ids", runDetokenize},
		"template":   {"print a conversation rendered through the chat template", runTemplate},
		"synth":      {"write a synthetic checkpoint with a real model's shapes and random weights", runSynth},
		"bench":      {"measure decode, prefill and long-context speed, each switch off and on", runBench},
		"pull":       {"download ORG/NAME[@REV] from the Hugging Face Hub into its cache (resumable)", runPull},
		"models":     {"list the models in the Hub cache and LM Studio's folder", runModels},
		"serve":      {"serve a model over the OpenAI API (chat completions, completions) on this machine", runServe},
		"replay":     {"play a conversation's user turns, one JSON line per turn (reused and prefilled tokens, speed)", runReplay},
	}
}

// errInterrupted ends a command stopped by Ctrl-C after it has printed what it
// had: exit status 130, as a shell reports a process ended by SIGINT.
var errInterrupted = errors.New("interrupted")

// IsCommand reports a subcommand's name (or help): main opens the window
// on a model folder given alone only when it is not one.
func IsCommand(name string) bool {
	_, ok := commands[name]
	return ok || name == "help" || name == "-h" || name == "--help"
}

// Run runs the command named by args[0] with the rest of args as its flags and
// returns the process exit status: 0 done, 1 the command failed, 2 an unknown
// command.
func Run(args []string) int {
	return run(args, os.Stdout, os.Stderr)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" {
		if len(args) > 1 { // bagel help COMMAND: the command's help
			return run([]string{args[1], "-h"}, stdout, stderr)
		}
		usage(stdout) // asked for: to stdout, so that `bagel help | less` shows it
		return 0
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "bagel: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	helpOut := stderr // a command's flags print on an error, to stderr...
	for _, a := range args[1:] {
		if a == "-h" || a == "-help" || a == "--help" {
			helpOut = stdout // ...and when asked for, to stdout
		}
	}
	err := cmd.run(args[1:], stdout, helpOut)
	switch {
	case errors.Is(err, flag.ErrHelp): // -h: the flag set has printed the flags
		return 0
	case errors.Is(err, errInterrupted): // Ctrl-C: the partial result is printed
		return 130
	case err != nil:
		fmt.Fprintf(stderr, "bagel %s: %v\n", name, err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: bagel [command] [flags]\n\nWith no command, bagel opens the chat window.\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'bagel help COMMAND' (or 'bagel COMMAND -h') for a command's flags.")
}
