// Package locale quiets Fyne's "Error parsing user locale C" under the C and
// POSIX locales (LANG=C.UTF-8 on servers and containers): Fyne's locale lookup
// takes the language of "C.UTF-8" to be "C", which is no language tag, and
// logs an error at start-up of every command. With LANGUAGE=en (which only
// names the language of messages, as gettext reads it) the lookup finds
// English instead.
//
// It works from init: Go initializes packages in import-path order among
// those whose imports are ready, and this one imports only the standard
// library, so it runs before any fyne.io package. The ui package imports it.
package locale

import (
	"os"
	"strings"
)

func init() { apply(os.Getenv, os.Setenv) }

// apply sets LANGUAGE=en when the locale in effect (LC_ALL, LC_MESSAGES or
// LANG, the first one set) is C or POSIX with an encoding, and LANGUAGE is unset.
func apply(get func(string) string, set func(string, string) error) {
	if get("LANGUAGE") != "" {
		return
	}
	loc := ""
	for _, v := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if loc = get(v); loc != "" {
			break
		}
	}
	if strings.HasPrefix(loc, "C.") || strings.HasPrefix(loc, "POSIX.") {
		_ = set("LANGUAGE", "en")
	}
}
