#!/usr/bin/env bash
# Installs the peers hourglass is compared with, from Debian's packages:
# VictoriaMetrics, InfluxDB 1.x and Prometheus. Run as root. The packages'
# own services are stopped and disabled: start.sh runs each peer on loopback
# with a temporary data directory instead.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
    echo "install.sh: run as root (apt-get)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends victoria-metrics influxdb prometheus python3
# Debian starts packaged services where an init system runs; ours must not
# hold the default ports or data directories.
for svc in victoria-metrics influxdb prometheus; do
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        systemctl disable --now "$svc" >/dev/null 2>&1 || true
    elif command -v service >/dev/null 2>&1; then
        service "$svc" stop >/dev/null 2>&1 || true
    fi
done
for bin in victoria-metrics influxd prometheus; do
    printf '%-18s %s\n' "$bin" "$(command -v "$bin" || echo MISSING)"
done
