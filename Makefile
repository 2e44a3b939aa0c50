# Two commands set everything up: `make demo` and `make test`.
SHELL := /bin/bash
SWIFT ?= swift
BUILD_FLAGS ?=
MEDIA_DIR := media/out

.PHONY: all deps build release media media-long demo test bench clean

all: build

deps:
	@scripts/deps.sh

build: deps
	$(SWIFT) build $(BUILD_FLAGS)

release: deps
	$(SWIFT) build -c release $(BUILD_FLAGS)

media: deps
	@media/make-media.sh $(MEDIA_DIR)

media-long: deps
	@media/make-media.sh --long media/long

demo: deps media release
	@scripts/demo.sh

test: deps media
	$(SWIFT) build --build-tests $(BUILD_FLAGS)
	STREAM_MEDIA_DIR=$(CURDIR)/$(MEDIA_DIR) $(SWIFT) test --skip-build $(BUILD_FLAGS)

bench: deps media media-long release
	@bench/run.sh

clean:
	rm -rf .build $(MEDIA_DIR) media/long
