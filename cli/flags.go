package cli

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"bagel/engine"
)

// flags is a command's flag set with the flags every command shares and a
// list of required ones, so each command declares only what is its own.
type flags struct {
	*flag.FlagSet
	name     string
	args     string   // what follows the flags, for the usage line ("ORG/NAME[@REVISION]")
	required []string // flag names, in the order they are declared
	usage    map[string]string
	switches []switchSetting // --switch, in order
	noFused  bool
	model    *string // -m, resolved by parse
	modelArg string  // -m as given (parse replaces *model with the folder)
	ctxLen   *int    // --context, checked by parse
	chunk    *int    // --prefill-chunk, checked by parse
	// remoteURL is --remote: a server stands in for -m (remoteFlags).
	remoteURL, remoteModel *string
}

// remoteFlags declares --remote URL and --model NAME: the command runs on a
// model another server serves (package remote), and -m is not needed.
func (f *flags) remoteFlags() {
	f.remoteURL = f.String("remote", "", "use the model a server serves over OpenAI's API (vLLM, SGLang, llama-server, LM Studio, Ollama, bagel serve): its address, e.g. http://127.0.0.1:8484/v1; the key from $BAGEL_API_KEY")
	f.remoteModel = f.String("model", "", "with --remote: the model to ask for (default: the server's first)")
	f.usage["remote"], f.usage["model"] = "--remote URL", "--model NAME"
}

// remote reports --remote given.
func (f *flags) remote() bool { return f.remoteURL != nil && *f.remoteURL != "" }

// newFlags starts the flag set of command name; its help and parse errors go
// to errOut. Errors come back from parse (flag.ContinueOnError) so Run reports
// them like any other.
func newFlags(name string, errOut io.Writer) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(errOut)
	f := &flags{FlagSet: fs, name: name, usage: map[string]string{}}
	fs.Usage = func() { f.printUsage(fs.Output()) }
	return f
}

// printUsage is the command's help: its usage line, what it does, and its
// flags as the README writes them (-m, --max-tokens).
func (f *flags) printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: bagel %s [flags]", f.name)
	if f.args != "" {
		fmt.Fprintf(w, " %s", f.args)
	}
	fmt.Fprintf(w, "\n\n%s.\n", commands[f.name].summary)
	n := 0
	f.VisitAll(func(fl *flag.Flag) {
		if n++; n == 1 {
			fmt.Fprintln(w, "\nFlags:")
		}
		kind, usage := flag.UnquoteUsage(fl)
		line := "  " + dashes(fl.Name)
		if named, ok := f.usage[fl.Name]; ok { // a required flag's value has a name: -m DIR
			line = "  " + named
		} else if kind != "" {
			line += " " + kind
		}
		if def := fl.DefValue; def != "" && def != "0" && def != "false" && def != "[]" {
			usage += fmt.Sprintf(" (default %s)", def)
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, usage)
	})
	if n == 0 {
		fmt.Fprintln(w, "\nNo flags.")
	}
}

// modelDir declares -m, the model folder, which every command needs: a
// folder, or ORG/NAME[@REVISION] from the Hugging Face cache (parse resolves it).
func (f *flags) modelDir(what string) *string {
	f.model = f.requiredString("m", "DIR", what+"; or ORG/NAME[@REV] from the Hugging Face cache")
	return f.model
}

// backend declares --backend.
func (f *flags) backend() *string {
	return f.String("backend", "auto", "auto, cpu, cuda or metal")
}

// engineSwitches declares --switch NAME=on|off (repeatable) and --no-fused,
// applied to the engine's switch registry by parse before the command runs.
func (f *flags) engineSwitches() {
	f.Func("switch", "set an engine switch for this run, NAME=on|off (repeatable; `bagel bench` lists them)", func(v string) error {
		name, val, ok := strings.Cut(v, "=")
		on := val == "on" || val == "1" || val == "true"
		if !ok || !(on || val == "off" || val == "0" || val == "false") {
			return fmt.Errorf("%q: want NAME=on or NAME=off", v)
		}
		f.switches = append(f.switches, switchSetting{name, on})
		return nil
	})
	f.BoolVar(&f.noFused, "no-fused", false, "turn every fused path (the fused-* switches) off: the unfused reference")
}

// images declares --image FILE (repeatable): the files, read and checked
// by readImages.
func (f *flags) images(what string) *[]string {
	var paths []string
	f.Func("image", "an image `FILE` "+what+" (repeatable; PNG, JPEG, GIF or WebP)", func(v string) error {
		paths = append(paths, v)
		return nil
	})
	return &paths
}

