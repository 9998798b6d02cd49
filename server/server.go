package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"bagel/engine"
)

// Engine is what the server needs of a loaded model (engine.Engine; a test
// stands in for it).
type Engine interface {
	Generate(ctx context.Context, req engine.Request) <-chan engine.Event
	PromptTokens(req engine.Request) ([]int32, error)
	ContextLength() int
	// ToolCallPrefix is how the model's template begins a call of name
	// ("": any), for tool_choice required or named.
	ToolCallPrefix(name string) (string, error)
}

// DefaultPort is Bagel's: none of LM Studio's 1234, Ollama's 11434,
// llama-server's and mlx_lm.server's 8080, Jan's 1337, vLLM's 8000.
const DefaultPort = 8484

// Options configure a server.
type Options struct {
	// Host is the address it listens on ("" : 127.0.0.1). Any other than a
	// loopback address needs an APIKey.
	Host string
	// APIKey, when set, must come with every request (Authorization: Bearer
	// KEY, or x-api-key: KEY).
	APIKey string
	// AllowOrigins are the browser origins allowed to call it (CORS); none by
	// default: a web page cannot reach the model.
	AllowOrigins []string
	// Queue is how many requests may wait behind those generating (0: 16).
	Queue int
	// Parallel is how many requests generate at once (0 or 1: one at a
	// time). Above 1 the engine should step them together
	// (engine.Engine.Parallel), or they only take turns inside it.
	Parallel int
	// MaxBody bounds a request's body in bytes (0: 8 MiB).
	MaxBody int64
	// Log, when set, gets one line per request (never the API key).
	Log func(Entry)
	// Busy, when set, is told how many requests generate (up to Parallel) and wait
	// whenever either changes (the app's server panel).
	Busy func(running, waiting int)
}

// Entry is one request as the log shows it.
type Entry struct {
	Time                                        time.Time
	Endpoint, Client                            string
	Status                                      int
	PromptTokens, ReusedTokens, GeneratedTokens int
	TokensPerSecond                             float64
}

// Server answers the API's requests with one model.
type Server struct {
	eng   Engine
	model string // the id /v1/models lists
	opt   Options
	// jobs are the requests waiting; one worker runs them in order.
	jobs    chan *job
	waiting atomic.Int32
	running atomic.Int32
	stop    chan struct{}
	once    sync.Once
}

// job is one generation the worker runs: start is called with the engine's
// turn; done closes when the handler is through with it.
type job struct {
	run   func()
	done  chan struct{}
	taken atomic.Bool // no longer waiting: its turn came, or the server closed first
}

// take counts j out of the waiting, once: false when it was already.
func (j *job) take(s *Server) bool {
	if !j.taken.CompareAndSwap(false, true) {
		return false
	}
	s.waiting.Add(-1)
	s.busyChanged()
	return true
}

// Check refuses options that would expose the model: a host other than
// loopback without an API key.
func (opt Options) Check() error {
	if h := opt.Host; h != "" && !isLoopback(h) && opt.APIKey == "" {
		return fmt.Errorf("serving on %s (not this machine alone) needs an API key (--api-key or $BAGEL_API_KEY): anyone on the network could use the model", h)
	}
	return nil
}

// New serves eng under the model id model.
func New(eng Engine, model string, opt Options) (*Server, error) {
	if opt.Host == "" {
		opt.Host = "127.0.0.1"
	}
	if opt.Queue <= 0 {
		opt.Queue = 16
	}
	if opt.MaxBody <= 0 {
		opt.MaxBody = 8 << 20
	}
	if err := opt.Check(); err != nil {
		return nil, err
	}
	s := &Server{eng: eng, model: model, opt: opt, jobs: make(chan *job, opt.Queue), stop: make(chan struct{})}
	for range max(1, opt.Parallel) {
		go s.work()
	}
	return s, nil
}

// Busy is how many requests generate and wait now.
func (s *Server) Busy() (running, waiting int) {
	return int(s.running.Load()), int(s.waiting.Load())
}

// busyChanged tells Options.Busy.
func (s *Server) busyChanged() {
	if s.opt.Busy != nil {
		s.opt.Busy(s.Busy())
	}
}

// Close stops the worker; requests waiting get an error, and the ones
// generating are stopped (their clients get what was written).
func (s *Server) Close() { s.once.Do(func() { close(s.stop) }) }

// work runs queued generations one after another; Parallel workers run
// that many at once.
func (s *Server) work() {
	for {
		select {
		case j := <-s.jobs:
			if !j.take(s) {
				continue // its request stopped waiting when the server closed
			}
			j.run()
			<-j.done
		case <-s.stop:
			return
		}
	}
}

// Serve answers the requests ln accepts until ctx ends, then lets the
// replies under way finish (5 s at most).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Close()
		hs.Shutdown(shut)
		return nil
	}
}

// Handler is the server's routes behind its checks.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	mux.HandleFunc("POST /v1/completions", s.completions)
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("POST /v1/messages", s.messages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	mux.HandleFunc("GET /api/version", s.ollamaVersion)
	mux.HandleFunc("GET /api/tags", s.ollamaTags)
	mux.HandleFunc("GET /api/ps", s.ollamaTags)
	mux.HandleFunc("POST /api/show", s.ollamaShow)
	mux.HandleFunc("POST /api/chat", s.ollamaChat)
	mux.HandleFunc("POST /api/generate", s.ollamaGenerate)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { // Ollama clients look here first
		fmt.Fprintln(w, "Bagel is running (OpenAI API under /v1, Anthropic's at /v1/messages, Ollama's under /api)")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no endpoint %s %s on this server (it serves /v1/models, /v1/chat/completions, /v1/completions, /v1/responses, /v1/messages and Ollama's /api)", r.Method, r.URL.Path))
	})
	return s.guard(mux)
}

