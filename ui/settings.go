package ui

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"bagel/engine"
	"bagel/internal/jsonmsg"
	"bagel/internal/regular"
	"bagel/server"
)

// Settings are what the user chose, saved as JSON in the xdg config dir
// (settings.json). Sampling, max tokens and thinking apply to the next reply;
// context length and backend to the next model load; switches at once.
type Settings struct {
	// Sampling is the engine's sampler configuration, its fields (and JSON
	// names) promoted into the settings.
	engine.Sampling
	// Seed shadows Sampling.Seed: a negative seed asks for a new random one
	// for every reply (sampling draws it).
	Seed int64 `json:"seed"`

	MaxTokens   int `json:"max_tokens"`   // 0: until a stop token or a full context
	DraftLength int `json:"draft_length"` // speculative guesses per step; 0: the engine's default
	// DraftTreeWidth, 2 or more, guesses draft trees of that many branches
	// (greedy replies; engine.Request.TreeWidth); 0 or 1: one line of guesses.
	DraftTreeWidth int  `json:"draft_tree_width,omitempty"`
	ContextLength  int  `json:"context_length"` // 0: the model's default (engine.DefaultContextLength at most)
	Thinking       bool `json:"thinking"`
	// ManualTitles keeps a new chat's title to its first words; off (the
	// default), the model names the chat after its first reply (titles.go).
	ManualTitles bool   `json:"manual_titles,omitempty"`
	Backend      string `json:"backend"` // one of engine.BackendNames
	// PromptCacheMB is the memory for the conversations whose state the
	// engine keeps between turns (prompt reuse), least recently used evicted;
	// 0: the engine's default.
	PromptCacheMB int `json:"prompt_cache_mb,omitempty"`
	// PrefillChunk is how many prompt tokens one step reads, from the next
	// reply on; 0: the engine's default.
	PrefillChunk int `json:"prefill_chunk,omitempty"`

	// Switches holds the engine switches the user set; the others keep their
	// defaults (and environment overrides).
	Switches map[string]bool `json:"switches,omitempty"`

	LastModel string   `json:"last_model,omitempty"` // reloaded at start
	Recent    []string `json:"recent_models,omitempty"`
	// PendingDownload is the ORG/NAME[@REV] of a download paused or cut short
	// by a failure or the app closing: the Models dialog offers to resume it
	// (its partial files stay in the Hub cache).
	PendingDownload string `json:"pending_download,omitempty"`

	// The window as it was left: its size, the chat list's share of the
	// width, and whether the performance panel is hidden.
	WindowWidth     float32 `json:"window_width,omitempty"`
	WindowHeight    float32 `json:"window_height,omitempty"`
	ChatListShare   float64 `json:"chat_list_share,omitempty"`
	HidePerformance bool    `json:"hide_performance,omitempty"`
	// TextScale sizes the text (View › Bigger / Smaller text); 0 means 1.
	TextScale float32 `json:"text_scale,omitempty"`

	// RemoteEngines are the remote models used, the last first (remote.go);
	// their API keys are never written here.
	RemoteEngines []RemoteEngine `json:"remote_engines,omitempty"`

	// ServerOn serves the loaded model to other apps (the Local server,
	// localserver.go) on 127.0.0.1:ServerPort (0: server.DefaultPort).
	ServerOn   bool `json:"server_on,omitempty"`
	ServerPort int  `json:"server_port,omitempty"`
	// ServerParallel is how many of the other apps' requests the server
	// generates at once (0 or 1: one at a time; 2 to 16: their decode steps
	// batched, engine.Parallel, each in a cache of the model's context).
	ServerParallel int `json:"server_parallel,omitempty"`
	// ChatParallel is how many chats may answer at once (0 or 1: one at a
	// time; 2 to 4: their replies decoded together, replies.go).
	ChatParallel int `json:"chat_parallel,omitempty"`

	// Models remembers, by model folder, the settings last saved while that
	// model was loaded; loading it brings them back.
	Models map[string]ModelSettings `json:"models,omitempty"`
}

// ModelSettings are the settings a model folder remembers: how its replies
// are sampled and how large its context is.
type ModelSettings struct {
	engine.Sampling
	Seed          int64 `json:"seed"`
	MaxTokens     int   `json:"max_tokens"`
	ContextLength int   `json:"context_length"`
	Thinking      bool  `json:"thinking"`
	DraftLength   int   `json:"draft_length"`
	// DraftTreeWidth as Settings.DraftTreeWidth.
	DraftTreeWidth int `json:"draft_tree_width,omitempty"`
}

