package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"bagel/tokenizer"
)

func runTokenize(args []string, out, errOut io.Writer) error {
	fs := newFlags("tokenize", errOut)
	dir := fs.modelDir("model folder")
	text := fs.String("text", "", "text to encode")
	if err := fs.parse(args); err != nil {
		return err
	}
	tok, err := tokenizer.Open(*dir)
	if err != nil {
		return err
	}
	ids := tok.Encode(*text)
	if ids == nil {
		ids = []int32{}
	}
	return json.NewEncoder(out).Encode(ids)
}

func runDetokenize(args []string, out, errOut io.Writer) error {
	fs := newFlags("detokenize", errOut)
	dir := fs.modelDir("model folder")
	idsFlag := fs.String("ids", "", "comma-separated token ids")
	if err := fs.parse(args); err != nil {
		return err
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
	fmt.Fprintln(out, tok.Decode(ids))
	return nil
}

func runTemplate(args []string, out, errOut io.Writer) error {
	fs := newFlags("template", errOut)
	dir := fs.modelDir("model folder")
	file := fs.requiredString("messages", "FILE", `JSON file: [{"role":"user","content":"..."}, ...]`)
	noThink := fs.Bool("no-think", false, "render with thinking off")
	if err := fs.parse(args); err != nil {
		return err
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
	text, err := tmpl.Render(msgs, tokenizer.RenderOptions{AddGenerationPrompt: true, EnableThinking: !*noThink})
	if err != nil {
		return err
	}
	fmt.Fprint(out, text)
	return nil
}
