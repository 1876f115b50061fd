#!/bin/sh
# soname.sh PKG FILE - the SONAME of FILE (e.g. libpq.so) in pkg-config
# package PKG's libdir: the library whose headers the build compiles
# against, which pgdirect opens at run time (src/util/shared_lib.h).
# meson.build runs it; it prints one name or fails naming what is missing.
set -eu
libdir=$(pkg-config --variable=libdir "$1") || { echo "soname.sh: no pkg-config package $1" >&2; exit 1; }
name=$(readelf -d "$libdir/$2" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ -n "$name" ] || { echo "soname.sh: $libdir/$2 has no SONAME (is the -dev package of $1 installed?)" >&2; exit 1; }
echo "$name"
