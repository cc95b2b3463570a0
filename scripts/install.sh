#!/usr/bin/env bash
# Installs scalelab: the release binary (no debug info, symbol table kept), shell completions (bash,
# zsh, fish) and the man pages, all generated from the same clap definitions.
#
#   ./scripts/install.sh                 # as root: under /usr/local; otherwise under ~/.local
#   ./scripts/install.sh --prefix DIR    # binary in DIR/bin, completions and man pages in DIR/share
#
# SCALELAB_BIN=PATH installs that binary instead of building one (the tests
# use it; so can a packager who built with `cargo build --release`).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ]; then prefix=/usr/local; else prefix="$HOME/.local"; fi
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || { echo "error: --prefix needs a directory" >&2; exit 2; }; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument '$1' (usage: install.sh [--prefix DIR])" >&2; exit 2 ;;
  esac
done

bin="$prefix/bin/scalelab"
if [ -n "${SCALELAB_BIN:-}" ]; then
  install -D -m 0755 "$SCALELAB_BIN" "$bin"
else
  cargo install --path crates/cli --locked --root "$prefix" --force
fi

share="$prefix/share"
install -d "$share/bash-completion/completions" "$share/zsh/site-functions" \
  "$share/fish/vendor_completions.d" "$share/man/man1"
"$bin" completions bash > "$share/bash-completion/completions/scalelab"
"$bin" completions zsh > "$share/zsh/site-functions/_scalelab"
"$bin" completions fish > "$share/fish/vendor_completions.d/scalelab.fish"
"$bin" man --dir "$share/man/man1"

echo "installed $bin"
echo "completions: $share/{bash-completion/completions,zsh/site-functions,fish/vendor_completions.d}"
echo "man pages: $share/man/man1 (man scalelab, man scalelab-sweep)"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "note: $prefix/bin is not on PATH; add it: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
