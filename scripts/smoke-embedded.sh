#!/usr/bin/env bash
# Starts the service on the embedded default, sends one message, checks readiness, stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
# A port the OS hands out now, unless one is given: a fixed port can be held by anything on a shared runner,
# including an outgoing connection that happened to get it as its local port.
port="${SMOKE_PORT:-$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})")}"
data_dir="$(mktemp -d)"
log="$(mktemp)"
# Build first, then run node itself (not through npm) so the cleanup signal reaches the server.
node scripts/build-if-needed.js
PORT="$port" DATA_DIR="$data_dir" LOG_LEVEL=warn node dist/apps/agent-runtime/src/main.js >"$log" 2>&1 &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$data_dir" "$log"; }
trap cleanup EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$port/health/live" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "smoke: server exited"; exit 1; }
  sleep 1
done
ready=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health/ready")
[ "$ready" = "200" ] || { tail -50 "$log"; curl -s "http://127.0.0.1:$port/health/ready"; echo "smoke: readiness answered $ready"; exit 1; }
reply=$(curl -s -X POST "http://127.0.0.1:$port/v1/channels/web/messages" -H 'content-type: application/json' \
  -d '{"tenant_id":"smoke","agent_id":"telecom_contas","session_id":"smoke-1","text":"Qual é o meu plano?"}' || true)
echo "$reply" | grep -q '"turn":1' || { tail -50 "$log"; echo "smoke: unexpected reply $reply"; exit 1; }
curl -sf "http://127.0.0.1:$port/console/" | grep -q '<div id="root">' || { echo "smoke: /console/ is not served"; exit 1; }
echo "smoke: ok ($reply)" | cut -c1-300
