package remote

import (
	"testing"

	"github.com/zalando/go-keyring"
)

// TestKeysInTheKeychain: a key kept is found by its server's address, and
// forgotten; forgetting one never kept is no error.
func TestKeysInTheKeychain(t *testing.T) {
	keyring.MockInit()
	url := "http://127.0.0.1:8484/v1"
	if err := SaveKey(url, "k1"); err != nil {
		t.Fatal(err)
	}
	if Key(url) != "k1" || Key("http://other") != "" {
		t.Errorf("keys: %q %q", Key(url), Key("http://other"))
	}
	if err := ForgetKey(url); err != nil || Key(url) != "" {
		t.Errorf("after forgetting: %q (%v)", Key(url), err)
	}
	if err := ForgetKey(url); err != nil {
		t.Errorf("forgetting twice: %v", err)
	}
	keyring.MockInitWithError(keyring.ErrUnsupportedPlatform)
	if err := SaveKey(url, "k"); err == nil {
		t.Error("no keychain, and no error")
	}
}
