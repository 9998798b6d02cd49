package switches

import "testing"

func TestSwitchValueOrder(t *testing.T) {
	Register(Switch{Name: "test-on", Description: "d", Default: true, Env: "BAGEL_NO_TEST_ON"})
	Register(Switch{Name: "test-off", Description: "d", Default: false, Env: "BAGEL_TEST_OFF"})
	defer Reset()
	if !On("test-on") || On("test-off") {
		t.Fatal("defaults not applied")
	}
	t.Setenv("BAGEL_NO_TEST_ON", "1")
	t.Setenv("BAGEL_TEST_OFF", "1")
	if On("test-on") || !On("test-off") {
		t.Fatal("environment not applied")
	}
	if err := Set("test-on", true); err != nil {
		t.Fatal(err)
	}
	if !On("test-on") {
		t.Fatal("Set does not win over the environment")
	}
	if err := Set("test-off", false); err != nil {
		t.Fatal(err)
	}
	Reset("test-off")
	if !On("test-off") || !On("test-on") {
		t.Fatal("Reset of one switch did not bring back its environment, or reset another")
	}
	if err := Set("nope", true); err == nil {
		t.Fatal("Set accepted an unknown switch")
	}
	names := map[string]bool{}
	for _, s := range All() {
		names[s.Name] = true
	}
	if !names["test-on"] || !names["test-off"] {
		t.Fatalf("All() = %v", All())
	}
}

// TestChosen: a switch is chosen once Set or its environment variable gives
// it a value, and not at its default.
func TestChosen(t *testing.T) {
	Register(Switch{Name: "test-chosen", Env: "BAGEL_TEST_CHOSEN", Default: false})
	defer Reset("test-chosen")
	if Chosen("test-chosen") {
		t.Fatal("a switch at its default is chosen")
	}
	t.Setenv("BAGEL_TEST_CHOSEN", "0")
	if !Chosen("test-chosen") {
		t.Fatal("a switch its environment variable sets is not chosen")
	}
	t.Setenv("BAGEL_TEST_CHOSEN", "")
	if err := Set("test-chosen", false); err != nil {
		t.Fatal(err)
	}
	if !Chosen("test-chosen") {
		t.Fatal("a switch Set gave a value is not chosen")
	}
}
