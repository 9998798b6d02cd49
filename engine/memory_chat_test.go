package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"bagel/internal/testmodel"
	"bagel/tokenizer"
)

// TestLongChatMemory: a chat of 100 turns, with the default prompt cache,
// keeps the process's resident memory within 30 MB of what it was at turn 10
// (measured after a collection, the freed pages returned). With a snapshot
// kept a turn, it grew by 170 MB over 50 turns on the CPU backend; now this
// chat's two newest states are held (TestLongChatHoldsTwoStates) and the
// rest is the cache's growing keys and values. Linux only (/proc).
func TestLongChatMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	e, err := Load(testmodel.Dir(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var conv []tokenizer.Message
	var at10 int64
	for turn := 1; turn <= 100; turn++ {
		conv = append(conv, tokenizer.Message{Role: "user", Content: fmt.Sprintf("Question %d about bagels?", turn)})
		var reply strings.Builder
		for ev := range e.Generate(context.Background(), Request{Messages: conv, MaxTokens: 6, IgnoreStop: true}) {
			switch ev.Kind {
			case EventToken:
				reply.WriteString(ev.Text)
			case EventError:
				t.Fatal(ev.Err)
			}
		}
		conv = append(conv, tokenizer.Message{Role: "assistant", Content: reply.String()})
		if turn == 10 || turn == 100 {
			rss := residentBytes(t)
			if turn == 10 {
				at10 = rss
				continue
			}
			n, held := e.PromptCache()
			t.Logf("resident memory at turn 10 %d MB, at turn 100 %d MB; %d states held (%d KB)", at10>>20, rss>>20, n, held>>10)
			if rss-at10 > 30<<20 {
				t.Errorf("resident memory grew by %d MB from turn 10 to turn 100, want at most 30", (rss-at10)>>20)
			}
		}
	}
}

// residentBytes is the process's resident memory after a collection that
// returns freed pages to the system.
func residentBytes(t *testing.T) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