// rememberFor keeps the model settings as dir's.
func (s *Settings) rememberFor(dir string) {
	if dir == "" {
		return
	}
	if s.Models == nil {
		s.Models = map[string]ModelSettings{}
	}
	s.Models[dir] = ModelSettings{Sampling: s.Sampling, Seed: s.Seed, MaxTokens: s.MaxTokens,
		ContextLength: s.ContextLength, Thinking: s.Thinking, DraftLength: s.DraftLength, DraftTreeWidth: s.DraftTreeWidth}
}

// seedDemo gives the demo model (folder dir) its own settings the first
// time: greedy, thinking off, replies of up to 400 tokens in its 4,096-token
// context. A 5 MB model recites its books well only greedily (sampled at the
// chat default of 0.6 it mixes entries mid-sentence), and it was trained with
// the template's empty thinking block. Changed settings stay the user's.
func (s *Settings) seedDemo(dir string) {
	if _, ok := s.Models[dir]; ok {
		return
	}
	if s.Models == nil {
		s.Models = map[string]ModelSettings{}
	}
	s.Models[dir] = ModelSettings{Sampling: engine.Sampling{Temperature: 0, TopP: 1, RepetitionPenalty: 1},
		Seed: s.Seed, MaxTokens: 400, ContextLength: 4096, DraftLength: s.DraftLength, DraftTreeWidth: s.DraftTreeWidth}
}

// recallFor puts back what dir remembers, when it remembers something valid;
// it reports whether it did.
func (s *Settings) recallFor(dir string) bool {
	m, ok := s.Models[dir]
	if !ok {
		return false
	}
	next := *s
	next.Sampling, next.Seed, next.MaxTokens = m.Sampling, m.Seed, m.MaxTokens
	next.ContextLength, next.Thinking, next.DraftLength, next.DraftTreeWidth = m.ContextLength, m.Thinking, m.DraftLength, m.DraftTreeWidth
	if next.Validate() != nil {
		return false // an entry edited by hand into nonsense is passed over
	}
	*s = next
	return true
}

// maxPromptCacheMB bounds the prompt cache setting (1 TiB: a typo, not a wish).
const maxPromptCacheMB = 1 << 20

// maxRecent bounds the recent-models menu.
const maxRecent = 8

// DefaultSettings have thinking on and the engine's recommended sampling for
// it.
func DefaultSettings() Settings {
	return Settings{
		Sampling:  engine.RecommendedSampling(true),
		Seed:      -1,
		MaxTokens: 4096,
		Thinking:  true,
		Backend:   "auto",
	}
}

// Validate names the first setting outside its range; the sampling ranges are
// the engine's.
func (s Settings) Validate() error {
	if err := s.Sampling.Validate(); err != nil {
		return err
	}
	switch {
	case s.MaxTokens < 0:
		return fmt.Errorf("max tokens must be ≥ 0, got %d", s.MaxTokens)
	case s.ContextLength < 0:
		return fmt.Errorf("context length must be ≥ 0, got %d", s.ContextLength)
	case s.TextScale != 0 && (s.TextScale < minTextScale-0.001 || s.TextScale > maxTextScale+0.001):
		return fmt.Errorf("text scale must be %g to %g, got %g", minTextScale, maxTextScale, s.TextScale)
	case s.PromptCacheMB < 0 || s.PromptCacheMB > maxPromptCacheMB:
		return fmt.Errorf("prompt cache must be 0 (the default, %d MB) to %d MB, got %d", engine.DefaultPromptCacheBytes>>20, maxPromptCacheMB, s.PromptCacheMB)
	case s.PrefillChunk < 0 || s.PrefillChunk > engine.MaxPrefillChunk:
		return fmt.Errorf("prompt chunk must be 0 (the default, %d) to %d tokens, got %d", engine.DefaultPrefillChunk, engine.MaxPrefillChunk, s.PrefillChunk)
	case s.DraftLength < 0 || s.DraftLength > engine.MaxDraftLength:
		return fmt.Errorf("draft length must be 0 (the default, %d) to %d, got %d", engine.DefaultDraftLength, engine.MaxDraftLength, s.DraftLength)
	case s.DraftTreeWidth < 0 || s.DraftTreeWidth > engine.MaxTreeWidth:
		return fmt.Errorf("draft tree width must be 0 (one line of guesses) to %d, got %d", engine.MaxTreeWidth, s.DraftTreeWidth)
	case s.ServerPort < 0 || s.ServerPort > 65535:
		return fmt.Errorf("server port must be 0 (the default, %d) to 65535, got %d", server.DefaultPort, s.ServerPort)
	case s.ServerParallel < 0 || s.ServerParallel > engine.MaxBatch:
		return fmt.Errorf("server replies at once must be 0 or 1 (one at a time) to %d, got %d", engine.MaxBatch, s.ServerParallel)
	case s.ChatParallel < 0 || s.ChatParallel > maxChatParallel:
		return fmt.Errorf("chats answering at once must be 0 or 1 (one at a time) to %d, got %d", maxChatParallel, s.ChatParallel)
	case !slices.Contains(engine.BackendNames, s.Backend):
		return fmt.Errorf("unknown backend %q (want one of %v)", s.Backend, engine.BackendNames)
	}
	return nil
}

