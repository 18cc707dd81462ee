#!/usr/bin/env bash
# Interop check: the MCP Inspector CLI (pinned in tools/npm) against
# examples/everything, over Streamable HTTP (a running server) or over stdio
# (the Inspector launches `BINARY --stdio` itself), in the modern era
# (2026-07-28) or the legacy one (the 2025 handshake).
#
# Usage: interop/inspector.sh URL|stdio:BINARY SCRATCH-DIR [modern|legacy]
#        (mcp-inspector and node on PATH; the era defaults to modern)
# The Inspector reads and writes its catalog, client config and secrets: all
# of them go to SCRATCH-DIR, never to the user's home.
#
# Prints one `PASS inspector[ERA] check` (over stdio `inspector-stdio[ERA]`)
# or `FAIL … check: reason` line per check; exits non-zero if any failed.
set -uo pipefail
target=$1
scratch=$2
era=${3:-modern}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$scratch/home"
export HOME=$scratch/home
export MCP_CATALOG_PATH=$scratch/catalog.json
export MCP_CLIENT_CONFIG_PATH=$scratch/client.json
export MCP_INSPECTOR_SECRET_STORE=memory
root_uri=file:///tmp/wymcp-interop-root

case $era in
    modern | legacy) ;;
    *)
        echo "usage: inspector.sh URL|stdio:BINARY SCRATCH-DIR [modern|legacy]" >&2
        exit 2
        ;;
esac
# The catalog names the server (a URL, or the command the Inspector
# launches), pins the era, and gives the roots the Inspector answers an
# embedded roots/list with (its CLI declares roots but not elicitation or
# sampling, so roots is the MRTR round it can finish).
if [[ $target == stdio:* ]]; then
    tag="inspector-stdio[$era]"
    server="\"type\": \"stdio\", \"command\": \"${target#stdio:}\", \"args\": [\"--stdio\"]"
else
    tag="inspector[$era]"
    server="\"type\": \"streamable-http\", \"url\": \"$target\""
fi
cat >"$MCP_CATALOG_PATH" <<EOF
{"mcpServers": {"everything": {$server,
  "protocolEra": "$era",
  "roots": [{"uri": "$root_uri", "name": "interop"}]}}}
EOF

failed=0
n=0
# check NAME JS-ASSERTION INSPECTOR-ARGS...: runs the Inspector; the assertion
# is a JavaScript expression over `r` (the parsed JSON output) that yields an
# error string, or '' when the output is right.
check() {
    local name=$1 assertion=$2
    shift 2
    n=$((n + 1))
    local out=$scratch/out-$n.json err=$scratch/err-$n.txt
    timeout 60 mcp-inspector --cli -q --server everything --format json "$@" >"$out" 2>"$err"
    local rc=$?
    if ((rc != 0)); then
        failed=$((failed + 1))
        echo "FAIL $tag $name: exit $rc — $(cat "$out" "$err" | grep -v '^\[mcp-inspector\]' | tr '\n' ' ' | cut -c1-400)"
        return
    fi
    local why
    why=$(node "$here/inspector-assert.mjs" "$out" "$assertion" 2>&1)
    if [[ -n $why ]]; then
        failed=$((failed + 1))
        echo "FAIL $tag $name: $why"
    else
        echo "PASS $tag $name"
    fi
}

# serverInfo in a result's _meta is 2026-era only: a legacy fallback would
# lack it, and a legacy session must not have it.
if [[ $era == modern ]]; then
    era_check="!r.result?._meta?.['io.modelcontextprotocol/serverInfo'] ? 'no _meta serverInfo: not the 2026 era' : ''"
else
    era_check="r.result?._meta?.['io.modelcontextprotocol/serverInfo'] ? '_meta serverInfo: not the 2025 era' : ''"
fi
check "tools/list" \
    "r.result?.tools?.some(t => t.name === 'test_simple_text') ? '' : 'test_simple_text not listed'" \
    --method tools/list
check "tools/call test_simple_text ($era era)" \
    "r.result?.isError ? 'isError' : !r.result?.content?.[0]?.text ? 'no text content' : $era_check" \
    --method tools/call --tool-name test_simple_text
check "resources/read test://static-text" \
    "r.result?.contents?.[0]?.text ? '' : 'no text contents'" \
    --method resources/read --uri test://static-text
check "prompts/get test_prompt_with_arguments" \
    "JSON.stringify(r.result?.messages ?? []).includes('alpha') ? '' : 'argument not in messages'" \
    --method prompts/get --prompt-name test_prompt_with_arguments --prompt-args arg1=alpha arg2=beta
[[ $era == legacy ]] || check "MRTR round (roots) tools/call test_input_required_result_list_roots" \
    "r.result?.isError ? 'isError' : JSON.stringify(r.result?.content ?? []).includes('$root_uri') ? '' : 'result does not reference the roots the client gave'" \
    --method tools/call --tool-name test_input_required_result_list_roots

exit $((failed > 0))
