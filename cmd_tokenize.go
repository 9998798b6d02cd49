package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"bagel/tokenizer"
)

func init() {
	commands["tokenize"] = command{"print the token ids of a text as a JSON array", runTokenize}
	commands["detokenize"] = command{"print the text of comma-separated token ids", runDetokenize}
	commands["template"] = command{"print a conversation rendered through the chat template", runTemplate}
}

func runTokenize(args []string) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	dir := fs.String("m", "", "model folder")
	text := fs.String("text", "", "text to encode")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("-m DIR is required")
	}
	tok, err := tokenizer.Open(*dir)
	if err != nil {
		return err
	}
	ids := tok.Encode(*text)
	if ids == nil {
		ids = []int32{}
	}
	return json.NewEncoder(os.Stdout).Encode(ids)
}

func runDetokenize(args []string) error {
	fs := flag.NewFlagSet("detokenize", flag.ContinueOnError)
	dir := fs.String("m", "", "model folder")
	idsFlag := fs.String("ids", "", "comma-separated token ids")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("-m DIR is required")
	}
	ids, err := parseIDs(*idsFlag)
	if err != nil {
		return err
	}
	tok, err := tokenizer.Open(*dir)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if int(id) >= tok.VocabSize() {
			return fmt.Errorf("--ids: %d is outside the vocabulary (size %d)", id, tok.VocabSize())
		}
	}
	fmt.Println(tok.Decode(ids))
	return nil
}

func runTemplate(args []string) error {
	fs := flag.NewFlagSet("template", flag.ContinueOnError)
	dir := fs.String("m", "", "model folder")
	file := fs.String("messages", "", `JSON file: [{"role":"user","content":"..."}, ...]`)
	noThink := fs.Bool("no-think", false, "render with thinking off")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *file == "" {
		return fmt.Errorf("-m DIR and --messages FILE are required")
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	var msgs []tokenizer.Message
	if err := json.Unmarshal(data, &msgs); err != nil {
		return fmt.Errorf("%s: want a JSON array of {\"role\", \"content\"} objects: %w", *file, err)
	}
	tmpl, err := tokenizer.LoadTemplate(*dir)
	if err != nil {
		return err
	}
	out, err := tmpl.Render(msgs, tokenizer.RenderOptions{AddGenerationPrompt: true, EnableThinking: !*noThink})
	if err != nil {
		return err
	}
	fmt.Print(out)
	return nil
}
