package locale

import "testing"

func TestApply(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"LANG": "C.UTF-8"}, "en"},
		{map[string]string{"LC_ALL": "POSIX.utf8", "LANG": "de_DE.UTF-8"}, "en"},
		{map[string]string{"LANG": "de_DE.UTF-8"}, ""},
		{map[string]string{"LANG": "C"}, ""}, // plain C: Fyne falls back to English itself
		{map[string]string{"LANG": "C.UTF-8", "LANGUAGE": "fr"}, "fr"},
	} {
		env := map[string]string{}
		for k, v := range c.env {
			env[k] = v
		}
		apply(func(k string) string { return env[k] }, func(k, v string) error { env[k] = v; return nil })
		if env["LANGUAGE"] != c.want {
			t.Errorf("%v: LANGUAGE %q, want %q", c.env, env["LANGUAGE"], c.want)
		}
	}
}
