#!/bin/sh
# detect.sh -- prints "turbojpeg" (the Go build tag) when this machine can
# build package native/turbojpeg into libminatoloader.so, and nothing when it
# cannot; the exit status is 0 unless MINATOLOADER_TURBOJPEG=1 (below).
#
# The test is the real one: it compiles native/turbojpeg/decode.c against
# the installed <jpeglib.h> (which must be libjpeg-turbo's) and links it
# with the static libjpeg.a into a shared object the way `go build
# -buildmode=c-shared` links (-shared -Bsymbolic), with --no-undefined so
# that anything beyond libc fails. That proves the header, the archive,
# and that the archive's objects can go into a shared library.
#
#   Debian: apt-get install -y libjpeg62-turbo-dev
#   (Ubuntu names it libjpeg-turbo8-dev; not tried here, the check decides)
#
# Environment: CC (default gcc, as for cgo); GO (default go, asked whether
# cgo is enabled); MINATOLOADER_TURBOJPEG=0 never prints the tag, =1
# requires it (exit 1 with the compiler's reason when the check fails),
# unset or auto decides by the check.
#
# Makefile:  GOTAGS ?= $(shell sh native/turbojpeg/detect.sh)
#            go build $(if $(GOTAGS),-tags $(GOTAGS)) -buildmode=c-shared ...
set -u

want=${MINATOLOADER_TURBOJPEG:-auto}
[ "$want" = 0 ] && exit 0

dir=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-gcc}
tmp=$(mktemp -d 2>/dev/null || mktemp -d -t turbojpeg) || exit 0
trap 'rm -rf "$tmp"' EXIT INT TERM

if [ "$(${GO:-go} env CGO_ENABLED 2>/dev/null || echo 1)" != 1 ]; then
	reason="cgo is disabled (CGO_ENABLED=0)"
elif $cc -O2 -fPIC -shared -Wl,-Bsymbolic -Wl,--no-undefined -o "$tmp/probe.so" \
	-x c "$dir/decode.c" -l:libjpeg.a >"$tmp/log" 2>&1; then
	echo turbojpeg
	exit 0
else
	reason=$(head -n 3 "$tmp/log")
fi

if [ "$want" = 1 ]; then
	echo "detect.sh: MINATOLOADER_TURBOJPEG=1 but the turbojpeg decoder cannot be built: $reason" >&2
	exit 1
fi
exit 0
