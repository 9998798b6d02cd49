package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"bagel/engine"
	"bagel/switches"
	"bagel/tokenizer"
)

// runGenerate streams one reply. Its sampling defaults are greedy (the command
// is a test tool: the same prompt gives the same text); the app uses the
// engine's recommended sampling instead.
func runGenerate(args []string, out, errOut io.Writer) error {
	fs := newFlags("generate", errOut)
	fs.args = "[MESSAGE]"
	dir := fs.modelDir("model folder (MLX layout)")
	prompt := fs.String("p", "Hello! Who are you?", "the user message (or give it after the flags)")
	system := fs.String("system", "", "system prompt")
	raw := fs.Bool("raw", false, "use -p as the prompt text without the chat template")
	maxTokens := fs.Int("max-tokens", 256, "tokens to generate at most (0: until a stop token or the context is full)")
	temp := fs.Float64("temp", 0, "temperature (0: greedy)")
	topP := fs.Float64("top-p", 1, "nucleus sampling mass (1: off)")
	topK := fs.Int("top-k", 0, "keep the k most likely tokens (0: off)")
	minP := fs.Float64("min-p", 0, "drop tokens below min-p times the top probability (0: off)")
	rep := fs.Float64("repetition-penalty", 1, "penalty for tokens of the last 20 (1: off)")
	seed := fs.Uint64("seed", 0, "random seed")
	backendName := fs.backend()
	fs.engineSwitches()
	fs.remoteFlags()
	ctxLen := fs.contextLength()
	chunk := fs.prefillChunk()
	noThink := fs.Bool("no-think", false, "turn thinking off")
	speculative := fs.String("speculative", "", "speculative decoding: off, ngram (prompt-lookup drafts), tree (prompt-lookup draft trees, greedy) or mtp (the model's own MTP head); empty: the switches "+engine.SwitchSpeculative+" and "+engine.SwitchSpeculativeMTP)
	treeWidth := fs.Int("tree-width", engine.MaxTreeWidth, fmt.Sprintf("branches of a draft tree with --speculative tree, 2 to %d", engine.MaxTreeWidth))
	imagePaths := fs.images("the message is about, before its text")
	draft := fs.Int("draft", 0, fmt.Sprintf("most guesses per speculative step, 1 to %d (0: %d; fewer while they are rejected)", engine.MaxDraftLength, engine.DefaultDraftLength))
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 { // bagel generate -m DIR "question"
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "p" })
		if given {
			return fmt.Errorf("the message is given twice, with -p and after the flags (%q): give it once", strings.Join(fs.Args(), " "))
		}
		*prompt = strings.Join(fs.Args(), " ")
	}
	switch *speculative {
	case "":
	case "off", "ngram", "tree", "mtp":
		if err := switches.Set(engine.SwitchSpeculative, *speculative == "ngram" || *speculative == "tree"); err != nil {
			return err
		}
		if err := switches.Set(engine.SwitchSpeculativeMTP, *speculative == "mtp"); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--speculative %q: want off, ngram, tree or mtp", *speculative)
	}
	if err := need(
		check{*maxTokens >= 0, "max-tokens", *maxTokens, "want 0 (until a stop token) or more"},
		check{finite(*temp) && *temp >= 0, "temp", *temp, "want a number ≥ 0 (0: greedy)"},
		check{*topP >= 0 && *topP <= 1, "top-p", *topP, "want a number in [0, 1] (1: off)"},
		check{*topK >= 0, "top-k", *topK, "want 0 (off) or more"},
		check{*minP >= 0 && *minP <= 1, "min-p", *minP, "want a number in [0, 1] (0: off)"},
		check{finite(*rep) && *rep > 0 && *rep <= engine.MaxRepetitionPenalty, "repetition-penalty", *rep,
			fmt.Sprintf("want a number > 0 and at most %g (1: off)", engine.MaxRepetitionPenalty)},
		check{*draft >= 0 && *draft <= engine.MaxDraftLength, "draft", *draft, fmt.Sprintf("want 0 (the default) to %d", engine.MaxDraftLength)},
		check{*treeWidth >= 2 && *treeWidth <= engine.MaxTreeWidth, "tree-width", *treeWidth, fmt.Sprintf("want 2 to %d", engine.MaxTreeWidth)},
	); err != nil {
		return err
	}
	files, err := readImages(*imagePaths)
	if err != nil {
		return err
	}
	var req engine.Request
	for i, data := range files { // a remote engine reads the image itself
		if fs.remote() {
			img, err := engine.NewRemoteImage(data)
			if err != nil {
				return fmt.Errorf("--image %s: %w", (*imagePaths)[i], err)
			}
			req.Images = append(req.Images, img)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var gen interface {
		Generate(context.Context, engine.Request) <-chan engine.Event
	}
	if fs.remote() {
		c, err := remoteClient(ctx, *fs.remoteURL, *fs.remoteModel)
		if err != nil {
			return err
		}
		gen = c
	} else {
		e, err := engine.Load(*dir, engine.Options{Backend: *backendName, ContextLength: *ctxLen, PrefillChunk: *chunk})
		if err != nil {
			return err
		}
		defer e.Close()
		if *speculative == "mtp" {
			if why := e.MTPStatus(); why != "" {
				return fmt.Errorf("--speculative mtp: %s", why)
			}
		}
		if req.Images, err = encodeImages(e, files, *imagePaths); err != nil {
			return err
		}
		if *maxTokens > e.ContextLength() {
			fmt.Fprintf(errOut, "bagel generate: --max-tokens %d is more than the context holds (%d tokens with the prompt): the reply ends at a stop token or when the context is full (--context sets it)\n",
				*maxTokens, e.ContextLength())
		}
		gen = e
	}
	req = engine.Request{
		Images:         req.Images,
		EnableThinking: !*noThink,
		MaxTokens:      *maxTokens,
		DraftLength:    *draft,
		Sampling: engine.Sampling{Temperature: *temp, TopP: *topP, TopK: *topK, MinP: *minP,
			RepetitionPenalty: *rep, Seed: *seed},
	}
	if *speculative == "tree" {
		req.TreeWidth = *treeWidth
	}
	if *raw {
		req.Prompt = *prompt
	} else {
		if *system != "" {
			req.Messages = append(req.Messages, tokenizer.Message{Role: "system", Content: *system})
		}
		user := tokenizer.Message{Role: "user", Content: *prompt}
		if len(req.Images) > 0 { // the images first, then the question (the processor's usual order)
			user.Content = ""
			for range req.Images {
				user.Parts = append(user.Parts, tokenizer.Part{Image: true})
			}
			user.Parts = append(user.Parts, tokenizer.Part{Text: *prompt})
		}
		req.Messages = append(req.Messages, user)
	}
	thinking := false
	progress := newPromptProgress(errOut)
	for ev := range gen.Generate(ctx, req) {
		switch ev.Kind {
		case engine.EventStats:
			progress.show(ev.Stats)
		case engine.EventToken:
			progress.clear()
			if ev.Thinking != thinking {
				if ev.Thinking {
					fmt.Fprint(out, "<think>")
				} else {
					fmt.Fprint(out, "</think>")
				}
				thinking = ev.Thinking
			}
			fmt.Fprint(out, ev.Text)
		case engine.EventDone:
			// The reply on stdout, the stats on stderr: `bagel generate … >
			// answer.txt` keeps the answer alone.
			fmt.Fprintln(out)
			line := ev.Stats.StatsLine()
			if fs.remote() {
				line = remoteStatsLine(ev.Stats)
			}
			fmt.Fprintf(errOut, "\n[%s] %s\n", ev.Reason, line)
			if ev.Reason == engine.ReasonCancelled && ctx.Err() != nil {
				return errInterrupted
			}
		case engine.EventError:
			fmt.Fprintln(out)
			return ev.Err
		}
	}
	return nil
}

// promptProgress shows on a terminal how far a long prompt has been read
// ("reading the prompt… 40%"), on one line it clears when the reply starts.
// Elsewhere (a pipe, a file) it writes nothing.
type promptProgress struct {
	w     io.Writer
	shown bool
}

func newPromptProgress(w io.Writer) *promptProgress {
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return &promptProgress{w: w}
		}
	}
	return &promptProgress{}
}

func (p *promptProgress) show(st engine.Stats) {
	if p.w == nil || st.GeneratedTokens > 0 || st.PromptTokens == 0 || st.PrefilledTokens >= st.PromptTokens {
		return
	}
	fmt.Fprintf(p.w, "\rreading the prompt… %d%%", 100*st.PrefilledTokens/st.PromptTokens)
	p.shown = true
}

func (p *promptProgress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
