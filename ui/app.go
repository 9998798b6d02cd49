// Package ui is Bagel's window: a list of chats, the conversation with its
// streaming Markdown replies, a composer, the live performance panel, the model
// bar (drop / open / recent / unload, with a load progress bar) and settings.
// It talks to the engine only (never to qwen, ops or a backend) and keeps chats
// in a store.Store.
//
// Threads: every widget is touched on the Fyne thread. The engine loads and
// generates on goroutines of its own; they hand results back through App.do
// (fyne.Do in the app), so the window never waits for the engine.
package ui

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"bagel/engine"
	"bagel/store"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"github.com/adrg/xdg"
)

// appName names the config and data folders.
const appName = "bagel"

// Options configure New. The zero value is the real app.
type Options struct {
	ConfigDir string // settings.json lives here; "": $XDG_CONFIG_HOME/bagel
	DataDir   string // chats.db lives here; "": $XDG_DATA_HOME/bagel
	// RunOnMain runs f on the Fyne thread without waiting; nil means fyne.Do.
	// Tests pass a queue they drain on the test goroutine, so widgets are only
	// ever touched by one goroutine there too.
	RunOnMain func(f func())
	// TapEvents, when set, stands between the engine and the reader of each
	// reply's events (ctx is the reply's: cancelled when it is stopped). Tests
	// use it to hold a reply mid-stream, so what they check does not depend on
	// how fast the engine is. It must pass every event on and close its
	// channel when events closes.
	TapEvents func(ctx context.Context, events <-chan engine.Event) <-chan engine.Event
	// Recommend lets the empty chat look on the Hub for downloads that fit
	// (recommend.go): the app sets it; tests that do not, stay off the network.
	Recommend bool
	// Model is a model folder to open at Start instead of the last one used
	// (bagel PATH).
	Model string
}

// App is the chat window and everything behind it. Its fields belong to the
// Fyne thread.
type App struct {
	lib     *library         // the Models dialog, while it is open (tests reach it)
	split   *container.Split // the chat list | the chat and the performance panel
	dialogs []dialog.Dialog  // open dialogs, the last on top (dialogs.go)
	// danger marks the open confirmations whose Yes destroys or costs
	// (confirmDanger): Enter answers them no.
	danger map[*dialog.ConfirmDialog]bool
	// restoreOnFailure, set while a model reloads for new model settings, is
	// what the settings were: a failed reload puts them back and loads again.
	restoreOnFailure *Settings
	// draftTimer saves the composer's text once typing pauses (draftChanged).
	draftTimer *time.Timer
	perfPane   fyne.CanvasObject // the performance panel with its padding
	// memoryBudget is engine.DeviceMemory (a test seam: a small machine).
	memoryBudget func(backend string) engine.MemoryBudget
	// recommended are the downloads the empty chat offers (recommend.go),
	// looked for once (recommendStarted) when first needed.
	recommended      []recommendation
	recommendStarted bool   // or not wanted: Options.Recommend off
	loadGen          int    // counts model checks and loads; a cancelled one's answer is dropped
	stopLoad         func() // stops the load in progress (nil when none)
	fyne             fyne.App
	win              fyne.Window
	do               func(func())
	tapEvents        func(context.Context, <-chan engine.Event) <-chan engine.Event // Options.TapEvents
	store            *store.Store
	settings         Settings
	settingsPath     string

	eng      *engine.Engine // nil: no model loaded
	modelDir string
	loading  bool // a model is being validated or loaded
	// gens are the replies being written, by chat (replies.go): one at a
	// time, or several decoding together through batch.
	gens map[int64]*generation
	// batch decodes the chats' replies together when Settings › Replies at
	// once is above 1 (and serves the Local server's when it may), nil
	// otherwise (replies.go).
	batch *engine.Parallel
	// draftImages are the images attached in each chat not on screen (the
	// composer holds the shown chat's), kept with its draft for this run.
	draftImages map[int64][]store.Image
	// encoded keeps the tower's output of each image file for encodedFor,
	// the engine that made it (images.go); read off the UI thread.
	encodedMu  sync.Mutex
	encoded    map[string]*engine.Image
	encodedFor *engine.Engine
	// imageTokenCounts are the prompt tokens of each image file for
	// tokensFor's model (the composer's count, tokencount.go).
	imageTokenCounts map[string]int
	tokensFor        *engine.Engine
	server           localServer  // the Local server (localserver.go)
	remote           *remoteModel // the remote model in use instead of eng (remote.go)
	// remoteKeys are the API keys given this session, by address.
	remoteKeys map[string]string

	convs []store.Conversation // the chat list: every chat, or those chatFilter finds
	// chatFilter is the chat list's search ("" : none).
	chatFilter string
	conv       *store.Conversation // the chat on screen; nil before the first one exists
	msgs       []store.Message     // its messages
	editing    *store.Message      // the user message being edited in the composer
	drafts     map[int64]string    // composer text put aside: chats off screen, the chat being edited

	bar      *modelBar
	chats    *chatList
	chat     *chatView
	composer *composer
	perf     *perfPanel

	settingsForm *settingsForm // the settings dialog last opened (tests fill it in)

	openAtStart   string     // Options.Model
	startupErrors []error    // shown once the window is up
	dbProblem     *dbProblem // the chat database did not open (database.go); nil when it did
	instanceLock  *os.File   // the data folder's lock (instance.go), held while the app runs
	otherInstance string     // the data folder another app holds; "" when this one holds it
	// othersListener takes a second app's requests (instance.go); raised
	// counts the times it brought this window to the front.
	othersListener net.Listener
	raised         int
	// countTimer counts the draft's tokens once typing pauses; countGen
	// drops a count a later one supersedes (tokencount.go).
	countTimer *time.Timer
	countGen   int
}

