# Bagel: `make run` starts the app, `make test` runs every test that needs no GPU.
GO      ?= go
BIN     := bin/bagel
TESTMODEL := build/testmodel/tiny-moe

.PHONY: all build run test vet darwin-check metal-test testmodel clean

.DEFAULT_GOAL := all

# gpu-build, gpu-test, ptx and metal-check.
include Makefile.gpu

all: build

build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) .

# The tiny test model with the Qwen3 tokenizer beside it (testdata keeps the
# tokenizer compressed and the weights without it).
testmodel: $(TESTMODEL)/tokenizer.json

$(TESTMODEL)/tokenizer.json: testdata/tokenizer/qwen3/tokenizer.json.gz
	mkdir -p $(TESTMODEL)
	for f in testdata/models/tiny-moe/*; do ln -sf "$$(pwd)/$$f" $(TESTMODEL)/; done
	gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > $(TESTMODEL)/tokenizer_config.json
	gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > $(TESTMODEL)/tokenizer.json

run: build testmodel
	./$(BIN) generate -m $(TESTMODEL) -p "Tell me about bagels." --max-tokens 32 --backend cpu

vet:
	$(GO) vet ./...

# The macOS build of every engine package (everything but the cgo UI) is
# cross-compiled and vetted here (vet type-checks the _darwin_test.go files too;
# no Mac in CI).
ENGINE_PKGS = $(shell $(GO) list ./... | grep -v '^bagel/ui')
darwin-check:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet $(ENGINE_PKGS)
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null .

# On a Mac: every kernel on Metal against the CPU, end to end score, residency on/off.
metal-test:
	BAGEL_REQUIRE_GPU=1 CGO_ENABLED=0 $(GO) test -count=1 -v ./metal/...

test: vet darwin-check metal-check
	CGO_ENABLED=0 $(GO) test ./...

clean:
	rm -rf bin build
