# Bagel: `make run` starts the app, `make test` runs every test that needs no GPU.
GO      ?= go
BIN     := bin/bagel
TESTMODEL := build/testmodel/tiny-moe

.PHONY: all build run test vet darwin-check testmodel clean

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

# The macOS build of every package is cross-compiled and vetted here (no Mac in CI).
darwin-check:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null .

test: vet darwin-check metal-check
	CGO_ENABLED=0 $(GO) test ./...

clean:
	rm -rf bin build
