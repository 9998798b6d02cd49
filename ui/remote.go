package ui

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"bagel/engine"
	"bagel/hub"
	"bagel/remote"
)

// Remote engines (issue 37): a model served elsewhere — vLLM, SGLang,
// llama-server, LM Studio, Ollama, another Mac's bagel serve — chatted with
// in this window as a local one is: the same chats, versions, regenerate,
// export and thinking fold, the figures measured here over the network. The
// client (package remote) streams the engine's own events, so the window
// reads them as it reads the engine's. The addresses and models are kept in
// the settings; an API key in the system keychain (remote.SaveKey; where
// there is none, for the session only, and the app says so), never in the
// settings.

// RemoteEngine is a remote model the settings remember.
type RemoteEngine struct {
	URL   string `json:"url"`
	Model string `json:"model"`
}

// remoteModel is the remote model in use, with what the server said of
// itself when it was reached.
type remoteModel struct {
	client *remote.Client
	url    string
	server string        // who serves it: the model list's owned_by, the Server header
	rtt    time.Duration // the model list's round trip
}

// generator streams replies: the events of the local engine or a remote one.
type generator interface {
	Generate(ctx context.Context, req engine.Request) <-chan engine.Event
}

// replyModel is what a reply records of the model that writes it: a local
// model's name, or a remote one's with its server (the chat remembers the
// engine each reply came from).
func (a *App) replyModel() string {
	if a.remote != nil {
		return a.remote.client.Model() + " on " + a.remote.client.Host()
	}
	return a.modelName()
}

// switchTo returns what switches to the model a reply recorded (replyModel's
// "MODEL on HOST" for a remembered remote engine, a recent local model's
// name), or nil when the app does not know where it is.
func (a *App) switchTo(model string) func() {
	for _, r := range a.settings.RemoteEngines {
		if c, err := remote.New(r.URL, "", r.Model); err == nil && r.Model+" on "+c.Host() == model {
			return func() { a.connectRemote(r.URL, r.Model, "") }
		}
	}
	for _, dir := range a.settings.Recent {
		if hub.DisplayName(dir) == model {
			return func() { a.openModel(dir) }
		}
	}
	return nil
}

// ready reports a model to chat with, local or remote.
func (a *App) ready() bool { return a.eng != nil || a.remote != nil }

// generator is the model in use, with its backend's name and context length
// (0: a remote one's, not known here).
func (a *App) generator() (generator, string, int) {
	if a.remote != nil {
		return a.remote.client, "remote: " + a.remote.client.Host(), 0
	}
	return a.eng, a.eng.BackendName, a.eng.ContextLength()
}

// leaveRemote stops using the remote model (its reply stopped, kept).
func (a *App) leaveRemote() {
	if a.remote == nil {
		return
	}
	a.cancelReplies()
	a.remote = nil
}

// useRemote makes c (at url) the model the chats use: a local model is
// unloaded first (its reply stopped and kept, the Local server stopped).
func (a *App) useRemote(c *remote.Client, url, server string, rtt time.Duration) {
	if a.loading {
		a.showMessage("A model is loading", "Wait for it to finish, then choose the remote engine again.")
		return
	}
	gens := a.cancelReplies()
	if old := a.eng; old != nil {
		a.eng, a.modelDir, a.batch = nil, "", nil
		serverDone := a.stopServer()
		a.goSafe("unloading the model", func() {
			for _, g := range gens {
				<-g.done
			}
			serverDone()
			old.Close()
		})
	}
	a.remote = &remoteModel{client: c, url: url, server: server, rtt: rtt}
	a.settings.LastModel = ""
	entry := RemoteEngine{URL: url, Model: c.Model()}
	a.settings.RemoteEngines = append([]RemoteEngine{entry}, slices.DeleteFunc(a.settings.RemoteEngines, func(r RemoteEngine) bool { return r == entry })...)
	a.saveSettings()
	a.bar.lastReply = ""
	a.bar.refresh()
	a.composer.refresh()
	a.chat.refreshEmpty()
	a.win.SetMainMenu(a.mainMenu())
	a.perf.showModel("remote: "+c.Host(), 0, engine.Memory{}, a.remote.describe())
}

// describe says what the remote engine is, for the performance panel.
func (r *remoteModel) describe() string {
	s := "ready · figures measured at the client, over the network"
	if r.server != "" {
		s += " · served by " + r.server
	}
	if r.rtt > 0 {
		s += fmt.Sprintf(" · round trip %.1f ms", float64(r.rtt.Microseconds())/1000)
	}
	if strings.HasPrefix(r.url, "http://") {
		s += " · unencrypted (http, a private address)"
	}
	return s
}

// remoteKey is the API key for the server at url: one given this session,
// else the keychain's, else $BAGEL_API_KEY ("" : none).
func (a *App) remoteKey(url string) string {
	if k := a.remoteKeys[url]; k != "" {
		return k // the keychain is not asked then
	}
	return cmp.Or(remote.Key(url), os.Getenv("BAGEL_API_KEY"))
}

