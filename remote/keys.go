package remote

import (
	"errors"
	"fmt"

	"github.com/zalando/go-keyring"
)

// The API keys of remote engines live in the system's keychain (macOS
// Keychain through its security tool, the Secret Service on Linux, the
// Credential Manager on Windows: go-keyring), by server address, never in a
// settings file, a chat or a log.

const keychainService = "Bagel remote engine"

// SaveKey keeps key for the server at url in the keychain; an error says
// that no keychain is available (the caller keeps the key for the session).
func SaveKey(url, key string) error {
	if err := keyring.Set(keychainService, url, key); err != nil {
		return fmt.Errorf("the API key could not be kept in the system keychain (%v), so it is kept only until Bagel quits", err)
	}
	return nil
}

// Key is the key the keychain holds for url ("" when none, or no keychain).
func Key(url string) string {
	key, err := keyring.Get(keychainService, url)
	if err != nil {
		return ""
	}
	return key
}

// ForgetKey removes url's key from the keychain (none there is no error).
func ForgetKey(url string) error {
	if err := keyring.Delete(keychainService, url); err != nil && !errors.Is(err, keyring.ErrNotFound) {
		return err
	}
	return nil
}
