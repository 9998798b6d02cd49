package ui

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"bagel/engine"
	"bagel/internal/testmodel"
	"bagel/remote"
	"bagel/server"

	"github.com/zalando/go-keyring"
)

// TestRemoteEngineChats: a chat on a remote engine (another Bagel's server
// over the tiny model) gives the reply the local model gives to the same
// message and settings, the bar names the server and says the figures are
// measured over the network, the settings remember the engine and the
// keychain its key (never the settings), and loading a local model leaves
// it.
func TestRemoteEngineChats(t *testing.T) {
	keyring.MockInit() // the system keychain, as an in-memory one
	s := testSettings()
	h := newHarness(t, &s, "", "")
	dir := h.loadModel("tiny-moe")
	h.typeAndSend("Hi")
	local := h.waitReplyDone().Content
	localChat := h.a.conv.ID

	e, err := engine.Load(testmodel.Dir(t, "tiny-moe"), engine.Options{Backend: "cpu", ContextLength: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv, err := server.New(e, "tiny", server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	h.a.connectRemote(ts.URL+"/v1", "", "secret")
	h.waitFor("the remote engine", func() bool { return h.a.remote != nil })
	if h.a.eng != nil || h.a.modelName() != "tiny" || !strings.Contains(h.a.bar.detail.Text, "over the network") {
		t.Errorf("after connecting: local engine %v, name %q, bar %q", h.a.eng != nil, h.a.modelName(), h.a.bar.detail.Text)
	}
	if p := h.a.perf.phase.Text; !strings.Contains(p, "served by bagel") || !strings.Contains(p, "round trip") || !strings.Contains(p, "unencrypted") {
		t.Errorf("the performance panel says %q", p)
	}
	h.a.newConversation()
	h.typeAndSend("Hi")
	if got := h.waitReplyDone(); got.Content != local || got.Status == "error" || got.Model != "tiny on "+strings.TrimPrefix(ts.URL, "http://") {
		t.Errorf("remote reply %q (%s) by %q, local %q", got.Content, got.Status, got.Model, local)
	}
	// The local chat, reopened, says which model wrote it and which answers now.
	h.a.selectConversation(localChat)
	if hint := h.a.composer.hint.Text; !strings.Contains(hint, "last reply came from "+h.a.msgs[1].Model) || !strings.Contains(hint, "the next comes from tiny on 127.0.0.1:") {
		t.Errorf("the reopened chat's hint: %q", hint)
	}
	// Its button goes back to the local model; the remote chat's, to the server.
	if b := h.a.composer.switchBack; !b.Visible() || b.Text != "Use "+h.a.msgs[1].Model {
		t.Fatalf("switch-back button %q, shown %v", b.Text, b.Visible())
	}
	test.Tap(h.a.composer.switchBack)
	h.waitFor("the local model again", func() bool { return !h.a.loading && h.a.eng != nil && h.a.remote == nil })
	h.a.selectConversation(h.a.convs[0].ID) // the remote chat, the newest
	test.Tap(h.a.composer.switchBack)
	h.waitFor("the remote engine again", func() bool { return h.a.remote != nil })
	if r := h.a.settings.RemoteEngines; len(r) != 1 || r[0].Model != "tiny" || r[0].URL != ts.URL+"/v1" {
		t.Errorf("remembered %+v", r)
	}
	data, _ := os.ReadFile(h.configDir + "/settings.json")
	if strings.Contains(string(data), "secret") || remote.Key(ts.URL+"/v1") != "secret" {
		t.Error("the API key was written to settings.json, or not to the keychain")
	}

	// A server that does not serve the model asked for: named, nothing changes.
	h.a.connectRemote(ts.URL+"/v1", "gpt-9", "")
	h.waitFor("the refusal", func() bool { return strings.Contains(h.dialogText(), `does not serve "gpt-9"`) })
	h.a.closeTopDialog()

	h.a.openModel(dir)
	h.waitFor("the local model", func() bool { return !h.a.loading && h.a.eng != nil })
	if h.a.remote != nil {
		t.Error("loading a local model kept the remote engine")
	}
}

// TestRemoteEngineFaults: a server that fails mid-reply or refuses it leaves
// the reply marked failed with the server's words, the text it sent kept.
func TestRemoteEngineFaults(t *testing.T) {
	keyring.MockInit()
	fail := "refuse"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"big","owned_by":"vllm"}]}`)
			return
		}
		if fail == "refuse" {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"message":"CUDA out of memory"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Half a rep\"}}]}\n\n")
	}))
	defer ts.Close()
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.a.connectRemote(ts.URL, "", "")
	h.waitFor("the remote engine", func() bool { return h.a.remote != nil })
	h.typeAndSend("Hi")
	if m := h.waitReplyDone(); m.Status != "error" || !strings.Contains(m.Summary, "CUDA out of memory") {
		t.Errorf("a refused reply: %s %q", m.Status, m.Summary)
	}
	fail = "cut"
	h.a.newConversation()
	h.typeAndSend("Hi")
	if m := h.waitReplyDone(); m.Status != "error" || m.Content != "Half a rep" || !strings.Contains(m.Summary, "ended before the reply did") {
		t.Errorf("a reply cut off: %s %q %q", m.Status, m.Content, m.Summary)
	}
}

// TestModelsDialogListsTheServersModels: the Models dialog lists the remote
// model in use, marked, and the other models its server serves, each with
// Use; Use switches to it.
func TestModelsDialogListsTheServersModels(t *testing.T) {
	keyring.MockInit()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"qwen-small","owned_by":"sglang"},{"id":"qwen-big","owned_by":"sglang"}]}`)
	}))
	defer ts.Close()
	s := testSettings()
	h := newHarness(t, &s, "", "")
	h.a.connectRemote(ts.URL+"/v1", "qwen-small", "")
	h.waitFor("the remote engine", func() bool { return h.a.remote != nil })
	h.a.showLibrary()
	h.waitFor("the server's other model", func() bool { return strings.Contains(h.dialogText(), "qwen-big on "+ts.URL+"/v1 · served there") })
	if text := h.dialogText(); !strings.Contains(text, "qwen-small on "+ts.URL+"/v1 (in use)") {
		t.Errorf("the dialog says:\n%s", text)
	}
	var use *widget.Button
	for _, o := range test.LaidOutObjects(h.a.win.Canvas().Overlays().Top()) {
		if b, ok := o.(*widget.Button); ok && b.Text == "Use" {
			use = b // the last Use: the other model's
		}
	}
	test.Tap(use)
	h.waitFor("the other model", func() bool { return h.a.remote != nil && h.a.remote.client.Model() == "qwen-big" })
}