// New builds the window on fa. The last model used starts loading when the
// window is shown (Start).
func New(fa fyne.App, opt Options) (*App, error) {
	a := &App{fyne: fa, do: opt.RunOnMain, tapEvents: opt.TapEvents, drafts: map[int64]string{}, memoryBudget: engine.DeviceMemory,
		remoteKeys:       map[string]string{},
		openAtStart:      opt.Model,
		recommendStarted: !opt.Recommend}
	if a.do == nil {
		a.do = fyne.Do
	}
	configDir, dataDir := opt.ConfigDir, opt.DataDir
	if configDir == "" {
		configDir = filepath.Join(xdg.ConfigHome, appName)
	}
	if dataDir == "" {
		dataDir = filepath.Join(xdg.DataHome, appName)
	}
	a.settingsPath = filepath.Join(configDir, "settings.json")
	var err error
	if a.settings, err = LoadSettings(a.settingsPath); err != nil {
		a.startupErrors = append(a.startupErrors, err)
	}
	fa.Settings().SetTheme(newReadableTheme(a.settings.TextScale))
	if err := a.settings.applySwitches(); err != nil {
		a.startupErrors = append(a.startupErrors, fmt.Errorf("engine switches: %w", err))
	}
	if lock, held, err := lockDataDir(dataDir); err != nil {
		a.startupErrors = append(a.startupErrors, fmt.Errorf("the data folder's lock: %w", err))
	} else if !held {
		a.otherInstance = dataDir
	} else {
		a.instanceLock = lock
		a.listenForOthers(dataDir)
	}
	if a.store, a.dbProblem, err = openStore(filepath.Join(dataDir, "chats.db")); err != nil {
		return nil, err
	}
	if drafts, err := a.store.Drafts(); err == nil {
		a.drafts = drafts
	} else {
		a.startupErrors = append(a.startupErrors, err)
	}

	a.win = fa.NewWindow("Bagel")
	a.win.SetIcon(fa.Icon())
	a.bar = newModelBar(a)
	a.chats = newChatList(a)
	a.chat = newChatView(a)
	a.composer = newComposer(a)
	a.composer.entry.OnChanged = a.draftChanged
	a.perf = newPerfPanel()

	center := container.NewBorder(nil, a.composer.root, nil, nil, a.chat.root)
	a.perfPane = container.NewPadded(a.perf.root)
	if a.settings.HidePerformance {
		a.perfPane.Hide()
	}
	a.split = container.NewHSplit(a.chats.root, container.NewBorder(nil, nil, nil, a.perfPane, center))
	a.split.Offset = 0.2
	if share := a.settings.ChatListShare; share >= 0.05 && share <= 0.6 {
		a.split.Offset = share
	}
	a.win.SetContent(container.NewBorder(a.bar.root, nil, nil, nil, a.split))
	a.win.SetMainMenu(a.mainMenu())
	a.addShortcuts()
	a.win.SetOnDropped(func(_ fyne.Position, uris []fyne.URI) { a.dropped(uris) })
	a.win.SetOnClosed(a.shutdown)
	a.win.Resize(a.windowSize())

	a.reloadConversations()
	if len(a.convs) > 0 {
		a.selectConversation(a.convs[0].ID)
	} else {
		a.showConversation(nil, nil)
	}
	a.bar.refresh()
	a.composer.refresh()
	a.perf.showModel("", 0, engine.Memory{}, "no model loaded")
	return a, nil
}

