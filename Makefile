# Two commands set everything up: `make demo` and `make test`.
SHELL := /bin/bash
SWIFT ?= swift
BUILD_FLAGS ?=
MEDIA_DIR := media/out
LOSSLESS_DIR := media/lossless

.PHONY: all deps build release media media-long demo test fuzz fuzz-smoke sanitize bench clean

all: build

deps:
	@scripts/deps.sh

build: deps
	$(SWIFT) build $(BUILD_FLAGS)

release: deps
	$(SWIFT) build -c release $(BUILD_FLAGS)

media: deps
	@media/make-media.sh $(MEDIA_DIR)
	@media/make-media.sh --lossless $(LOSSLESS_DIR)
	@media/make-media.sh --ogg media/ogg

media-long: deps
	@media/make-media.sh --long media/long

demo: deps media release
	@scripts/demo.sh

# The log is kept in .build/test.log; on failure the failed tests and a crashed thread's frames
# are printed last (scripts/test-failures.sh), where CI's tail shows them.
# Expected time after the build: within 240 s on 2 idle cores (about 330 s of CPU), plus the
# fuzz smoke run. Tests that wait (the end-to-end ones) run on threads of their own, six at a time
# (STREAM_TEST_WIDTH=N to change); STREAM_TEST_TIMES=1 prints each one's own time ("test-time").
# The tests' temporary files (libraries, databases, transcodes) go to a folder of this run,
# removed at its end (sticky and world-writable as /tmp is: VLC runs as nobody).
test: deps media
	$(SWIFT) build --build-tests $(BUILD_FLAGS)
	@mkdir -p .build
	set -o pipefail; scratch=$$(mktemp -d /tmp/streamd-make-test.XXXXXX) && chmod 1777 $$scratch; \
	  TMPDIR=$$scratch STREAM_MEDIA_DIR=$(CURDIR)/$(MEDIA_DIR) STREAM_LOSSLESS_DIR=$(CURDIR)/$(LOSSLESS_DIR) \
	  SWIFT_BACKTRACE=$${SWIFT_BACKTRACE:-interactive=no,threads=crashed,registers=none,images=none} \
	  $(SWIFT) test --skip-build $(BUILD_FLAGS) 2>&1 | tee .build/test.log; status=$$?; rm -rf $$scratch; \
	  [ $$status -eq 0 ] || { scripts/test-failures.sh .build/test.log; exit 1; }
	@$(MAKE) --no-print-directory fuzz-smoke

# libFuzzer over every parser (Fuzz/README.md): FUZZ_SECONDS per target, two at a time.
FUZZ_SECONDS ?= 60
fuzz: deps media
	STREAM_MEDIA_DIR=$(CURDIR)/$(MEDIA_DIR) FUZZ_SECONDS=$(FUZZ_SECONDS) Fuzz/run.sh

# The part of `make test`: 10 s of each target.
fuzz-smoke: deps media
	STREAM_MEDIA_DIR=$(CURDIR)/$(MEDIA_DIR) FUZZ_SECONDS=10 Fuzz/run.sh

# The whole suite under AddressSanitizer, then ThreadSanitizer (.build-asan, .build-tsan); fails on
# any report, of the tests or of the streamd/streamplay they start. SANITIZERS=thread for one.
sanitize: deps media
	@scripts/sanitize.sh

bench: deps media media-long release
	@bench/run.sh

clean:
	rm -rf .build .build-fuzz $(MEDIA_DIR) $(LOSSLESS_DIR) media/long media/ogg
