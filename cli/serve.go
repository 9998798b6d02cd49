package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"bagel/engine"
	"bagel/server"
)

// runServe is `bagel serve`: the OpenAI-compatible API over one model until
// Ctrl-C. It prints the address once it listens ("serving ID at
// http://HOST:PORT/v1"), and one line a request to stderr.
func runServe(args []string, out, errOut io.Writer) error {
	fs := newFlags("serve", errOut)
	dir := fs.modelDir("model folder (MLX layout)")
	host := fs.String("host", "127.0.0.1", "address to listen on (another than this machine's loopback needs --api-key)")
	port := fs.Int("port", server.DefaultPort, "port to listen on (0: any free one, printed)")
	key := fs.String("api-key", "", "the key clients must send (Authorization: Bearer KEY); default: $BAGEL_API_KEY, or none on loopback")
	name := fs.String("name", "", "the model id clients ask for (default: ORG/NAME from -m, or the folder's name)")
	origins := fs.String("allow-origin", "", "comma-separated web origins allowed to call the server from a browser (none by default)")
	queue := fs.Int("queue", 16, "requests that may wait behind those generating (more get 429)")
	parallel := fs.Int("parallel", 1, fmt.Sprintf("requests generated together, 1 to %d: above 1 their decode steps are batched (each reply in a cache of --parallel-context tokens; with --switch speculative-ngram=on their guesses ride in the batched steps)", engine.MaxBatch))
	parallelCtx := fs.Int("parallel-context", 0, "with --parallel, each reply's context in tokens (0: the model's context length)")
	backendName := fs.backend()
	fs.engineSwitches()
	ctxLen := fs.contextLength()
	chunk := fs.prefillChunk()
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: serve takes flags only", strings.Join(fs.Args(), " "))
	}
	if err := need(
		check{*port >= 0 && *port <= 65535, "port", *port, "want 0 (any free port) to 65535"},
		check{*queue >= 1 && *queue <= 1024, "queue", *queue, "want 1 to 1024"},
	); err != nil {
		return err
	}
	if *key == "" {
		*key = os.Getenv("BAGEL_API_KEY")
	}
	var allow []string
	for _, o := range strings.Split(*origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			allow = append(allow, o)
		}
	}
	id := *name
	if id == "" {
		id = modelID(fs.modelArg, *dir)
	}
	if *parallel < 1 || *parallel > engine.MaxBatch {
		return fmt.Errorf("--parallel %d: want 1 to %d", *parallel, engine.MaxBatch)
	}
	if *parallelCtx < 0 {
		return fmt.Errorf("--parallel-context %d: want 0 (the model's) or a length in tokens", *parallelCtx)
	}
	// Refuse a bad --host or a missing key before loading gigabytes.
	if err := (server.Options{Host: *host, APIKey: *key}).Check(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("cannot listen on %s port %d: %w", *host, *port, err)
	}
	defer ln.Close()
	e, err := engine.Load(*dir, engine.Options{Backend: *backendName, ContextLength: *ctxLen, PrefillChunk: *chunk, Replies: *parallel})
	if err != nil {
		return err
	}
	defer e.Close()
	var eng server.Engine = e
	if *parallel > 1 {
		p, err := e.Parallel(*parallel, *parallelCtx)
		if err != nil {
			return fmt.Errorf("--parallel %d: %w", *parallel, err)
		}
		eng = p
	}
	s, err := server.New(eng, id, server.Options{Host: *host, APIKey: *key, AllowOrigins: allow, Queue: *queue, Parallel: *parallel,
		Log: func(en server.Entry) {
			fmt.Fprintf(errOut, "%s %s %s %d prompt %d (reused %d) reply %d %.1f tok/s\n", en.Time.Format("15:04:05"), en.Client,
				en.Endpoint, en.Status, en.PromptTokens, en.ReusedTokens, en.GeneratedTokens, en.TokensPerSecond)
		}})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(out, "serving %s at http://%s/v1 (%s, context %d tokens", id, ln.Addr(), e.BackendName, eng.ContextLength())
	if *parallel > 1 {
		fmt.Fprintf(out, ", %d replies at once", *parallel)
		if e.TiledGEMV() {
			fmt.Fprint(out, ", their steps' GEMVs on the matrix units")
		}
	}
	fmt.Fprintln(out, "); Ctrl-C stops")
	return s.Serve(ctx, ln)
}

// modelID names the model for clients: ORG/NAME when -m was a Hub name or a
// folder of the Hub cache (…/models--ORG--NAME/snapshots/REV), else the
// folder's name.
func modelID(arg, dir string) string {
	if dir != arg { // resolved from the Hub cache
		repo, _, _ := strings.Cut(arg, "@")
		return repo
	}
	for _, part := range strings.Split(filepath.ToSlash(filepath.Clean(dir)), "/") {
		if rest, ok := strings.CutPrefix(part, "models--"); ok {
			if org, nm, ok := strings.Cut(rest, "--"); ok {
				return org + "/" + nm
			}
		}
	}
	return filepath.Base(filepath.Clean(dir))
}
