package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// crashChildEnv makes the test binary act as a chat app that is killed while it
// streams a reply (see TestCrashSafety).
const crashChildEnv = "BAGEL_STORE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	os.Exit(m.Run())
}

// crashChild saves a question and a reply chunk by chunk the way the app does,
// says how far it got, and waits to be killed.
func crashChild(path string) {
	s, err := Open(path)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	c, err := s.CreateConversation("doomed", "")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	msgs, err := s.Replace(c.ID, 0,
		Message{Role: RoleUser, Content: "tell me a story"},
		Message{Role: RoleAssistant, Status: StatusGenerating})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	reply := msgs[1]
	for i := 1; i <= 3; i++ {
		reply.Content += fmt.Sprintf("chunk %d. ", i)
		if err := s.UpdateMessage(reply); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("saved %q\n", reply.Content)
	time.Sleep(time.Minute) // killed long before
}

// TestCrashSafety kills a process in the middle of a reply (SIGKILL: no
// deferred Close, no clean shutdown) and checks the chat survives: the question
// complete, the reply up to its last saved chunk and marked interrupted.
func TestCrashSafety(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chats.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "saved") {
		_ = cmd.Process.Kill()
		t.Fatalf("child: %q, %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	s := open(t, path)
	defer s.Close()
	convs, err := s.Conversations()
	if err != nil || len(convs) != 1 {
		t.Fatalf("conversations after the crash: %+v, %v", convs, err)
	}
	msgs, err := s.Messages(convs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Content != "tell me a story" || msgs[0].Partial() {
		t.Fatalf("the question after the crash: %+v", msgs)
	}
	reply := msgs[1]
	if reply.Content != "chunk 1. chunk 2. chunk 3. " || reply.Status != StatusInterrupted || !reply.Partial() {
		t.Fatalf("the reply after the crash: %+v, want all three chunks, status %q", reply, StatusInterrupted)
	}
}
