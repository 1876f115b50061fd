# lib_azure.sh - Azurite (npm, tests/azure) on 127.0.0.1 for a test: its own
# data directory, an account of the test's own with a random key
# (AZURITE_ACCOUNTS), Shared Key checks on (Azurite's default: a request
# signed with another key is answered 403), and a container ($AZ_CONTAINER).
# Stopped with the test (azurite_stop).
#
# Exports AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY and PGDIRECT_AZURE_ENDPOINT
# (http://127.0.0.1:PORT/ACCOUNT, Azurite's path-style URLs) for pgdirect, and
# AZ_PORT, AZ_LOG (Azurite's debug log: one line per request, with its URL).
# azurite_admin runs tests/azure/azurite_admin.py (an independent Shared Key
# signer in Python) against it.

AZURITE=${AZURITE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../azure" && pwd)/node_modules/.bin/azurite-blob}
AZURITE_ADMIN=$(cd "$(dirname "${BASH_SOURCE[0]}")/../azure" && pwd)/azurite_admin.py
AZ_ACCOUNT=pgdtest
AZ_CONTAINER=pgdirect-test
AZ_PID=""

azurite_admin() { python3 "$AZURITE_ADMIN" "$PGDIRECT_AZURE_ENDPOINT" "$AZ_ACCOUNT" "$AZ_KEY" "$@"; }

# azurite_start [PORT]: on PORT (default: a free one)
azurite_start() {
    local deadline=$((SECONDS + 60))
    [ -x "$AZURITE" ] || bail "Azurite is not installed: run scripts/setup.sh"
    AZ_PORT=${1:-$(free_port)}
    AZ_KEY=${AZ_KEY:-$(head -c 64 /dev/urandom | base64 -w0)}
    AZ_LOG="$T/azurite.log"
    mkdir -p "$T/azurite"
    AZURITE_ACCOUNTS="$AZ_ACCOUNT:$AZ_KEY" "$AZURITE" --blobHost 127.0.0.1 --blobPort "$AZ_PORT" \
        --location "$T/azurite" --silent --disableTelemetry --debug "$AZ_LOG" \
        >"$T/azurite.out" 2>&1 &
    AZ_PID=$!
    while ! (exec 3<>"/dev/tcp/127.0.0.1/$AZ_PORT") 2>/dev/null; do
        kill -0 "$AZ_PID" 2>/dev/null || bail "Azurite exited: $(tail -3 "$T/azurite.out")"
        [ $SECONDS -lt $deadline ] || bail "Azurite did not come up in 60 s"
        sleep 0.2
    done
    export AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT AZURE_STORAGE_KEY=$AZ_KEY
    export PGDIRECT_AZURE_ENDPOINT="http://127.0.0.1:$AZ_PORT/$AZ_ACCOUNT"
    export AZ_PORT AZ_LOG
    azurite_admin create-container "$AZ_CONTAINER" || bail "could not create container $AZ_CONTAINER"
}

azurite_stop() {
    [ -n "$AZ_PID" ] && kill "$AZ_PID" 2>/dev/null && wait "$AZ_PID" 2>/dev/null
    AZ_PID=""
}

# azurite_requests REGEX: how many requests Azurite has logged whose URL matches
azurite_requests() { grep -E 'RequestURL=' "$AZ_LOG" | grep -cE "$1"; }
