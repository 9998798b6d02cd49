package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"bagel/synth"
	"bagel/tokenizer"
)

// runSynth writes a synthetic checkpoint (package synth) of a built-in or a
// given model's shapes, with the chosen overrides.
func runSynth(args []string, out, errOut io.Writer) error {
	fs := newFlags("synth", errOut)
	like := fs.String("like", "", "a built-in shape: "+fmt.Sprint(synth.Names()))
	config := fs.String("config", "", "take the shapes (and quantization) from this config.json instead")
	dir := fs.requiredString("out", "DIR", "the folder to write")
	experts := fs.Int("experts", 0, "override the number of experts (the bytes read per token stay those of the real model)")
	layers := fs.Int("layers", 0, "override the number of layers")
	bits := fs.Int("bits", 0, "override the quantization bits (2, 3, 4, 5, 6 or 8)")
	groupSize := fs.Int("group-size", 0, "override the quantization group size (32, 64 or 128)")
	vocab := fs.Int("vocab", 0, "override the vocabulary size (to match a tokenizer given with --tokenizer)")
	seed := fs.Uint64("seed", 1, "random seed")
	mtp := fs.Bool("mtp", false, "add a multi-token-prediction head (mtp.*, quantized as the rest) for --speculative mtp")
	vision := fs.Bool("vision", false, "add a vision tower of the released models' shapes (vision_tower.*, bf16, as mlx-vlm keeps it), its vision_config and preprocessor_config.json")
	visionDepth := fs.Int("vision-depth", 0, "with --vision, override the tower's blocks (0: the released 27)")
	tokenizerDir := fs.String("tokenizer", "", "copy tokenizer.json, tokenizer_config.json and chat_template.jinja from this model folder")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := need(
		check{*experts >= 0, "experts", *experts, "want a count (0: the shape's)"},
		check{*layers >= 0, "layers", *layers, "want a count (0: the shape's)"},
		check{*vocab >= 0 && *vocab <= 1<<20, "vocab", *vocab, "want a size up to 1048576 (0: the shape's)"},
		check{*visionDepth >= 0 && *visionDepth <= 64, "vision-depth", *visionDepth, "want 1 to 64 blocks (0: the released 27)"},
	); err != nil {
		return err
	}
	var (
		shape synth.Shape
		quant = synth.DefaultQuant
		err   error
	)
	switch {
	case (*like == "") == (*config == ""):
		return fmt.Errorf("give exactly one of --like NAME or --config FILE")
	case *like != "":
		shape, err = synth.Like(*like)
	default:
		shape, quant, err = synth.FromConfig(*config)
	}
	if err != nil {
		return err
	}
	for _, o := range []struct {
		v   int
		dst *int
	}{{*experts, &shape.Experts}, {*layers, &shape.Layers}, {*vocab, &shape.Vocab}, {*bits, &quant.Bits}, {*groupSize, &quant.GroupSize}} {
		if o.v != 0 {
			*o.dst = o.v
		}
	}
	shape.MTP = *mtp
	if *vision {
		v := synth.ReleasedVision
		if *visionDepth > 0 {
			v.Depth = *visionDepth
		}
		shape.Vision = &v
	}
	if shape.TopK > shape.Experts && shape.Experts > 0 {
		return fmt.Errorf("--experts %d is fewer than the %d experts each token uses", shape.Experts, shape.TopK)
	}
	if err := shape.Validate(quant); err != nil {
		return err
	}
	need := synth.Bytes(shape, quant)
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	if free, ok := freeBytes(*dir); ok && free < need+(64<<20) {
		return fmt.Errorf("%s: %.1f GB free, the checkpoint needs %.1f GB", *dir, float64(free)/1e9, float64(need)/1e9)
	}
	start := time.Now()
	last := start
	err = synth.Write(*dir, synth.Options{Shape: shape, Quant: quant, Seed: *seed, Progress: func(done, total int64) {
		if now := time.Now(); now.Sub(last) > time.Second || done == total {
			last = now
			fmt.Fprintf(errOut, "\rsynth: %.1f / %.1f GB", float64(done)/1e9, float64(total)/1e9)
		}
	}})
	fmt.Fprintln(errOut)
	if err != nil {
		return err
	}
	if *tokenizerDir != "" {
		if err := copyTokenizer(*tokenizerDir, *dir); err != nil {
			return err
		}
		if err := takeTokenizersEOS(*dir); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%s: %s, %d layers, %d experts, %d-bit gs %d, %.2f GB in %.1f s\n", *dir, shape.ModelType,
		shape.Layers, shape.Experts, quant.Bits, quant.GroupSize, float64(need)/1e9, time.Since(start).Seconds())
	return nil
}

// copyTokenizer copies a model folder's tokenizer files; tokenizer.json must exist.
func copyTokenizer(from, to string) error {
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"} {
		data, err := os.ReadFile(filepath.Join(from, name))
		if os.IsNotExist(err) && name != "tokenizer.json" {
			continue
		}
		if err != nil {
			return fmt.Errorf("--tokenizer: %w", err)
		}
		if err := os.WriteFile(filepath.Join(to, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// takeTokenizersEOS makes the tokenizer's end-of-sequence token the
// checkpoint's stop token (synth writes the vocabulary's last id, which a
// tokenizer copied in need not have).
func takeTokenizersEOS(dir string) error {
	tok, err := tokenizer.Open(dir)
	if err != nil {
		return fmt.Errorf("--tokenizer: %w", err)
	}
	eos, ok := tok.EOSTokenID()
	if !ok {
		return nil
	}
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		return err
	}
	cfg["eos_token_id"] = eos
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(out, '\n'), 0o644)
}
