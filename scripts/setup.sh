#!/usr/bin/env bash
# setup.sh - install everything pgdirect needs to build, test and demo on
# Debian 12, as root. Idempotent: safe to run again.
set -euo pipefail
PGDIRECT_ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: run as root (it installs Debian packages)" >&2
    exit 1
fi

packages=(
    # build
    build-essential meson ninja-build pkg-config clang-format
    liblz4-dev libzstd-dev libjansson-dev libpq-dev libcmocka-dev libssl-dev liburing-dev libcurl4-openssl-dev
    libxml2-dev libssh2-1-dev
    # the SFTP tests start their own sshd (tests/integration/lib_sftp.sh)
    openssh-server openssh-client
    # tests and demo: a real PostgreSQL 15, its tools, and the checkers
    postgresql-15 postgresql-contrib postgresql-client-15
    valgrind perl python3 lz4 zstd procps util-linux
    # make install's manual page rendered by test 37
    man-db groff-base
    # make coverage and the floors make check enforces
    gcovr
    # the libFuzzer targets of tests/fuzz (make check runs them over their corpus; make fuzz)
    clang libclang-rt-14-dev
    # S3 tests: moto and boto3 come with the pyenv Python (checked below); s3rver needs npm;
    # Debian's botocore for the tests that still call /usr/bin/python3
    python3-botocore
    # test 50 holds a delete still at a chosen moment (strace's syscall delay injection)
    strace
    # benchmark: the peers, the device limit, the plot
    pgbackrest fio gnuplot-nox bc time
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup.sh: all packages present"

# the S3 test server, pinned by tests/s3/package-lock.json; Node.js from Debian
# only where the machine has none of its own
if ! command -v npm >/dev/null; then
    apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
cd "$(dirname "$0")/../tests/s3"
if [ ! -x node_modules/.bin/s3rver ]; then
    echo "setup.sh: installing s3rver (npm)"
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi
echo "setup.sh: s3rver present"

# the Azure test server (Azurite, its Shared Key checks on), pinned by
# tests/azure/package-lock.json
cd "$PGDIRECT_ROOT/tests/azure"
if [ "$(node_modules/.bin/azurite-blob --version 2>/dev/null)" != \
    "$(python3 -c 'import json; print(json.load(open("package-lock.json"))["packages"]["node_modules/azurite"]["version"])')" ]; then
    echo "setup.sh: installing Azurite (npm)"
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi
echo "setup.sh: Azurite $(node_modules/.bin/azurite-blob --version) present"

# the S3 test server that checks signatures (moto with IAM authentication) and
# botocore, the independent SigV4 implementation: in the python3 on PATH (the
# pyenv one on this machine and on CI; PyPI is not reachable from here)
missing_py=()
for m in moto boto3 botocore flask werkzeug; do
    python3 -c "import $m" 2>/dev/null || missing_py+=("$m")
done
if [ ${#missing_py[@]} -gt 0 ]; then
    echo "setup.sh: $(command -v python3 || echo python3) cannot import: ${missing_py[*]}" >&2
    echo "setup.sh: the S3 tests need moto (>= 5, with its server extras) and boto3 in that Python" >&2
    exit 1
fi
python3 -c 'import moto, boto3' || exit 1
echo "setup.sh: moto $(python3 -c 'import moto; print(moto.__version__)') and boto3 present"

# PostgreSQL 14, 16, 17 and 18 for the tests' version matrix (15 is Debian's,
# above): the server builds pinned by tests/pg/package-lock.json. Their
# postinstall step restores the links between their libraries; it ignores
# its own failures, so a library that does not resolve is checked here.
cd "$PGDIRECT_ROOT/tests/pg"
pg_packages_ok() {
    local v
    for v in 14 16 17 18; do
        [ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' \
            "node_modules/pg$v/package.json" 2>/dev/null)" = \
            "$(python3 -c 'import json, sys
print(json.load(open("package-lock.json"))["packages"]["node_modules/pg" + sys.argv[1]]["version"])' "$v")" ] ||
            return 1
        ldd "node_modules/pg$v/native/bin/postgres" "node_modules/pg$v/native/bin/initdb" 2>&1 |
            grep -q 'not found' && return 1
    done
    return 0
}
if ! pg_packages_ok; then
    echo "setup.sh: installing PostgreSQL 14, 16, 17, 18 server builds (npm)"
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
    pg_packages_ok || { echo "setup.sh: the PostgreSQL builds in tests/pg are incomplete after npm ci" >&2; exit 1; }
fi
echo "setup.sh: PostgreSQL 14, 16, 17, 18 present"
