#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine with a Rust toolchain:
# installs what the tests need (only what is missing), then runs every test
# (under cargo-nextest; .config/nextest.toml).
# Tests start their own servers (nginx, ...) in temp dirs on free loopback
# ports; nothing already running on the machine is used.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }
have nginx || missing+=(nginx-light)
have apache2 || missing+=(apache2-bin)                 # preflight counts Apache's workers live
have openssl || missing+=(openssl)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
have psql || missing+=(postgresql-client)
have mariadbd || missing+=(mariadb-server)
have mariadb || missing+=(mariadb-client)
have redis-server || missing+=(redis-server)       # Redis targets (tests start their own)
have prometheus || missing+=(prometheus)           # --metrics-listen / --remote-write (promtool comes with it)
[ -x /usr/bin/chromium ] || missing+=(chromium)   # the HTML report is loaded in headless Chromium
have perf || missing+=(linux-perf)                 # sweep --profile (docs/profiles.md)
have cc || missing+=(gcc)                          # the profile tests build a small C server
have ip || missing+=(iproute2)                     # network namespaces (preflight's port-range test)
have nft || missing+=(nftables)                   # conntrack counted live (preflight test)
have sshd || missing+=(openssh-server)             # ssh:// agents (tests start their own sshd)
have ssh || missing+=(openssh-client)

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts the packaged services; the tests never use them.
  if have nginx && [ -f /run/nginx.pid ]; then $sudo nginx -s quit 2>/dev/null || true; fi
  for svc in postgresql mariadb redis-server prometheus ssh; do
    if command -v service >/dev/null 2>&1; then $sudo service "$svc" stop >/dev/null 2>&1 || true; fi
  done
fi

# The runner: cargo-nextest, one process per test and four at a time
# (.config/nextest.toml says why), so a 20-minute suite of mostly waiting
# runs in well under 15. Installed from crates.io when missing.
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "installing: cargo-nextest (crates.io)" >&2
  cargo install --locked cargo-nextest
fi
# --no-fail-fast: one failing test must not hide the others' results.
# Arguments pass through: ./scripts/test.sh -p scalelab --test profile
cargo nextest run --workspace --all-targets --no-fail-fast "$@"
