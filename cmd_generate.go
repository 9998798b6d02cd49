package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"bagel/engine"
	"bagel/tokenizer"
)

func init() {
	commands["generate"] = command{"stream a reply to a prompt and print the speed", runGenerate}
}

func runGenerate(args []string) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	dir := fs.String("m", "", "model folder (MLX layout)")
	prompt := fs.String("p", "Hello! Who are you?", "the user message")
	system := fs.String("system", "", "system prompt")
	raw := fs.Bool("raw", false, "use -p as the prompt text without the chat template")
	maxTokens := fs.Int("max-tokens", 256, "tokens to generate at most (0: until a stop token)")
	temp := fs.Float64("temp", 0, "temperature (0: greedy)")
	topP := fs.Float64("top-p", 1, "nucleus sampling mass (1: off)")
	topK := fs.Int("top-k", 0, "keep the k most likely tokens (0: off)")
	minP := fs.Float64("min-p", 0, "drop tokens below min-p times the top probability (0: off)")
	rep := fs.Float64("repetition-penalty", 1, "penalty for tokens of the last 20 (1: off)")
	seed := fs.Uint64("seed", 0, "random seed")
	backendName := fs.String("backend", "auto", "auto, cpu, cuda or metal")
	ctxLen := fs.Int("context", 0, "context length in tokens (0: the model's, at most 8192)")
	noThink := fs.Bool("no-think", false, "turn thinking off")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("-m DIR is required")
	}
	e, err := engine.Load(*dir, engine.Options{Backend: *backendName, ContextLength: *ctxLen})
	if err != nil {
		return err
	}
	defer e.Close()
	req := engine.Request{
		EnableThinking: !*noThink,
		MaxTokens:      *maxTokens,
		Sampling: engine.Sampling{Temperature: *temp, TopP: *topP, TopK: *topK, MinP: *minP,
			RepetitionPenalty: *rep, Seed: *seed},
	}
	if *raw {
		req.Prompt = *prompt
	} else {
		if *system != "" {
			req.Messages = append(req.Messages, tokenizer.Message{Role: "system", Content: *system})
		}
		req.Messages = append(req.Messages, tokenizer.Message{Role: "user", Content: *prompt})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	thinking := false
	for ev := range e.Generate(ctx, req) {
		switch ev.Kind {
		case engine.EventToken:
			if ev.Thinking != thinking {
				if ev.Thinking {
					fmt.Print("<think>")
				} else {
					fmt.Print("</think>")
				}
				thinking = ev.Thinking
			}
			fmt.Print(ev.Text)
		case engine.EventDone:
			fmt.Printf("\n\n[%s] %s\n", ev.Reason, ev.Stats.StatsLine())
		case engine.EventError:
			fmt.Println()
			return ev.Err
		}
	}
	return nil
}