// readImages reads the --image files, naming the first that cannot be.
func readImages(paths []string) ([][]byte, error) {
	var out [][]byte
	for _, p := range paths {
		data, err := engine.ReadImageFile(p)
		if err != nil {
			return nil, fmt.Errorf("--image: %w", err)
		}
		out = append(out, data)
	}
	return out, nil
}

// encodeImages runs the image files through e's vision tower.
func encodeImages(e *engine.Engine, files [][]byte, paths []string) ([]*engine.Image, error) {
	var out []*engine.Image
	for i, data := range files {
		img, err := e.EncodeImage(data)
		if err != nil {
			return nil, fmt.Errorf("--image %s: %w", paths[i], err)
		}
		out = append(out, img)
	}
	return out, nil
}

// contextLength declares --context, the engine's context length, which parse
// checks (0 or more).
func (f *flags) contextLength() *int {
	f.ctxLen = f.Int("context", 0, "context length in tokens (0: the model's, at most 8192)")
	return f.ctxLen
}

// prefillChunk declares --prefill-chunk, the prompt tokens of one forward,
// which parse checks (0 to engine.MaxPrefillChunk).
func (f *flags) prefillChunk() *int {
	f.chunk = f.Int("prefill-chunk", 0, fmt.Sprintf("prompt tokens per forward (0: %d, at most %d; larger: faster prompts, more memory; smaller: shorter pauses in the other replies while a long prompt prefills)", engine.DefaultPrefillChunk, engine.MaxPrefillChunk))
	return f.chunk
}

type switchSetting struct {
	name string
	on   bool
}

// applySwitches sets what --no-fused and --switch asked for, --switch last so
// that it can turn one fused path back on.
func (f *flags) applySwitches() error {
	if f.noFused {
		for _, sw := range engine.Switches() {
			if strings.HasPrefix(sw.Name, "fused-") {
				if err := engine.SetSwitch(sw.Name, false); err != nil {
					return err
				}
			}
		}
	}
	for _, s := range f.switches {
		if err := engine.SetSwitch(s.name, s.on); err != nil {
			return fmt.Errorf("--switch %s: %w", s.name, err)
		}
	}
	return nil
}

// requiredString declares a string flag that must be given; metavar (may be
// "") names its value in the error ("-m DIR is required").
func (f *flags) requiredString(name, metavar, what string) *string {
	f.required = append(f.required, name)
	f.usage[name] = strings.TrimSpace(dashes(name) + " " + metavar)
	return f.String(name, "", what)
}

// parse parses args and names the required flags that are missing.
func (f *flags) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		return err
	}
	var missing []string
	for _, name := range f.required {
		if name == "m" && f.remote() {
			continue // a server's model stands in for the folder
		}
		if f.Lookup(name).Value.String() == "" {
			missing = append(missing, f.usage[name])
		}
	}
	switch len(missing) {
	case 0:
		if f.ctxLen != nil {
			if err := need(check{*f.ctxLen >= 0, "context", *f.ctxLen, "want 0 (the model's) or a token count"}); err != nil {
				return err
			}
		}
		if f.chunk != nil {
			if err := need(check{*f.chunk >= 0 && *f.chunk <= engine.MaxPrefillChunk, "prefill-chunk", *f.chunk,
				fmt.Sprintf("want 0 (the default, %d) to %d", engine.DefaultPrefillChunk, engine.MaxPrefillChunk)}); err != nil {
				return err
			}
		}
		if f.remote() && f.model != nil && *f.model != "" {
			return fmt.Errorf("-m and --remote both name a model: give one")
		}
		if f.model != nil && !f.remote() {
			f.modelArg = *f.model
			dir, err := resolveModel(*f.model)
			if err != nil {
				return err
			}
			*f.model = dir
		}
		return f.applySwitches()
	case 1:
		return fmt.Errorf("%s is required", missing[0])
	}
	return fmt.Errorf("%s are required", strings.Join(missing, " and "))
}

// dashes writes a flag as its help does: -m, --ids.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// need checks flag values after parse: the first false condition's message
// becomes the command's error, naming the flag and the value.
func need(checks ...check) error {
	for _, c := range checks {
		if !c.ok {
			return fmt.Errorf("--%s %v: %s", c.flag, c.value, c.want)
		}
	}
	return nil
}

type check struct {
	ok    bool
	flag  string
	value any
	want  string
}

// finite reports a float that is a number, neither NaN nor ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// parseIDs reads "1,2,3" (spaces allowed).
func parseIDs(s string) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		id, err := strconv.ParseInt(f, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("--ids: %q is not a token id", f)
		}
		ids = append(ids, int32(id))
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("--ids: no token ids")
	}
	return ids, nil
}
