package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"bagel/engine"
	"bagel/hub"
)

// runPull downloads ORG/NAME[@REV] into the Hub cache, resuming what an earlier
// pull left, and prints the folder to load. A repository Bagel cannot run is
// refused before anything is fetched, unless --any.
func runPull(args []string, out, errOut io.Writer) error {
	fs := newFlags("pull", errOut)
	fs.args = "ORG/NAME[@REVISION]"
	anyRepo := fs.Bool("any", false, "download the repository even when it is not a model Bagel runs")
	mtpFrom := fs.String("mtp-from", "", "also fetch mtp.safetensors, the multi-token-prediction head, from this repository (ORG/NAME[@REVISION], the model's original release) and put it beside the model, for --speculative mtp")
	if err := fs.parse(args); err != nil {
		return err
	}
	name := fs.Arg(0)
	if fs.NArg() > 1 { // flags after the name: bagel pull ORG/NAME --mtp-from …
		if err := fs.parse(fs.Args()[1:]); err != nil {
			return err
		}
		if fs.NArg() != 0 {
			return fmt.Errorf("want one model name: bagel pull ORG/NAME[@REVISION]")
		}
	} else if fs.NArg() != 1 {
		return fmt.Errorf("want one model name: bagel pull ORG/NAME[@REVISION]")
	}
	repo, rev, _ := strings.Cut(name, "@")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var mu sync.Mutex
	last := time.Time{}
	start := time.Now()
	// Ctrl-C keeps what was fetched, this run's and an earlier one's: the
	// same command resumes it (as the app's Pause does).
	opt := hub.DownloadOptions{Revision: rev, Runs: engine.SupportedModelType, Paused: func() bool { return true }}
	if *anyRepo {
		opt.Runs = nil
	} else {
		// What it will take, before anything is fetched (the window asks
		// first when it does not fit; here the command was explicit).
		opt.Check = func(config []byte, n int64) error {
			if mem, err := engine.EstimateConfig(config, n, 0); err == nil {
				verdict, _ := engine.DeviceMemory("auto").Verdict(mem)
				fmt.Fprintf(errOut, "pull %s: %.2f GB of files; at %d tokens of context it %s\n", repo, float64(n)/1e9, engine.DefaultContextLength, verdict)
			}
			return nil
		}
	}
	opt.Progress = func(p hub.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.Sub(last) > 250*time.Millisecond || p.Done == p.Total {
			last = now
			rate := float64(p.Done) / max(now.Sub(start).Seconds(), 1e-3)
			fmt.Fprintf(errOut, "\rpull %s: %6.2f / %.2f GB  %6.1f MB/s", repo, float64(p.Done)/1e9, float64(p.Total)/1e9, rate/1e6)
		}
	}
	dir, err := hub.New().Download(ctx, hub.CacheDir(), repo, opt)
	fmt.Fprintln(errOut)
	if ctx.Err() != nil {
		fmt.Fprintf(errOut, "pull %s: stopped; what was fetched is kept in %s, and `bagel pull %s` resumes it\n", repo, hub.CacheDir(), name)
		return errInterrupted
	}
	if err != nil {
		return err
	}
	if err := pullMTP(ctx, dir, repo, *mtpFrom, errOut); err != nil {
		return err
	}
	fmt.Fprintln(out, dir)
	return nil
}

// pullMTP fetches the MTP head from the repository from (none: it only says
// when the model's config declares a head its files lack) into the cache and
// puts it beside the model in dir.
func pullMTP(ctx context.Context, dir, repo, from string, errOut io.Writer) error {
	if from == "" {
		if declared, present := engine.MTPFiles(dir); declared && !present {
			fmt.Fprintf(errOut, "pull %s: its config declares a multi-token-prediction head, but this conversion dropped it; "+
				"bagel pull %s --mtp-from ORIGINAL (the release it was converted from) fetches it for --speculative mtp\n", repo, repo)
		}
		return nil
	}
	mrepo, mrev, _ := strings.Cut(from, "@")
	mdir, err := hub.New().Download(ctx, hub.CacheDir(), mrepo, hub.DownloadOptions{Revision: mrev,
		Only: func(p string) bool { return p == "mtp.safetensors" }, Paused: func() bool { return true }})
	if err != nil {
		return fmt.Errorf("--mtp-from %s: %w (a release that ships its head has mtp.safetensors)", from, err)
	}
	if err := hub.Attach(dir, filepath.Join(mdir, "mtp.safetensors")); err != nil {
		return fmt.Errorf("--mtp-from %s: %w", from, err)
	}
	fmt.Fprintf(errOut, "pull %s: the MTP head of %s is beside it (mtp.safetensors); --speculative mtp drafts with it\n", repo, from)
	return nil
}

// runModels lists the models on the disk: the Hub cache, LM Studio's folder,
// and whether Bagel runs each.
func runModels(args []string, out, errOut io.Writer) error {
	fs := newFlags("models", errOut)
	url := fs.String("remote", "", "list the models a server serves over OpenAI's API instead (its address; the key from $BAGEL_API_KEY or the keychain)")
	fs.usage["remote"] = "--remote URL"
	if err := fs.parse(args); err != nil {
		return err
	}
	if *url != "" {
		return listRemote(context.Background(), *url, out)
	}
	models := hub.Library(hub.CacheDir(), hub.LMStudioDir(), nil)
	if len(models) == 0 {
		fmt.Fprintf(out, "no models in %s or %s (bagel pull ORG/NAME downloads one)\n", hub.CacheDir(), hub.LMStudioDir())
		return nil
	}
	for _, m := range models {
		status := "runs"
		switch {
		case m.Problem != "":
			status = m.Problem
		case !engine.SupportedModelType(m.ModelType):
			status = fmt.Sprintf("model_type %q is not one Bagel runs", m.ModelType)
		}
		fmt.Fprintf(out, "%-50s %-10s %8.2f GB  %s\n    %s\n", m.Name, m.Source, float64(m.Bytes)/1e9, status, m.Dir)
	}
	return nil
}

// resolveModel turns -m's value into a folder: a folder as given, else
// ORG/NAME[@REVISION] as the Hub cache holds it.
func resolveModel(v string) (string, error) {
	if st, err := os.Stat(v); err == nil && st.IsDir() {
		return v, nil
	}
	repo, rev, _ := strings.Cut(v, "@")
	if strings.Count(repo, "/") != 1 || strings.HasPrefix(repo, "/") || strings.HasPrefix(repo, ".") {
		return v, nil // a path: its own errors name it
	}
	dir, err := hub.Snapshot(hub.CacheDir(), repo, rev)
	if err != nil {
		return "", fmt.Errorf("-m %s: no such folder, and %w", v, err)
	}
	return dir, nil
}
