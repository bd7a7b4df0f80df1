#!/usr/bin/env bash
# The side-by-side run of issue 12 in one command: direct, Portkey and Switchyard through ../shared/bench-peers
# (or BENCH_PEERS), one run. Builds Switchyard, starts it from dist/ on the machine's PostgreSQL and Redis with a
# one-model catalog pointing at the harness's mock, makes an organization and a key, runs the harness, cleans up.
#
#   bash bench/side-by-side.sh                 # CONCURRENCY='1 32', streams at 1 and 16, 8 s per case
#   SKIP_PORTKEY=1 DURATION=5 bash bench/side-by-side.sh
#
# Needs `bash ../shared/bench-peers/setup.sh` once per machine (Portkey and wrk into /tmp/peers).
# Environment: BENCH_DATABASE_URL (postgresql://postgres@127.0.0.1:5432/sy_peers; dropped and re-created),
# BENCH_REDIS_URL (redis://127.0.0.1:6379), SY_PORT (3977), SY_NODE (the Node binary Switchyard alone runs on, e.g.
# Node 26 as the Dockerfile's image; default `node`), SY_NODE_ARGS (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof),
# WEB_CONCURRENCY (1: one process, API and workers, on the gateway core), SY_ENTRY (the script started in Switchyard's
# place: dist/bench/floor.js measures the guarantees' floor), SY_LOG (a file to keep the gateway's log in, e.g. with
# SY_NODE_ARGS=--trace-gc-nvp), SKIP_BUILD=1 (run dist/ as it is), and every knob of run.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEERS=${BENCH_PEERS:-$ROOT/../shared/bench-peers}
DB_URL=${BENCH_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/sy_peers}
REDIS=${BENCH_REDIS_URL:-redis://127.0.0.1:6379}
PORT=${SY_PORT:-3977}
PREFIX='{sypeers}'
WORK=$(mktemp -d)
cd "$ROOT"

cat >"$WORK/catalog.json" <<'EOF'
{
  "providers": { "mock": { "kind": "openai", "baseUrl": "http://127.0.0.1:18000/v1", "apiKeyEnv": "BENCH_PROVIDER_KEY", "timeoutMs": 30000 } },
  "models": {
    "bench/mini": {
      "displayName": "Bench mini",
      "type": "chat",
      "endpoints": [
        { "provider": "mock", "upstreamModel": "gpt-4o-mini", "price": { "prompt": "10", "completion": "40", "request": "0" },
          "supports": ["max_tokens", "stream", "temperature"], "contextLength": 128000, "maxOutputTokens": 16384 }
      ]
    }
  }
}
EOF

[ -n "${SKIP_BUILD:-}" ] || npm run -s build
node -e "require('./dist/bench/children').resetDatabase(process.argv[1]).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); })" "$DB_URL"
redis-cli -u "$REDIS" --scan --pattern "$PREFIX*" | xargs -r redis-cli -u "$REDIS" del >/dev/null

export DATABASE_URL=$DB_URL REDIS_URL=$REDIS QUEUE_PREFIX=$PREFIX SWITCHYARD_CATALOG=$WORK/catalog.json BENCH_PROVIDER_KEY=bench \
  WEB_CONCURRENCY=${WEB_CONCURRENCY:-1} PORT=$PORT SWITCHYARD_SECRET=side-by-side-bench-secret-0123456789abcdef LOG_LEVEL=warn
# shellcheck disable=SC2086
"${SY_NODE:-node}" ${SY_NODE_ARGS:-} "${SY_ENTRY:-dist/bin/start.js}" >"$WORK/switchyard.log" 2>&1 &
SY_PID=$!
stop() {
  kill -INT "$SY_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$SY_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SY_PID" 2>/dev/null || true
  redis-cli -u "$REDIS" --scan --pattern "$PREFIX*" | xargs -r redis-cli -u "$REDIS" del >/dev/null || true
  if [ -n "${SY_LOG:-}" ]; then cp "$WORK/switchyard.log" "$SY_LOG" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap stop EXIT
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null || { cat "$WORK/switchyard.log"; exit 1; }

ORG=$(node bin/switchyard.js org create --name bench --balance 100000000 --json | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).organizationId')
KEY=$(node bin/switchyard.js key create --org "$ORG" --rate-limit 0 --json | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).key')

cd "$PEERS"
TARGET_NAME=switchyard TARGET_PID=$SY_PID TARGET_PIN_EXCLUDE='^(postgres|redis-server)$' BENCH_MODEL=bench/mini \
  CONCURRENCY=${CONCURRENCY:-'1 32'} DURATION=${DURATION:-8} WARMUP=${WARMUP:-2} STREAM_CONC=${STREAM_CONC:-'1 16'} \
  bash run.sh "http://127.0.0.1:$PORT/v1" "Authorization: Bearer $KEY"
