# minatoloader: `make demo`, `make test`, `make bench`.
#
# Python work happens in .venv (created on first use). The Go library is
# built by `pip install ./python` for the package, and into build/ for the
# C test and the C++ example.

GO      ?= go
CC      ?= gcc
CXX     ?= g++
PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.deps-stamp
PKG_STAMP := $(VENV)/.pkg-stamp
GO_SRC  := $(shell find core capi native -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.sh' 2>/dev/null) go.mod include/minatoloader.h
PY_SRC  := $(shell find python -name '*.py' -o -name '*.toml' 2>/dev/null)

.PHONY: all venv install demo test gotest ctest pytest bench fuzz clean

all: lib

include mk/capi.mk

$(STAMP): requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

venv: $(STAMP)

# Reinstall the package whenever a Go or Python source changed.
$(PKG_STAMP): $(STAMP) $(GO_SRC) $(PY_SRC)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --force-reinstall ./python
	touch $@

install: $(PKG_STAMP)

demo: install
	$(PY) examples/demo.py

test: gotest fuzz ctest pytest typecheck

# Every decoder's fuzz target, briefly (FUZZTIME inputs each; a count, not a
# duration: a timed run can end in a spurious "context deadline
# exceeded", golang/go#75804, unfixed in Go 1.26), from its seeds in
# testdata/fuzz; `make fuzz FUZZTIME=60s` for a real run.
FUZZTIME ?= 20000x
FUZZ_TARGETS := FuzzParse:./core/config FuzzDecodeJPEG:./core/imageops FuzzDecodePNG:./core/imageops \
	FuzzDecodeWAV:./core/audio FuzzReadNpy:./core/volume FuzzDecode:./native/turbojpeg \
	FuzzParseMessage:./core/remote FuzzReadFrame:./core/remote
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t%%:*} ($(FUZZTIME))"; \
		$(GO) test $(GOTAGFLAGS) -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) $${t#*:} >/tmp/minatoloader-fuzz.log 2>&1 \
			|| { cat /tmp/minatoloader-fuzz.log; exit 1; }; \
	done

gotest:
	$(GO) vet $(GOTAGFLAGS) ./...
	test -z "$$(gofmt -l core capi native)" || (gofmt -l core capi native; echo "gofmt needed"; exit 1)
	$(GO) test $(GOTAGFLAGS) -race -count=1 ./...

pytest: install
	$(PY) -m pytest -q -p no:cacheprovider tests/python

# mypy on a typed user script, against the installed package (its py.typed):
# what a user's type checker sees of minatoloader.DataLoader.
.PHONY: typecheck
typecheck: install
	$(PY) -m mypy --config-file tests/typing/mypy.ini --cache-dir $(VENV)/.mypy_cache tests/typing/user_script.py

bench: install
	$(GO) test -run '^$$' -bench . -benchtime 200000x ./core/sched/
	$(PY) bench/overhead.py
	$(PY) bench/speech.py
	$(PY) bench/images.py
	$(PY) bench/pydataset.py --n 1024 --workers 2,4
	$(PY) bench/large_batch.py

clean:
	rm -rf build $(VENV)
