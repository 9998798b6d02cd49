package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"bagel/engine"
)

func runScore(args []string, out, errOut io.Writer) error {
	fs := newFlags("score", errOut)
	dir := fs.modelDir("model folder (MLX layout)")
	idsFlag := fs.requiredString("ids", "", "comma-separated token ids")
	top := fs.Int("top", 10, "ids per position")
	backendName := fs.backend()
	fs.engineSwitches()
	prefill := fs.Int("prefill", 0, "tokens in the first forward; the rest are decoded one at a time (0: all at once)")
	checkFinite := fs.Bool("check-finite", false, "instead of scoring, find the first layer whose output holds a NaN or an infinity (reads every layer back)")
	imagePaths := fs.images("for which the ids hold one image pad token (<|image_pad|>), in order")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := need(
		check{*top >= 1, "top", *top, "want 1 or more ids per position"},
		check{*prefill >= 0, "prefill", *prefill, "want 0 (all at once) or a token count"},
	); err != nil {
		return err
	}
	ids, err := parseIDs(*idsFlag)
	if err != nil {
		return err
	}
	files, err := readImages(*imagePaths)
	if err != nil {
		return err
	}
	length := len(ids) // the ids with each image's pad expanded into its tokens
	for i, data := range files {
		n, err := engine.ImageTokens(*dir, data)
		if err != nil {
			return fmt.Errorf("--image %s: %w", (*imagePaths)[i], err)
		}
		length += n - 1
	}
	e, err := engine.Load(*dir, engine.Options{Backend: *backendName, ContextLength: max(length, 1), TokenIDsOnly: true})
	if err != nil {
		return err
	}
	defer e.Close()
	images, err := encodeImages(e, files, *imagePaths)
	if err != nil {
		return err
	}
	if *checkFinite && len(images) > 0 {
		return fmt.Errorf("--check-finite reads text ids only: leave --image out")
	}
	if *checkFinite {
		bad, err := e.FindNonFinite(ids)
		switch {
		case err != nil:
			return err
		case bad != nil:
			return fmt.Errorf("%s (the weights or the computation there are broken)", bad)
		}
		fmt.Fprintf(out, "every layer's output and the logits are finite for these %d ids\n", len(ids))
		return nil
	}
	// One JSON line per position as it is computed: memory stays bounded for
	// any number of ids.
	enc := json.NewEncoder(out)
	return e.ScoreEach(ids, engine.ScoreOptions{Top: *top, Prefill: *prefill, Images: images}, func(p engine.Position) error {
		return enc.Encode(p)
	})
}
