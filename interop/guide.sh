#!/usr/bin/env bash
# Interop check: the client snippets of docs/guide.md section 16 (curl, the
# Python SDK, the TypeScript SDK), run as printed against examples/notes,
# with its URL and writer token put in for the guide's
# http://127.0.0.1:3000/mcp and `Bearer W`. Each must list the writer's tools.
#
# Usage: interop/guide.sh URL WRITER_TOKEN SCRATCH-DIR
#        (node on PATH; PY, else python3, with mcp installed; WYMCP_TOOLS_NPM
#        the folder scripts/tools.sh installed tools/npm into)
# Prints one `PASS guide-clients NAME` or `FAIL guide-clients NAME: reason`
# line per snippet; exits non-zero if any failed.
set -uo pipefail
url=$1
writer=$2
scratch=$3
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$scratch"
# The ESM import of '@modelcontextprotocol/client' resolves from the script's
# folder up: give the scratch folder the pinned node_modules.
ln -sfn "${WYMCP_TOOLS_NPM:?}/node_modules" "$scratch/node_modules"

# block LANG: the first ```LANG block after "## 16. Clients", the URL and the
# token put in.
block() {
    awk -v lang="$1" '
        /^## 16\. Clients/ { on = 1 }
        on && $0 == "```" lang { inside = 1; next }
        inside && $0 == "```" { exit }
        inside { print }
    ' "$root/docs/guide.md" |
        sed -e "s|http://127.0.0.1:3000/mcp|$url|g" -e "s|Bearer W'|Bearer $writer'|g" \
            -e "s|Bearer W\"|Bearer $writer\"|g"
}

failed=0
check() {
    local name=$1 file=$2
    shift 2
    if [[ ! -s $file ]]; then
        echo "FAIL guide-clients $name: no such block in docs/guide.md section 16"
        failed=1
        return
    fi
    local out
    out=$(cd "$scratch" && timeout 60 "$@" "$file" 2>&1)
    if [[ $out == *add_note* && $out == *search_notes* && $out == *delete_note* ]]; then
        echo "PASS guide-clients $name"
    else
        echo "FAIL guide-clients $name: $(echo "$out" | tail -n 5 | tr '\n' ' ' | cut -c1-600)"
        failed=1
    fi
}

block sh >"$scratch/curl.sh"
check curl "$scratch/curl.sh" bash
block python >"$scratch/client.py"
check python "$scratch/client.py" "${PY:-python3}"
block js >"$scratch/client.mjs"
check typescript "$scratch/client.mjs" node
exit $failed
