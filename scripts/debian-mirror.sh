#!/usr/bin/env bash
# Prints the Debian mirror the machine's own apt sources name (deb822
# /etc/apt/sources.list.d/*.sources, else one-line sources.list): the main
# archive, or with --security the security archive. The repository names no
# mirror of its own: scripts/servers.sh, scripts/upstream-suite.sh and
# scripts/test-deps.sh fetch from this one.
set -euo pipefail
want=main
[[ "${1:-}" == --security ]] && want=security
uris=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' || true)
if [[ -z "$uris" ]]; then
  uris=$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}' || true)
fi
if [[ "$want" == security ]]; then
  uri=$(grep -m1 security <<<"$uris" || true)
else
  uri=$(grep -v security <<<"$uris" | head -n1 || true)
fi
[[ -n "$uri" ]] || { echo "no Debian $want mirror found in the apt sources" >&2; exit 1; }
echo "${uri%/}"
