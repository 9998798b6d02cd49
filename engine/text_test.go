package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"bagel/internal/testmodel"
)

func TestStopTokensPrecedence(t *testing.T) {
	dir := testmodel.Dir(t, "tiny-dense")
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 32})
	if err != nil {
		t.Fatal(err)
	}
	// generation_config.json [151645, 151643] overrides config.json's 151645
	if len(e.eos) != 2 || e.eos[0] != 151645 || e.eos[1] != 151643 {
		t.Errorf("eos %v, want generation_config.json's [151645 151643]", e.eos)
	}
	e.Close()

	// without generation_config.json: config.json's
	os.Remove(filepath.Join(dir, "generation_config.json"))
	e, err = Load(dir, Options{Backend: "cpu", ContextLength: 32})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.eos) != 1 || e.eos[0] != 151645 {
		t.Errorf("eos %v, want config.json's [151645]", e.eos)
	}
	e.Close()

	os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"eos_token_id": "x"}`), 0o644)
	if _, err := Load(dir, Options{Backend: "cpu", ContextLength: 32}); err == nil {
		t.Error("a malformed generation_config.json loaded without an error")
	}
}

// TestGenerateStopsOnEOS: the first greedy token, declared a stop token, ends the
// reply with reason "stop"; the stop token itself is counted but not emitted.
func TestGenerateStopsOnEOS(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-dense"), Options{Backend: "cpu", ContextLength: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	req := Request{PromptIDs: []int32{1, 2, 3}, MaxTokens: 5}
	ids, _, _ := collect(t, e.Generate(context.Background(), req))
	e.eos = []int32{ids[0]}
	again, text, done := collect(t, e.Generate(context.Background(), req))
	if done.Reason != ReasonStop || len(again) != 0 || text != "" || done.Stats.GeneratedTokens != 1 {
		t.Fatalf("reason %q, %d token events, text %q, %d generated; want stop at the eos token", done.Reason, len(again), text, done.Stats.GeneratedTokens)
	}
}
