package mtl

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// metalCppDir holds Apple's metal-cpp headers (see its README).
const metalCppDir = "testdata/metal-cpp"

func loadTestAPI(t *testing.T) *appleAPI {
	t.Helper()
	api, err := loadAppleAPI(metalCppDir)
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// TestBindingMatchesAppleHeaders checks every selector, class and message send
// of the darwin binding against Apple's metal-cpp headers (apple_check_test.go).
func TestBindingMatchesAppleHeaders(t *testing.T) {
	api := loadTestAPI(t)
	files, err := filepath.Glob("*_darwin.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no darwin sources found: %v", err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, file)
	}
	b, err := readBinding(fset, parsed)
	if err != nil {
		t.Fatal(err)
	}
	matched, errs := checkBinding(api, b)
	for _, err := range errs {
		t.Error(err)
	}
	for _, m := range matched {
		t.Log(m)
	}
	// Every selector of the tables is sent, so the sends cover them (selectors_test.go).
	if len(b.sends) < len(selectorNames) {
		t.Errorf("only %d sends found for %d selectors: is the reader broken?", len(b.sends), len(selectorNames))
	}
}

// TestAppleHeadersHaveResidencySets: the vendored metal-cpp is new enough for
// the macOS 15 residency-set API the backend uses.
func TestAppleHeadersHaveResidencySets(t *testing.T) {
	api := loadTestAPI(t)
	for _, s := range []string{"newResidencySetWithDescriptor:error:", "addAllocation:", "removeAllocation:",
		"requestResidency", "addResidencySet:", "setInitialCapacity:"} {
		if !api.selectors[s] {
			t.Errorf("selector %q missing from the vendored headers", s)
		}
	}
	if !api.classes["MTLResidencySetDescriptor"] {
		t.Error("class MTLResidencySetDescriptor missing from the vendored headers")
	}
	if _, err := api.lookup("MTL::ResidencySet", false, "commit"); err != nil {
		t.Error(err)
	}
}
