# Bagel: `make run` starts the app, `make test` runs every test that needs no GPU.
GO      ?= go
BIN     := bin/bagel
TESTMODEL := build/testmodel/tiny-moe

.PHONY: all build run demo demo-model gui-deps test-deps bundle test vet darwin-check metal-test testmodel fuzz clean

.DEFAULT_GOAL := all

# gpu-build, gpu-test, ptx, metal-check and cuda-check.
include Makefile.gpu

all: build

# The window (Fyne's GLFW driver) is Bagel's only cgo: it needs a C compiler
# and, on Linux, the X11/GL headers (make gui-deps). Without them `build` makes
# the command-line tools alone, whose `bagel` with no arguments says so.
GUI_READY = [ "$$(uname -s)" = Darwin ] || { command -v gcc >/dev/null && pkg-config --exists gl x11 xcursor xrandr xinerama xi xxf86vm xkbcommon 2>/dev/null; }
# The window is built without Fyne's animations: a focused field's caret
# fades in and out at the screen's frame rate otherwise, redrawing the whole
# window while the app sits idle (Xvfb, software GL: 8.7% of a core with the
# composer focused, 1.3% without; docs/benchmarks.md). The caret then stays
# lit, and buttons do without their tap ripple.
APPTAGS := no_animations
build:
	@if $(GUI_READY); then cgo=1; else cgo=0; echo "build: no X11/GL headers (make gui-deps installs them): building the command-line tools without the window"; fi; \
	echo "CGO_ENABLED=$$cgo $(GO) build -tags $(APPTAGS) -o $(BIN) ."; CGO_ENABLED=$$cgo $(GO) build -tags $(APPTAGS) -o $(BIN) .

# Debian/Ubuntu packages the window builds against (Fyne: gcc, GL and the X11 /
# Wayland headers), and clang, which `make test` uses to parse the Metal
# kernels. apt-deps installs the missing ones of a list when this user can
# (root, or through sudo), saying what it installs and waiting for another
# apt's lock; otherwise it prints the command to run and fails.
GUI_APT := gcc pkg-config libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev libxinerama-dev \
	libxi-dev libxxf86vm-dev libwayland-dev libxkbcommon-dev
TEST_APT := clang
define apt-deps
	@if [ "$$(uname -s)" = Linux ] && command -v dpkg-query >/dev/null; then \
	  missing=$$(for p in $(2); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	  if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ]; then sudo=; elif command -v sudo >/dev/null; then sudo=sudo; \
	    else echo "$(1): as root, run: apt-get install" $$missing; exit 1; fi; \
	    echo "$(1): installing" $$missing; \
	    $$sudo apt-get -o DPkg::Lock::Timeout=300 update -q && \
	    $$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q $$missing || \
	    { echo "$(1): the install failed; as root, run: apt-get install" $$missing; exit 1; }; \
	  fi; \
	fi
endef
gui-deps:
	$(call apt-deps,gui-deps,$(GUI_APT))
test-deps:
	$(call apt-deps,test-deps,$(TEST_APT))

# The tiny test model with the Qwen3 tokenizer beside it (testdata keeps the
# tokenizer compressed and the weights without it).
testmodel: $(TESTMODEL)/tokenizer.json

