# cgroup.sh - a memory cgroup to simulate a small machine (sourced by the
# integration tests and the benchmark). cgroup v1 (memory controller at
# /sys/fs/cgroup/memory) and v2 (unified, memory.max) are both handled.
#
#   cgroup_create NAME BYTES   sets CG_DIR and CG_VERSION; returns 1 (with a
#                              reason in CG_WHY) when no memory cgroup can be made
#   cgroup_exec CMD...         runs CMD inside the cgroup
#   cgroup_cache_bytes         page cache charged to the cgroup
#   cgroup_destroy             kills what is left inside and removes it

CG_DIR=""
CG_VERSION=""
CG_WHY=""

cgroup_create() {
    local name=$1 bytes=$2
    if [ -d /sys/fs/cgroup/memory ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
        CG_VERSION=1
        CG_DIR=/sys/fs/cgroup/memory/$name
        mkdir -p "$CG_DIR" 2>/dev/null && echo "$bytes" >"$CG_DIR/memory.limit_in_bytes" 2>/dev/null ||
            { CG_WHY="cannot create a v1 memory cgroup at $CG_DIR"; CG_DIR=""; return 1; }
    elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
        CG_VERSION=2
        CG_DIR=/sys/fs/cgroup/$name
        grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null ||
            echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
        mkdir -p "$CG_DIR" 2>/dev/null && echo "$bytes" >"$CG_DIR/memory.max" 2>/dev/null ||
            { CG_WHY="cannot create a v2 memory cgroup at $CG_DIR"; CG_DIR=""; return 1; }
    else
        CG_WHY="no memory cgroup controller (neither v1 nor v2) is mounted under /sys/fs/cgroup"
        return 1
    fi
}

cgroup_exec() {
    (echo "$BASHPID" >"$CG_DIR/cgroup.procs" && exec "$@")
}

cgroup_cache_bytes() {
    if [ "$CG_VERSION" = 1 ]; then
        awk '$1 == "cache" {print $2}' "$CG_DIR/memory.stat"
    else
        awk '$1 == "file" {print $2}' "$CG_DIR/memory.stat"
    fi
}

cgroup_peak_bytes() {
    if [ "$CG_VERSION" = 1 ]; then cat "$CG_DIR/memory.max_usage_in_bytes"; else cat "$CG_DIR/memory.peak" 2>/dev/null || echo 0; fi
}

cgroup_destroy() {
    [ -n "$CG_DIR" ] && [ -d "$CG_DIR" ] || return 0
    local pid
    for pid in $(cat "$CG_DIR/cgroup.procs" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    for _ in $(seq 1 50); do rmdir "$CG_DIR" 2>/dev/null && break; sleep 0.1; done
    CG_DIR=""
}