// guard refuses what the server must not answer: without an API key, a Host
// that is neither localhost nor an address (a DNS-rebinding page: a web
// site whose name the attacker points at 127.0.0.1; with a key the page
// cannot authenticate anyway), a browser's cross-origin request from an origin not
// allowed, a missing or wrong API key; and caps the body.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/messages"):
			w = styledWriter{w, anthropicStyle} // its errors in Anthropic's shape
		case strings.HasPrefix(r.URL.Path, "/api/"):
			w = styledWriter{w, ollamaStyle}
		}
		if s.opt.APIKey == "" && !ownHost(r.Host) {
			apiError(w, http.StatusForbidden, "forbidden_host", fmt.Sprintf("Host %q is not this server's name (requests must name it localhost or by its address)", clip(r.Host)))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			if !allowed(origin, s.opt.AllowOrigins) {
				apiError(w, http.StatusForbidden, "forbidden_origin", fmt.Sprintf("requests from web pages (origin %q) are refused; allow an origin to let one in", clip(origin)))
				return
			}
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, x-api-key")
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if s.opt.APIKey != "" {
			key := r.Header.Get("x-api-key")
			if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				key = auth
			}
			if key != s.opt.APIKey {
				apiError(w, http.StatusUnauthorized, "invalid_api_key", "a missing or wrong API key (send Authorization: Bearer KEY)")
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opt.MaxBody)
		next.ServeHTTP(w, r)
	})
}

// generate waits for the engine's turn, runs g and has reply write its
// answer (id: the response's), then logs it. A full queue or a client gone
// first is answered by enqueue.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, start time.Time, g *generation, id string,
	reply func(a *answer, events <-chan engine.Event) outcome) {
	if len(g.images) > 0 { // a broken image is refused before the request waits for its turn
		images, err := s.encodeImages(r.Context(), g.images)
		if err != nil {
			he := err.(*httpError)
			apiError(w, he.status, he.code, he.text)
			return
		}
		g.req.Images = images
	}
	release, ok := s.enqueue(w, r)
	if !ok {
		return
	}
	defer release()
	s.running.Add(1)
	s.busyChanged()
	defer func() { s.running.Add(-1); s.busyChanged() }()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() { // Close stops a generation under way
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	events := s.eng.Generate(ctx, g.req)
	a := &answer{id: id, created: start.Unix(), model: s.model, kind: g.endpointKind,
		stop: &stopper{stops: g.stops}, cancel: cancel, tools: g.tools, prefix: g.req.ReplyPrefix, logprobs: g.req.Logprobs}
	s.logRequest(r, start, reply(a, events))
}

// enqueue waits for the engine's turn, in order; false (the answer sent)
// when the queue is full or the client went away first. release must be
// called once the generation is read.
func (s *Server) enqueue(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	j := &job{done: make(chan struct{})}
	turn := make(chan struct{})
	j.run = func() { close(turn) }
	if s.waiting.Add(1) > int32(s.opt.Queue) {
		s.waiting.Add(-1)
		w.Header().Set("Retry-After", "1")
		apiError(w, http.StatusTooManyRequests, "queue_full", fmt.Sprintf("%d requests are already waiting for the model; try again shortly", s.opt.Queue))
		return nil, false
	}
	select {
	case s.jobs <- j:
		s.busyChanged()
	default: // (the channel holds Queue: waiting counts it)
		s.waiting.Add(-1)
		w.Header().Set("Retry-After", "1")
		apiError(w, http.StatusTooManyRequests, "queue_full", "the queue is full; try again shortly")
		return nil, false
	}
	select {
	case <-turn:
		return func() { close(j.done) }, true
	case <-r.Context().Done():
		if !j.take(s) { // its turn came as the client left: it passes at once
			go func() { <-turn; close(j.done) }()
		}
		return nil, false
	case <-s.stop:
		if !j.take(s) { // the worker took it as the server closed
			go func() { <-turn; close(j.done) }()
		}
		apiError(w, http.StatusServiceUnavailable, "shutting_down", "the server is stopping")
		return nil, false
	}
}

// apiError writes an error in OpenAI's shape, or Anthropic's for its API.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if sw, ok := w.(styledWriter); ok {
		switch sw.style {
		case anthropicStyle:
			json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": anthErrorType(status), "message": msg}})
			return
		case ollamaStyle:
			json.NewEncoder(w).Encode(map[string]string{"error": msg})
			return
		}
	}
	kind := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		kind = "authentication_error"
	case status == http.StatusTooManyRequests:
		kind = "rate_limit_error"
	case status >= 500:
		kind = "server_error"
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": kind, "code": code, "param": nil}})
}

// apiStyle is the API a response belongs to, which shapes its errors.
type apiStyle int

const (
	openAIStyle apiStyle = iota
	anthropicStyle
	ollamaStyle
)

// styledWriter marks a response of the Anthropic or Ollama API (apiError).
type styledWriter struct {
	http.ResponseWriter
	style apiStyle
}

func (w styledWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w styledWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// bodyError words a request body's decoding error.
func bodyError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		apiError(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit))
		return
	}
	apiError(w, http.StatusBadRequest, "invalid_json", "the request body is not the JSON expected: "+jsonText(err))
}

func isLoopback(host string) bool {
	h := strings.Trim(host, "[]")
	if isLoopbackName(h) {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func isLoopbackName(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ownHost reports a request's Host header naming localhost or an address
// (never a domain name a DNS-rebinding page could own).
func ownHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.Trim(host, "[]")
	return isLoopbackName(host) || net.ParseIP(host) != nil
}

func allowed(origin string, list []string) bool {
	for _, o := range list {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) > 100 {
		return s[:97] + "..."
	}
	return s
}
