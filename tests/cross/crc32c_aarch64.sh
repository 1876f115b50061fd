#!/usr/bin/env bash
# crc32c_aarch64.sh - the ARMv8 CRC-extension path of src/util/crc32c.c,
# cross-built for aarch64 and its cmocka unit test (tests/unit/test_crc32c.c)
# run under qemu-user. Not part of CI (it needs an arm64 toolchain and takes
# a minute under emulation); run it after changing crc32c.c:
#
#   bash tests/cross/crc32c_aarch64.sh
#
# Needs (Debian, as root):
#   dpkg --add-architecture arm64 && apt-get update
#   apt-get install gcc-aarch64-linux-gnu qemu-user-static libcmocka-dev:arm64
#
# Exits with the test's status; the test prints which code path ran
# ("armv8-crc" expected: qemu's default CPU has the CRC extension).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CC=${CC:-aarch64-linux-gnu-gcc}
QEMU=${QEMU:-qemu-aarch64-static}
SYSROOT=${SYSROOT:-/usr/aarch64-linux-gnu}
for tool in "$CC" "$QEMU"; do
    command -v "$tool" >/dev/null || { echo "crc32c_aarch64.sh: $tool is missing (see the header of this script)" >&2; exit 2; }
done
[ -e /usr/lib/aarch64-linux-gnu/libcmocka.so ] ||
    { echo "crc32c_aarch64.sh: libcmocka-dev:arm64 is missing (see the header of this script)" >&2; exit 2; }

OUT=$(mktemp -d /tmp/pgd-crc32c-aarch64.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
# plain armv8-a: the CRC instructions must come from the function's own target, not the flags
"$CC" -std=gnu11 -O2 -march=armv8-a -Wall -Wextra -Werror -pthread \
    -I"$ROOT/src" -I"$ROOT/tests/unit" -I/usr/include \
    -o "$OUT/test_crc32c" "$ROOT/tests/unit/test_crc32c.c" "$ROOT/src/util/crc32c.c" \
    -L/usr/lib/aarch64-linux-gnu -Wl,-rpath-link,/usr/lib/aarch64-linux-gnu -lcmocka
file "$OUT/test_crc32c" | grep -q 'ARM aarch64' || { echo "crc32c_aarch64.sh: not an aarch64 binary" >&2; exit 1; }
# the ARMv8 path must be in the binary, not just the software tables
aarch64-linux-gnu-objdump -d "$OUT/test_crc32c" | grep -q 'crc32cx' ||
    { echo "crc32c_aarch64.sh: no crc32cx instruction in the binary" >&2; exit 1; }
QEMU_LD_PREFIX=/ "$QEMU" -L / "$OUT/test_crc32c" | tee "$OUT/log"
grep -q 'crc32c implementation: armv8-crc' "$OUT/log" ||
    { echo "crc32c_aarch64.sh: the ARMv8 CRC path did not run" >&2; exit 1; }