// connectRemote checks the server (its model list) off the UI thread and
// then uses model on it (the server's first when ""), or says why not.
func (a *App) connectRemote(url, model, key string) {
	given := key != ""
	if key == "" {
		key = a.remoteKey(url)
	}
	c, err := remote.New(url, key, model)
	if err != nil {
		a.showError("This remote engine cannot be used", err)
		return
	}
	a.bar.showBusy("Connecting to "+c.Host()+"…", -1)
	a.goSafe("connecting to a remote engine", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		start := time.Now()
		models, err := c.Models(ctx)
		rtt := time.Since(start)
		server := ""
		if err == nil {
			var ids []string
			for _, m := range models {
				ids = append(ids, m.ID)
				if (m.ID == model || model == "" && server == "") && m.OwnedBy != "" {
					server = m.OwnedBy
				}
			}
			if h := c.ServerHeader(); h != "" && server == "" {
				server = h
			} else if h != "" && h != server {
				server += " (" + h + ")"
			}
			switch {
			case len(ids) == 0:
				err = fmt.Errorf("the server %s lists no models", c.Host())
			case model == "":
				c, err = remote.New(url, key, ids[0])
			case !slices.Contains(ids, model):
				err = fmt.Errorf("the server %s does not serve %q; it serves %s", c.Host(), model, strings.Join(ids, ", "))
			}
		}
		a.do(func() {
			a.bar.refresh()
			if err != nil {
				a.showError("The remote engine cannot be used", err)
				return
			}
			a.useRemote(c, url, server, rtt)
			if given {
				a.remoteKeys[url] = key
				if err := remote.SaveKey(url, key); err != nil {
					a.showMessage("The API key is kept until Bagel quits", err.Error())
				}
			}
		})
	})
}

// showAddRemote asks for a remote engine: its address, the model (blank:
// the server's first) and an API key (optional, kept for this session).
func (a *App) showAddRemote() {
	url := widget.NewEntry()
	url.SetPlaceHolder("http://192.168.1.20:8000/v1")
	model := widget.NewEntry()
	model.SetPlaceHolder("blank: the server's first model")
	key := widget.NewPasswordEntry()
	key.SetPlaceHolder("optional; kept in the system keychain")
	items := []*widget.FormItem{widget.NewFormItem("Address", url), widget.NewFormItem("Model", model), widget.NewFormItem("API key", key)}
	d := dialog.NewForm("Add remote engine", "Connect", "Cancel", items, func(ok bool) {
		if ok {
			a.connectRemote(strings.TrimSpace(url.Text), strings.TrimSpace(model.Text), key.Text)
		}
	}, a.win)
	d.Resize(fyne.NewSize(560, 260))
	a.showDialog(d, nil)
	a.win.Canvas().Focus(url)
}

// remoteRows are the Models dialog's remote engines: each model used, with
// Use and Forget, then (once each server answers) the other models it
// serves, with Use; and Add remote engine….
func (l *library) remoteRows() fyne.CanvasObject {
	a := l.a
	box := container.NewVBox()
	listed := map[string][]string{} // the models listed, by server
	var servers []string
	for _, r := range a.settings.RemoteEngines {
		if listed[r.URL] == nil {
			servers = append(servers, r.URL)
		}
		listed[r.URL] = append(listed[r.URL], r.Model)
		name := r.Model + " on " + r.URL
		if cur := a.remote; cur != nil && cur.url == r.URL && cur.client.Model() == r.Model {
			name += " (in use)"
		}
		label := widget.NewLabel(name)
		label.Truncation = fyne.TextTruncateEllipsis
		use := widget.NewButton("Use", func() {
			l.dlg.Hide()
			a.connectRemote(r.URL, r.Model, "")
		})
		var row *fyne.Container
		forget := widget.NewButton("Forget", func() {
			a.settings.RemoteEngines = slices.DeleteFunc(a.settings.RemoteEngines, func(x RemoteEngine) bool { return x == r })
			a.saveSettings()
			if !slices.ContainsFunc(a.settings.RemoteEngines, func(x RemoteEngine) bool { return x.URL == r.URL }) {
				delete(a.remoteKeys, r.URL)
				if err := remote.ForgetKey(r.URL); err != nil {
					a.showError("The API key could not be removed from the keychain", err)
				}
			}
			box.Remove(row)
		})
		row = container.NewBorder(nil, nil, nil, container.NewHBox(use, forget), label)
		box.Add(row)
	}
	for _, url := range servers {
		l.otherRemoteModels(box, url, listed[url])
	}
	add := widget.NewButton("Add remote engine…", func() {
		l.dlg.Hide()
		a.showAddRemote()
	})
	return container.NewVBox(widget.NewLabelWithStyle("Remote engines", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		box, container.NewHBox(add))
}

// otherRemoteModels asks the server at url for its models, off the UI
// thread, and adds to box a row with Use for each one not in used; a server
// that does not answer gets a line saying why.
func (l *library) otherRemoteModels(box *fyne.Container, url string, used []string) {
	a := l.a
	c, err := remote.New(url, a.remoteKey(url), "")
	if err != nil {
		return
	}
	a.goSafe("listing a remote engine's models", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		models, err := c.Models(ctx)
		a.do(func() {
			if l.closed {
				return
			}
			if err != nil {
				note := widget.NewLabel(c.Host() + " does not answer now: " + err.Error())
				note.Wrapping, note.Importance = fyne.TextWrapWord, widget.LowImportance
				box.Add(note)
				return
			}
			for _, m := range models {
				if slices.Contains(used, m.ID) {
					continue
				}
				label := widget.NewLabel(m.ID + " on " + url + " · served there, not used yet")
				label.Truncation = fyne.TextTruncateEllipsis
				use := widget.NewButton("Use", func() {
					l.dlg.Hide()
					a.connectRemote(url, m.ID, "")
				})
				box.Add(container.NewBorder(nil, nil, nil, use, label))
			}
		})
	})
}