$(TESTMODEL)/tokenizer.json: testdata/tokenizer/qwen3/tokenizer.json.gz
	mkdir -p $(TESTMODEL)
	for f in testdata/models/tiny-moe/*; do ln -sf "$$(pwd)/$$f" $(TESTMODEL)/; done
	gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > $(TESTMODEL)/tokenizer_config.json
	gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > $(TESTMODEL)/tokenizer.json

# The app, on a fresh machine too: GUI build packages, build, open the window
# (with the demo model, assets/demo-model, until another model is chosen).
run: gui-deps build
	./$(BIN)

# One reply of the demo model from the command line, on the CPU.
DEMO := assets/demo-model
demo: build
	./$(BIN) generate -m $(DEMO) --backend cpu --no-think --max-tokens 200 "What is a kludge?"

# The demo model, retrained: the text from the Debian packages jargon and
# dict-devil (public domain), then tools/demo/train.py, which needs PyTorch,
# transformers and tokenizers (the GPU machine; about five minutes on an
# H200). It rewrites assets/demo-model and the test reference
# testdata/demo/reference.json.gz.
demo-model:
	@test -f /usr/share/info/jargon.info.gz -a -f /usr/share/dictd/devil.dict.dz || \
	  { echo "demo-model: needs the Debian packages jargon and dict-devil (apt-get install jargon dict-devil)"; exit 1; }
	mkdir -p build/demo
	python3 tools/demo/corpus.py --out build/demo/corpus.jsonl
	python3 tools/demo/train.py --corpus build/demo/corpus.jsonl --out build/demo/model
	cp build/demo/model/config.json build/demo/model/generation_config.json build/demo/model/model.safetensors \
	  build/demo/model/mtp.safetensors build/demo/model/tokenizer.json build/demo/model/tokenizer_config.json \
	  build/demo/model/train.log $(DEMO)/
	gzip -9c build/demo/model/reference.json > testdata/demo/reference.json.gz

# The app as a package: Bagel.app on macOS (the fyne tool reads FyneApp.toml),
# a tarball of /usr/local with a .desktop file and the icon on Linux.
VERSION = $(shell sed -n 's/^Version *= *"\(.*\)"/\1/p' FyneApp.toml)
BUNDLE  := build/bundle
bundle: gui-deps
ifeq ($(shell uname -s),Darwin)
	$(GO) run fyne.io/tools/cmd/fyne@v1.7.4 package -os darwin -release -tags $(APPTAGS)
	mkdir -p Bagel.app/Contents/Resources/demo-model && cp $(DEMO)/* Bagel.app/Contents/Resources/demo-model/
	@echo "bundle: Bagel.app"
else
	rm -rf $(BUNDLE) && mkdir -p $(BUNDLE)/usr/local/bin $(BUNDLE)/usr/local/share/applications $(BUNDLE)/usr/local/share/pixmaps
	CGO_ENABLED=1 $(GO) build -tags $(APPTAGS) -trimpath -ldflags "-s -w" -o $(BUNDLE)/usr/local/bin/bagel .
	cp assets/bagel.desktop $(BUNDLE)/usr/local/share/applications/dev.bagel.chat.desktop
	cp assets/icon.png $(BUNDLE)/usr/local/share/pixmaps/dev.bagel.chat.png
	mkdir -p $(BUNDLE)/usr/local/share/bagel/demo-model && cp $(DEMO)/* $(BUNDLE)/usr/local/share/bagel/demo-model/
	chmod 755 $(BUNDLE)/usr/local/bin/bagel && chmod 644 $(BUNDLE)/usr/local/share/applications/* $(BUNDLE)/usr/local/share/pixmaps/* \
	  $(BUNDLE)/usr/local/share/bagel/demo-model/*
	# Files only, owned by root: extracting into / must not touch the owner or
	# mode of /usr, /usr/local or any directory that is already there.
	mkdir -p bin && (cd $(BUNDLE) && find usr -type f | sort | tar --owner=0 --group=0 --numeric-owner --no-recursion \
	  -cJf $(CURDIR)/bin/Bagel-$(VERSION)-linux-$$($(GO) env GOARCH).tar.xz -T -)
	@tar -tvJf bin/Bagel-$(VERSION)-linux-$$($(GO) env GOARCH).tar.xz --numeric-owner | \
	  awk '$$1 !~ /^-/ || $$2 != "0/0" { print "bundle: bad entry:", $$0; bad = 1 } END { exit bad }' 
	@echo "bundle: bin/Bagel-$(VERSION)-linux-$$($(GO) env GOARCH).tar.xz (install: sudo tar -xJf FILE -C /)"
endif

vet: gui-deps
	$(GO) vet ./...

# The macOS build of every engine package and the command line (everything but
# the UI and main, which on macOS need cgo for Fyne's widgets) is cross-compiled
# and vetted here (vet type-checks the _darwin_test.go files too; no Mac in CI).
ENGINE_PKGS = $(shell $(GO) list ./... | grep -v -e '^bagel/ui' -e '^bagel$$')
darwin-check:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet $(ENGINE_PKGS)
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build ./cli

# On a Mac: every kernel on Metal against the CPU, end to end score, residency on/off.
metal-test:
	BAGEL_REQUIRE_GPU=1 CGO_ENABLED=0 $(GO) test -count=1 -v ./metal/...

# Fyne's test driver needs no cgo on Linux, but Fyne's widgets do on macOS: there
# the ui tests run with cgo.
UI_CGO = $(if $(filter Darwin,$(shell uname -s)),1,0)
# The engine package's tests take 6.5 minutes on CI's 2 cores (thirty-first
# session), near go test's default limit of 10 a package: 25 leaves room for a
# slower machine and still ends a hung test long before CI's 90 minutes.
TEST_TIMEOUT = 25m
test: test-deps vet darwin-check metal-check cuda-check
	CGO_ENABLED=0 $(GO) test -timeout $(TEST_TIMEOUT) $(ENGINE_PKGS)
	# The engine's GPU tests (speculative decoding among them) through the Metal
	# backend's host code on its simulator, whose kernels are the CPU's.
	BAGEL_METAL_SIM=1 CGO_ENABLED=0 $(GO) test -timeout $(TEST_TIMEOUT) -run 'GPU|Verify' ./engine
	CGO_ENABLED=$(UI_CGO) $(GO) test ./ui/... .

# Fuzz every parser of user input for a minute each (not part of `make test`,
# which runs the fuzz targets' seeds). Findings land in testdata/fuzz/.
FUZZ_TARGETS := ./safetensors:FuzzParseHeader ./safetensors:FuzzParseQuantization ./qwen:FuzzParseConfig \
	./tokenizer:FuzzEncodeDecode ./tokenizer:FuzzRenderTemplate ./hub:FuzzModelInfo ./ui:FuzzLoadSettings ./tokenizer:FuzzParseTokenizer \
	./server:FuzzRequestBodies ./server:FuzzToolScanner ./remote:FuzzRemoteStream ./vision:FuzzImageSize
fuzz:
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; echo "fuzz $$pkg $$fn"; \
	  CGO_ENABLED=0 $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime 60s $$pkg || exit 1; done

clean:
	rm -rf bin build
