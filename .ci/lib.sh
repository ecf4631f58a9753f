# Shared helpers for the CI stages: start a server on a free port, install
# Debian's Prometheus, make a Python venv.
# Usage: start_server DIR  → sets HG_PID, HG_ADDR, HG_PORT
# (HG_CONFIG, if set, names a configuration file to start it with)
start_server() {
  local dir=$1
  mkdir -p "$dir"
  local bin=${HOURGLASS_BIN:-target/debug/hourglass}
  [ -x "$bin" ] || cargo build -q --bin hourglass
  local config=()
  [ -n "${HG_CONFIG:-}" ] && config=(--config "$HG_CONFIG")
  "$bin" serve "${config[@]}" --data-dir "$dir/data" --port 0 >"$dir/stdout" 2>"$dir/server.log" &
  HG_PID=$!
  for _ in $(seq 100); do
    # The background shell may not have created stdout yet: not an error.
    HG_ADDR=$(sed -n 's/.* listening on \([0-9.:]*\) .*/\1/p' "$dir/stdout" 2>/dev/null || true)
    [ -n "$HG_ADDR" ] && break
    sleep 0.1
  done
  [ -n "$HG_ADDR" ] || { echo "server did not start"; cat "$dir/server.log"; return 1; }
  HG_PORT=${HG_ADDR##*:}
  echo "hourglass pid $HG_PID on $HG_ADDR"
}

# Debian's Prometheus (2.42 on bookworm), installed if absent.
need_prometheus() {
  if ! command -v prometheus >/dev/null 2>&1; then
    echo "installing prometheus"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  fi
  prometheus --version 2>&1 | head -1
}

# make_venv DIR PACKAGE…: a Python venv in DIR with the packages (kept if
# DIR already has a python).
make_venv() {
  local venv=$1
  shift
  [ -x "$venv/bin/python" ] && return 0
  if ! python3 -m venv "$venv" 2>/dev/null; then
    # Debian's python3 ships venv separately.
    rm -rf "$venv"
    apt-get update -qq && apt-get install -y -qq python3-venv python3-pip >/dev/null
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install -q --no-cache-dir "$@"
}
