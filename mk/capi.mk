# mk/capi.mk -- the C ABI: libminatoloader.so, its C test and the C++
# example. Included by the top-level Makefile.
#
#   make lib     build/libminatoloader.so (rebuilt when Go or C sources change)
#   make ctest   build and run build/test_capi and build/cpp_trainer

GO ?= go
CC ?= gcc
CXX ?= g++
# make predefines CC=cc and CXX=g++, so ?= alone would never apply.
ifeq ($(origin CC),default)
CC := gcc
endif
ifeq ($(origin CXX),default)
CXX := g++
endif

CAPI_LIB := build/libminatoloader.so
CAPI_SRCS := $(shell find capi core native -name '*.go' -not -name '*_test.go') \
	$(wildcard capi/*.c capi/*.h native/*/*.c native/*/*.h) include/minatoloader.h go.mod go.sum
# "turbojpeg" when a static libjpeg-turbo links into the library (Debian:
# libjpeg62-turbo-dev); empty otherwise, and JPEG decodes with image/jpeg.
GOTAGS ?= $(shell sh native/turbojpeg/detect.sh)
GOTAGFLAGS := $(if $(GOTAGS),-tags $(GOTAGS))
CAPI_LINK := -L build -Wl,-rpath,$(CURDIR)/build -lminatoloader

.PHONY: lib ctest

lib: $(CAPI_LIB)

# go build leaves a cgo header beside the library (build/libminatoloader.h)
# that declares the internal mlgo_* exports: remove it, the contract is
# include/minatoloader.h.
$(CAPI_LIB): $(CAPI_SRCS)
	@mkdir -p build
	CGO_ENABLED=1 $(GO) build $(GOTAGFLAGS) -buildmode=c-shared -o $@ ./capi
	@rm -f build/libminatoloader.h

# -rdynamic exports the test's fake PyCapsule_* functions to the library's
# capsule destructor.
build/test_capi: tests/c/test_capi.c include/minatoloader.h $(CAPI_LIB)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -I include -o $@ $< \
		$(CAPI_LINK) -lpthread -rdynamic

build/cpp_trainer: examples/cpp_trainer.cpp include/minatoloader.h $(CAPI_LIB)
	$(CXX) -std=c++17 -O2 -g -Wall -Wextra -Werror -I include -o $@ $< \
		$(CAPI_LINK)

ctest: build/test_capi build/cpp_trainer
	./build/test_capi
	./build/cpp_trainer
