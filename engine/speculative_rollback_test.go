package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"bagel/internal/testmodel"
	"bagel/qwen"
)

// TestReplayAfterPartialAccept: after a verify of five tokens of which two are
// kept, restoring the states and replaying the GDN rule over the recorded
// inputs leaves the cache exactly as a plain forward of those two tokens: the
// next token's logits are the same bits, on both test models, with the
// tiled-gemv switch off and on (on, the verify's in-projection runs with its
// conv in one launch, which writes the record: qmatmul_mma_multi_conv_bf16's
// raw0).
func TestReplayAfterPartialAccept(t *testing.T) {
	withTiledGEMV(t, "replay", testReplayAfterPartialAccept)
}

func testReplayAfterPartialAccept(t *testing.T) {
	prompt := []int32{9707, 11, 1246, 525, 3555, 30, 2585}
	verify := []int32{374, 279, 6722, 315, 9625}
	next := []int32{13}
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: 64})
		if err != nil {
			t.Fatal(err)
		}
		run := func(tokens []int32) []float32 {
			out, err := e.forward(tokens, false)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		run(prompt)
		s := &speculator{e: e}
		var before *qwen.Snapshot
		if err := e.loop.do(s.beforeVerify(&before)); err != nil {
			t.Fatal(err)
		}
		run(verify)
		if err := s.rollback(before, verify[0], verify[1:2]); err != nil {
			t.Fatal(err)
		}
		if got := e.cache.Offset; got != len(prompt)+2 {
			t.Fatalf("%s: cache at %d after the rollback, want %d", name, got, len(prompt)+2)
		}
		replayed := run(next)

		if err := e.resetCache(); err != nil {
			t.Fatal(err)
		}
		run(prompt)
		run(verify[:2])
		plain := run(next)
		if !slices.Equal(replayed, plain) {
			t.Errorf("%s: logits after the replayed rollback differ from a plain decode", name)
		}
		e.Close()
	}
}

// TestDraftLengthOutOfRange: a request asking for more guesses per step than
// a verify takes, or a negative number, gets a clear error, not a clamp.
func TestDraftLengthOutOfRange(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-dense"), Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, n := range []int{-1, MaxDraftLength + 1} {
		var got error
		for ev := range e.Generate(context.Background(), Request{PromptIDs: []int32{9707, 11}, MaxTokens: 2, DraftLength: n}) {
			if ev.Kind == EventError {
				got = ev.Err
			}
		}
		if got == nil || !strings.Contains(got.Error(), "draft length must be 0") {
			t.Errorf("draft length %d: %v", n, got)
		}
	}
}

// TestStateSnapshotIsOneLaunch: every GDN layer's conv window and state sit
// in one piece of memory, so the snapshot before a verify, its restore and a
// cache reset are one launch each (60 copies at 35B-A3B before), whatever
// the number of GDN layers.
func TestStateSnapshotIsOneLaunch(t *testing.T) {
	e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.forward([]int32{9707, 11, 1246}, false); err != nil {
		t.Fatal(err)
	}
	launches := func(what string, f func() error) {
		t.Helper()
		before := e.Counters().Dispatches
		if err := e.loop.do(f); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := e.Counters().Dispatches - before; n != 1 {
			t.Errorf("%s: %d launches, want 1", what, n)
		}
	}
	var snap *qwen.Snapshot
	launches("snapshot", func() (err error) { snap, err = e.cache.SnapshotState(e.ctx); return err })
	launches("restore", func() error { return e.cache.Restore(e.ctx, snap) })
	launches("reset", func() error { return e.cache.Reset(e.ctx) })
}
