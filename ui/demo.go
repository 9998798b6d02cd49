package ui

import (
	"path/filepath"
	"sync"

	"bagel/assets"
	"bagel/hub"
)

// demoDir is the demo model's folder (assets.DemoDir, looked up once), ""
// when this installation has none.
var demoDir = sync.OnceValue(assets.DemoDir)

// isDemo is whether dir is the demo model.
func isDemo(dir string) bool {
	if dir == "" || demoDir() == "" {
		return false
	}
	abs, err := filepath.Abs(dir)
	return err == nil && filepath.Clean(abs) == demoDir()
}

// modelLabel is how the window names the model in folder dir: the Hub's
// org/name, the folder's name, or the demo's own name.
func modelLabel(dir string) string {
	if isDemo(dir) {
		return assets.DemoName
	}
	return hub.DisplayName(dir)
}
