# Shell functions shared by the benchmark drivers (bench/peers/side-by-side.sh,
# bench/ab.sh, bench/history.sh). Source it from the repository root with `out`, `r` (the run
# number), `work` (the workload flags) and `B` (hourglass-bench) set.

started=()

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Stops everything started since the last cleanup and removes its data.
cleanup() {
    for d in "${started[@]}"; do
        case "$d" in
            /tmp/hourglass-peer-*) bench/peers/stop.sh "$d" >/dev/null 2>&1 || true ;;
            *)
                if [ -f "$d/pid" ]; then
                    pid=$(cat "$d/pid")
                    kill "$pid" 2>/dev/null || true
                    # A clean shutdown writes on until it exits.
                    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
                    kill -9 "$pid" 2>/dev/null || true
                fi
                rm -rf "$d" || true
                ;;
        esac
    done
    started=()
}

# start_hourglass [SERVER_BINARY]: hourglass on a fresh data directory with
# the default configuration (or the file HG_CONFIG names); sets HG_ADDR,
# HG_PID, HG_DIR.
start_hourglass() {
    HG_DIR=$(mktemp -d /tmp/hourglass-sbs.XXXXXX)
    started+=("$HG_DIR")
    launch_hourglass "${1:-target/release/hourglass}"
}

# restart_hourglass [SERVER_BINARY]: stops the server cleanly (SIGTERM; a
# server still running after 60 s fails the run) and starts it again on the
# same data directory; sets HG_ADDR and HG_PID.
restart_hourglass() {
    kill "$HG_PID"
    for _ in $(seq 600); do kill -0 "$HG_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$HG_PID" 2>/dev/null; then
        echo "bench: hourglass $HG_PID did not stop within 60 s" >&2
        exit 1
    fi
    launch_hourglass "${1:-target/release/hourglass}"
}

# launch_hourglass SERVER_BINARY: serves $HG_DIR/data on a free port and
# waits until it answers (or fails the run with its log).
launch_hourglass() {
    local bin=$1 port config=()
    [ -n "${HG_CONFIG:-}" ] && config=(--config "$HG_CONFIG")
    port=$(free_port)
    "$bin" serve "${config[@]}" --data-dir "$HG_DIR/data" --bind 127.0.0.1 --port "$port" >>"$HG_DIR/log" 2>&1 &
    HG_PID=$!
    echo "$HG_PID" >"$HG_DIR/pid"
    HG_ADDR=127.0.0.1:$port
    for _ in $(seq 300); do
        # Any answer will do: with access control on it is a 401.
        curl -s -o /dev/null "http://$HG_ADDR/api/version" && return 0
        sleep 0.1
    done
    echo "bench: hourglass ($bin) did not start" >&2
    cat "$HG_DIR/log" >&2
    exit 1
}

# wait_idle PID: returns once the process has used no CPU for a second
# (a server done flushing and compacting what it took in), at most 60 s, so
# that its background work does not fall on the next measurement.
wait_idle() {
    local pid=$1 before after
    for _ in $(seq 60); do
        before=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) || return 0
        sleep 1
        after=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) || return 0
        [ "$before" = "$after" ] && return 0
    done
    echo "  (server $pid still busy after 60 s)"
}

# ingest NAME PID ARGS...: one ingest run, its JSON report kept as
# $out/run$r-ingest-NAME.json (the form bench/peers/summary.py reads).
ingest() {
    local name=$1 pid=$2
    shift 2
    echo "  ingest $name"
    # A run with errors still writes its report (errors are counted there).
    "$B" ingest "${work[@]}" --server-pid "$pid" --no-progress --json "$@" \
        >"$out/run$r-ingest-$name.json" || echo "  ($name: the server refused part of it)"
}
