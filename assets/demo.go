package assets

import (
	"os"
	"path/filepath"
)

// DemoName is how the app names the demo model.
const DemoName = "Bagel demo (Jargon File · Devil's Dictionary)"

// DemoEnv names the environment variable that points at the demo model's
// folder, ahead of the places DemoDir looks in itself.
const DemoEnv = "BAGEL_DEMO_MODEL"

// demoFolder is the demo model's folder name in the repository (assets/) and
// in the installed layouts.
const demoFolder = "demo-model"

// DemoDir is the folder of the demo model (a 5 MB qwen3_5 trained on the
// Jargon File and The Devil's Dictionary by tools/demo/train.py), or "" when
// none is found. It is not embedded in the binary: it stays a folder that the
// engine loads like any other. DemoDir looks, in order, at $BAGEL_DEMO_MODEL,
// then beside the executable as each way of running Bagel places it: bin/bagel
// of a repository build (../assets/demo-model), the Linux bundle's
// /usr/local/bin (../share/bagel/demo-model), Bagel.app's Contents/MacOS
// (../Resources/demo-model); then assets/demo-model under the working folder
// (go run). A folder counts when it holds a config.json.
func DemoDir() string {
	var candidates []string
	if d := os.Getenv(DemoEnv); d != "" {
		candidates = append(candidates, d)
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		up := filepath.Dir(filepath.Dir(exe))
		candidates = append(candidates,
			filepath.Join(up, "assets", demoFolder),
			filepath.Join(up, "share", "bagel", demoFolder),
			filepath.Join(up, "Resources", demoFolder))
	}
	if wd, err := os.Getwd(); err == nil {
		candidates = append(candidates, filepath.Join(wd, "assets", demoFolder))
	}
	for _, d := range candidates {
		if st, err := os.Stat(filepath.Join(d, "config.json")); err == nil && st.Mode().IsRegular() {
			if abs, err := filepath.Abs(d); err == nil {
				return filepath.Clean(abs)
			}
			return filepath.Clean(d)
		}
	}
	return ""
}
