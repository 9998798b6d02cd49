// Package layers holds only a test: the import rules of docs/ARCHITECTURE.md.
package layers
