package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"bagel/engine"
)

func init() {
	commands["score"] = command{"teacher-forced logits of a token sequence, one JSON line per position", runScore}
}

func runScore(args []string) error {
	fs := flag.NewFlagSet("score", flag.ContinueOnError)
	dir := fs.String("m", "", "model folder (MLX layout)")
	idsFlag := fs.String("ids", "", "comma-separated token ids")
	top := fs.Int("top", 10, "ids per position")
	backendName := fs.String("backend", "auto", "auto, cpu, cuda or metal")
	prefill := fs.Int("prefill", 0, "tokens in the first forward; the rest are decoded one at a time (0: all at once)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *idsFlag == "" {
		return fmt.Errorf("-m DIR and --ids are required")
	}
	ids, err := parseIDs(*idsFlag)
	if err != nil {
		return err
	}
	e, err := engine.Load(*dir, engine.Options{Backend: *backendName, ContextLength: max(len(ids), 1)})
	if err != nil {
		return err
	}
	defer e.Close()
	positions, err := e.Score(ids, engine.ScoreOptions{Top: *top, Prefill: *prefill})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	for _, p := range positions {
		if err := enc.Encode(p); err != nil {
			return err
		}
	}
	return nil
}

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