// Window is the main window.
func (a *App) Window() fyne.Window { return a.win }

// Start shows what went wrong while starting and reloads the last model.
func (a *App) Start() {
	for _, err := range a.startupErrors {
		a.showError("Settings could not be read", err)
	}
	a.startupErrors = nil
	if a.dbProblem != nil {
		a.showDatabaseProblem()
	}
	if a.otherInstance != "" {
		a.showAlreadyRunning(a.otherInstance)
	}
	a.chat.scroll.ScrollToBottom() // now that the window has its size
	// A second app on the data folder loads nothing: the first, raised, has
	// the model (and was asked to open the one given here). With no model
	// chosen yet, the demo model opens, so that a first reply says something.
	if dir := cmp.Or(a.openAtStart, a.settings.LastModel, demoDir()); dir != "" && a.otherInstance == "" {
		a.openModel(dir)
	}
}

// ShowAndRun shows the window, starts, and runs the app until it quits.
func (a *App) ShowAndRun() {
	a.win.Show()
	a.Start()
	a.fyne.Run()
}

// windowSize is the size the window was left at, when the settings hold a
// sensible one, else 1280×800.
func (a *App) windowSize() fyne.Size {
	w, h := a.settings.WindowWidth, a.settings.WindowHeight
	if w >= 400 && h >= 300 && w <= 16384 && h <= 16384 {
		return fyne.NewSize(w, h)
	}
	return fyne.NewSize(1280, 800)
}

// togglePerformance shows or hides the performance panel (View menu); hidden,
// the window can be half a laptop screen wide.
func (a *App) togglePerformance() {
	a.settings.HidePerformance = !a.settings.HidePerformance
	if a.settings.HidePerformance {
		a.perfPane.Hide()
	} else {
		a.perfPane.Show()
	}
	a.saveSettings()
	a.win.SetMainMenu(a.mainMenu())
}

// shutdown records the window's size and layout, stops a generation (its
// partial reply is saved and marked), unloads the model and closes the chat
// database.
func (a *App) shutdown() {
	if size := a.win.Canvas().Size(); size.Width > 0 && size.Height > 0 {
		a.settings.WindowWidth, a.settings.WindowHeight = size.Width, size.Height
		a.settings.ChatListShare = a.split.Offset
		a.saveSettings()
	}
	for _, g := range a.cancelReplies() {
		<-g.done // the stream goroutine saves the reply and posts, never waits for this thread
	}
	a.stopServer()() // its generation stopped within a step; its handlers only post
	if a.draftTimer != nil {
		a.draftTimer.Stop()
	}
	if a.conv != nil && a.editing == nil && a.store != nil {
		a.saveDraft(a.conv.ID, a.composer.entry.Text)
	}
	if a.eng != nil {
		a.eng.Close()
		a.eng = nil
	}
	if a.store != nil {
		_ = a.store.Close()
		a.store = nil
	}
	if a.dbProblem != nil {
		os.RemoveAll(a.dbProblem.tempDir) // the stand-in's chats were never to be kept
	}
	if a.othersListener != nil {
		a.othersListener.Close()
		a.othersListener = nil
	}
	if a.instanceLock != nil {
		a.instanceLock.Close()
		a.instanceLock = nil
	}
}

// saveSettings writes the settings; a failure is shown, never fatal.
func (a *App) saveSettings() {
	if err := a.settings.Save(a.settingsPath); err != nil {
		a.showError("Settings could not be saved", err)
	}
}
