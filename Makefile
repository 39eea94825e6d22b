# The single entry point for building and checking latch. CI runs .ci/run,
# which runs the same commands.
GO ?= go

.PHONY: build test test-short bench vet lint fmt

build:
	$(GO) build -o latch ./cmd/latch

test:
	$(GO) test -race -count=1 -timeout 30m ./...

test-short:
	$(GO) test -short ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3000x ./store/...

vet:
	$(GO) vet ./...

lint:
	$(GO) tool -modfile=tools/go.mod golangci-lint run ./...

fmt:
	gofmt -w $$(git ls-files '*.go')
