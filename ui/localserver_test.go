package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestLocalServerAnswersAClient: switched on in its dialog, the server
// answers a client's chat completion with the loaded model, the request
// appears in the dialog's log with its tokens, the window's own chat still
// replies, and switched off it no longer listens.
// serverDialog loads the tiny model and opens the Local server dialog with
// a free port typed in (the server still off).
func serverDialog(t *testing.T) (*harness, *serverView, int) {
	t.Helper()
	return serverDialogWith(t, testSettings())
}

// serverDialogWith is serverDialog with settings s.
func serverDialogWith(t *testing.T, s Settings) (*harness, *serverView, int) {
	t.Helper()
	h := newHarness(t, &s, "", "")
	h.loadModel("tiny-moe")
	h.a.showServer()
	v := h.a.server.view
	port := freePort(t)
	v.port.SetText(strconv.Itoa(port))
	return h, v, port
}

func TestLocalServerAnswersAClient(t *testing.T) {
	h, v, port := serverDialog(t)
	test.Tap(v.on)
	h.pump()
	if h.a.server.srv == nil || !strings.HasPrefix(v.status.Text, "Serving ") {
		t.Fatalf("after the switch: %q", v.status.Text)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	if !strings.Contains(v.addresses.Text, url+"/v1") {
		t.Errorf("addresses %q, want %s/v1", v.addresses.Text, url)
	}
	test.Tap(v.copy)
	if got := h.a.fyne.Clipboard().Content(); got != url+"/v1" || !strings.HasPrefix(v.copy.Text, "Copied") {
		t.Errorf("copy: clipboard %q, button %q", got, v.copy.Text)
	}

	type result struct {
		status int
		body   map[string]any
		err    error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Post(url+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"max_tokens":3,"temperature":0,"messages":[{"role":"user","content":"Hi"}]}`))
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var body map[string]any
		json.Unmarshal(b, &body)
		res <- result{status: resp.StatusCode, body: body}
	}()
	h.waitFor("the request in the log", func() bool { return len(h.a.server.log) == 1 })
	r := <-res
	if r.err != nil || r.status != 200 {
		t.Fatalf("the client got %d %v (%v)", r.status, r.body, r.err)
	}
	if u := r.body["usage"].(map[string]any); u["completion_tokens"].(float64) != 3 {
		t.Errorf("usage %v, want 3 completion tokens", u)
	}
	e := h.a.server.log[0]
	if e.Endpoint != "/v1/chat/completions" || e.Status != 200 || e.GeneratedTokens != 3 || e.PromptTokens == 0 {
		t.Errorf("log entry %+v", e)
	}
	if len(v.lines) != 1 || v.lines[0] != logLine(e) || !strings.Contains(v.lines[0], "reply 3") {
		t.Errorf("the dialog's log shows %q", v.lines)
	}
	if !h.a.settings.ServerOn || h.a.settings.ServerPort != port {
		t.Errorf("settings: on %v port %d", h.a.settings.ServerOn, h.a.settings.ServerPort)
	}

	for h.a.closeTopDialog() {
	}
	h.typeAndSend("Hello")
	if m := h.waitReplyDone(); m.Content == "" {
		t.Error("the window's reply is empty while the server is on")
	}

	h.a.showServer()
	test.Tap(h.a.server.view.on)
	h.pump()
	if h.a.server.srv != nil || h.a.settings.ServerOn {
		t.Error("switched off, the server still runs")
	}
	// The server shuts down on its own goroutine (its listener, then its
	// idle connections): the port stops answering soon after the tap, not
	// before it returns (as TestLocalServerFollowsTheModel waits for it).
	h.waitFor("the port to stop answering once switched off", func() bool {
		resp, err := http.Get(url + "/v1/models")
		if err == nil {
			resp.Body.Close()
		}
		return err != nil
	})
}

// TestLocalServerFollowsTheModel: switched on in the settings, the server
// starts with the model the app reloads, serves the next model loaded under
// its name, and stops when the model is unloaded; a port another program
// holds is named in the dialog, and the switch stays on.
func TestLocalServerFollowsTheModel(t *testing.T) {
	s := testSettings()
	s.ServerOn, s.ServerPort = true, freePort(t)
	h := newHarness(t, &s, "", "")
	models := func() string {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(s.ServerPort) + "/v1/models")
		if err != nil {
			return "(" + err.Error() + ")"
		}
		defer resp.Body.Close()
		var out struct{ Data []struct{ ID string } }
		json.NewDecoder(resp.Body).Decode(&out)
		if len(out.Data) != 1 {
			return "(no model)"
		}
		return out.Data[0].ID
	}
	first := h.loadModel("tiny-moe")
	if got := models(); got != h.a.server.model || h.a.server.model == "" || !strings.HasSuffix(first, got) {
		t.Errorf("serving %q, want the first model's folder name", got)
	}
	second := h.loadModel("tiny-dense")
	if got := models(); !strings.HasSuffix(second, got) {
		t.Errorf("after the second load, serving %q, want %q's name", got, second)
	}
	h.a.unloadModel()
	// The server stops at once; its listener closes when Serve returns.
	h.waitFor("the port to stop serving", func() bool { return strings.HasPrefix(models(), "(") })

	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	h.a.settings.ServerPort = held.Addr().(*net.TCPAddr).Port
	h.loadModel("tiny-moe")
	h.a.showServer()
	status := h.a.server.view.status.Text
	if h.a.server.srv != nil || !strings.Contains(status, "port "+strconv.Itoa(h.a.settings.ServerPort)+" cannot be used") || !h.a.settings.ServerOn {
		t.Errorf("a port in use: status %q", status)
	}
}

// TestLocalServerStepsRequestsTogether: with Requests at once set to 2 in
// the dialog (while off), the server runs two clients' replies together
// (engine.Parallel), says so in its status with their rate together while
// they run, and both get their replies; the
// choice is kept in the settings and locked while the server runs.
func TestLocalServerStepsRequestsTogether(t *testing.T) {
	h, v, port := serverDialog(t)
	v.parallel.SetSelected(parallelChoices[1])
	test.Tap(v.on)
	h.pump()
	if h.a.settings.ServerParallel != 2 || !strings.Contains(v.status.Text, "up to 2 at once") || !v.parallel.Disabled() {
		t.Fatalf("setting %d, status %q, locked %v", h.a.settings.ServerParallel, v.status.Text, v.parallel.Disabled())
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/v1/completions"
	codes := make(chan string, 2)
	for _, prompt := range []string{"Hello there", "The sky is"} {
		go func() {
			resp, err := http.Post(url, "application/json", strings.NewReader(`{"max_tokens":200,"temperature":0,"prompt":"`+prompt+`"}`))
			if err != nil {
				codes <- err.Error()
				return
			}
			defer resp.Body.Close()
			var out struct{ Choices []struct{ Text string } }
			json.NewDecoder(resp.Body).Decode(&out)
			codes <- fmt.Sprintf("%d %d", resp.StatusCode, len(out.Choices))
		}()
	}
	// While they run, the status gives their rate together.
	h.waitFor("the replies' rate together", func() bool { return strings.Contains(v.status.Text, "tok/s together") })
	for range 2 {
		if got := <-codes; got != "200 1" {
			t.Errorf("a client got %q, want 200 with one choice", got)
		}
	}
	test.Tap(v.on)
	h.pump()
}

// serverInChatsBatch is the Local server switched on with the chats
// answering together (Replies at once 2): its requests step in the chats'
// batch.
func serverInChatsBatch(t *testing.T) (*harness, *serverView, int) {
	s := testSettings()
	s.ChatParallel = 2
	h, v, port := serverDialogWith(t, s)
	test.Tap(v.on)
	h.pump()
	if h.a.batch == nil || h.a.server.batch != h.a.batch {
		t.Fatalf("the server's batch %p, the chats' %p: want the chats'", h.a.server.batch, h.a.batch)
	}
	return h, v, port
}

// TestLocalServerJoinsTheChatsBatch: with the chats answering together
// (Replies at once 2) and the server's requests one at a time, a client's
// request steps in the chats' batch (its tokens counted there): a request
// of its own would wait for the engine's turn, and new chat replies for it.
func TestLocalServerJoinsTheChatsBatch(t *testing.T) {
	h, v, port := serverInChatsBatch(t)
	before := h.a.batch.Tokens()
	resp, err := http.Post("http://127.0.0.1:"+strconv.Itoa(port)+"/v1/completions", "application/json",
		strings.NewReader(`{"max_tokens":7,"temperature":0,"prompt":"Hello there"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.Usage.CompletionTokens == 0 {
		t.Fatalf("status %d, %+v, %v", resp.StatusCode, out, err)
	}
	if got := h.a.batch.Tokens() - before; got != int64(out.Usage.CompletionTokens) {
		t.Errorf("the chats' batch sent %d tokens for the client's %d", got, out.Usage.CompletionTokens)
	}
	test.Tap(v.on)
	h.pump()
}

// TestPanelCountsTheServersRequests: with the chats and the Local server in
// one batch, the panel's note beside a chat's reply counts the client's
// request that steps with it, and their rate together.
func TestPanelCountsTheServersRequests(t *testing.T) {
	h, v, port := serverInChatsBatch(t)
	h.hold()
	h.typeAndSend("Count to ten.")
	conv := h.a.conv.ID
	h.waitFor("the chat's first words", func() bool { g := h.a.gens[conv]; return g != nil && g.latest.Content != "" })
	done := make(chan error, 1)
	go func() {
		resp, err := http.Post("http://127.0.0.1:"+strconv.Itoa(port)+"/v1/completions", "application/json",
			strings.NewReader(`{"max_tokens":400,"temperature":0,"prompt":"The sky is"}`))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	h.waitFor("the note counting the request", func() bool {
		return strings.Contains(h.a.othersAnswering(), "1 chat and 1 Local server request answering")
	})
	if note := h.a.othersAnswering(); !strings.Contains(note, "tok/s together") {
		t.Errorf("the note %q gives no rate together", note)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.release()
	h.waitFor("the chat's reply", func() bool { return len(h.a.gens) == 0 })
	if note := h.a.othersAnswering(); note != "" {
		t.Errorf("with nothing answering the note is %q", note)
	}
	test.Tap(v.on)
	h.pump()
}
