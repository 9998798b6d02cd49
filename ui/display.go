package ui

import (
	"fmt"
	"os"
	"runtime"

	_ "bagel/internal/locale" // before Fyne's packages: no locale error under LANG=C.UTF-8
)

// displayAvailable says, before GLFW is started (it panics without a display),
// why there is no window on a Linux or BSD machine without X11 or Wayland. A
// display that is set but unreachable is left to GLFW's own error.
func displayAvailable() error {
	switch runtime.GOOS {
	case "darwin", "windows":
		return nil
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return fmt.Errorf("no display: neither DISPLAY nor WAYLAND_DISPLAY is set, so the window cannot open (the command-line tools work without one: 'bagel help')")
	}
	return nil
}