// serverPort is the Local server's port.
func (s Settings) serverPort() int { return cmp.Or(s.ServerPort, server.DefaultPort) }

// sampling is the engine's view of the settings for one reply; a negative
// seed draws a new one.
func (s Settings) sampling() engine.Sampling {
	smp := s.Sampling
	smp.Seed = uint64(s.Seed)
	if s.Seed < 0 {
		smp.Seed = rand.Uint64()
	}
	return smp
}

// addRecent puts dir first in the recent models.
func (s *Settings) addRecent(dir string) {
	s.Recent = slices.DeleteFunc(s.Recent, func(d string) bool { return d == dir })
	s.Recent = append([]string{dir}, s.Recent...)
	if len(s.Recent) > maxRecent {
		s.Recent = s.Recent[:maxRecent]
	}
}

// LoadSettings reads path; a missing file gives the defaults. Fields the file
// lacks keep their defaults, so an older file still loads. A field that is
// broken (of the wrong kind, or outside its range) keeps its default while
// every other field is kept: one bad value ("top_p": 5, "max_tokens": "lots")
// must not cost the recent models, the per-model settings and a pending
// download. A file that is not a JSON object gives the defaults. Either way
// the file as it was is first copied to path + ".bak" (the app saves its
// settings over path when it closes), and the error says what was set aside
// and where the copy is; it is a warning: the settings returned are usable.
// maxSettingsBytes bounds the settings file (the app's own writes some
// kilobytes: recent models, each model's settings).
const maxSettingsBytes = 16 << 20

func LoadSettings(path string) (Settings, error) {
	s := DefaultSettings()
	// As a regular file only (a named pipe there would hold the app's start
	// forever), of at most maxSettingsBytes.
	data, err := regular.ReadFile(path, maxSettingsBytes)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("settings: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return s, setAside(path, data, []string{jsonmsg.Explain(err, data).Error()}, "using the defaults")
	}
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		one, _ := json.Marshal(map[string]json.RawMessage{key: fields[key]})
		next := s // each field on the settings so far, which are valid
		if err := json.Unmarshal(one, &next); err != nil {
			problems = append(problems, jsonmsg.Explain(err, one).Error())
			continue
		}
		if err := next.Validate(); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		s = next
	}
	if len(problems) > 0 {
		return s, setAside(path, data, problems, "those settings are back to their defaults, the others kept")
	}
	return s, nil
}

// setAside copies a settings file that could not be read whole to path +
// ".bak" and returns the warning that says so.
func setAside(path string, data []byte, problems []string, what string) error {
	kept := "the file as it was is kept in " + filepath.Base(path) + ".bak"
	if err := os.WriteFile(path+".bak", data, 0o644); err != nil {
		kept = fmt.Sprintf("and the copy to %s.bak failed (%v)", filepath.Base(path), err)
	}
	return fmt.Errorf("settings %s: %s: %s; %s", path, strings.Join(problems, "; "), what, kept)
}

// Save writes the settings atomically (a temporary file renamed over the old
// one), so a crash never leaves half a file.
func (s Settings) Save(path string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	return nil
}

// applySwitches hands the saved switch values to the engine, and unsets the
// ones not saved (after Reset to defaults); switches this build no longer
// registers are ignored.
func (s Settings) applySwitches() error {
	var errs []error
	for _, sw := range engine.Switches() {
		if on, ok := s.Switches[sw.Name]; ok {
			errs = append(errs, engine.SetSwitch(sw.Name, on))
		} else {
			engine.UnsetSwitch(sw.Name)
		}
	}
	return errors.Join(errs...)
}
