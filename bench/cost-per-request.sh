#!/usr/bin/env bash
# What one request costs each process on this machine: the gateway's CPU (user and system), PostgreSQL's and Redis's,
# per non-streaming chat completion, at each concurrency, in REPS consecutive windows of the same process (so the JIT's
# warm-up, or the machine's drift, shows). The side-by-side harness counts the gateway's process tree only: PostgreSQL
# and Redis run beside it, in its `unattr%`. Same layout as the harness: the mock and the load generator on CPU 0, the
# gateway on CPU 1, PostgreSQL and Redis free. PostgreSQL's and Redis's CPU is their servers' whole: run it alone.
#
#   bash bench/cost-per-request.sh                       # c=1 and 32, 5 s windows, 3 of them, after 10 s at 32
#   CONCURRENCY=1 REPS=8 SKIP_BUILD=1 bash bench/cost-per-request.sh
#   SQL_BEFORE='DROP INDEX generations_api_key_id_status_created_at_idx' bash bench/cost-per-request.sh
#
# Needs `bash ../shared/bench-peers/setup.sh` once per machine (the mock, the load generator). Environment:
# BENCH_PEERS, COST_DATABASE_URL (postgresql://postgres@127.0.0.1:5432/sy_cost; dropped and re-created),
# BENCH_REDIS_URL, SY_PORT (3978), SY_NODE_ARGS, SY_ENTRY, WARM_S (10), DURATION (5), REPS (3), SQL_BEFORE (run on the
# migrated database before the load: an experiment).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEERS=${BENCH_PEERS:-$ROOT/../shared/bench-peers}
DB_URL=${COST_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/sy_cost}
REDIS=${BENCH_REDIS_URL:-redis://127.0.0.1:6379}
PORT=${SY_PORT:-3978}
PREFIX='{sycost}'
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

taskset -c 0 node "$PEERS/mock-openai.mjs" >"$WORK/mock.log" 2>&1 &
MOCK_PID=$!
disown "$MOCK_PID"
export DATABASE_URL=$DB_URL REDIS_URL=$REDIS QUEUE_PREFIX=$PREFIX SWITCHYARD_CATALOG=$WORK/catalog.json BENCH_PROVIDER_KEY=bench \
  WEB_CONCURRENCY=1 PORT=$PORT SWITCHYARD_SECRET=cost-per-request-bench-secret-0123456789abcdef LOG_LEVEL=warn
# shellcheck disable=SC2086
taskset -c 1 node ${SY_NODE_ARGS:-} "${SY_ENTRY:-dist/bin/start.js}" >"$WORK/switchyard.log" 2>&1 &
SY_PID=$!
stop() {
  kill -INT "$SY_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$SY_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SY_PID" "$MOCK_PID" 2>/dev/null || true
  redis-cli -u "$REDIS" --scan --pattern "$PREFIX*" | xargs -r redis-cli -u "$REDIS" del >/dev/null || true
  rm -rf "$WORK"
}
trap stop EXIT
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null || { cat "$WORK/switchyard.log"; exit 1; }
[ -z "${SQL_BEFORE:-}" ] || psql "$DB_URL" -qc "$SQL_BEFORE"

ORG=$(node bin/switchyard.js org create --name cost --balance 100000000 --json | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).organizationId')
KEY=$(node bin/switchyard.js key create --org "$ORG" --rate-limit 0 --json | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).key')
export WRK_BODY='{"model":"bench/mini","messages":[{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":16}'
URL="http://127.0.0.1:$PORT/v1/chat/completions"
load() { taskset -c 0 node "$PEERS/loadgen.mjs" "$URL" -c "$1" -d "$2" -H "Authorization: Bearer $KEY"; }

# Clock ticks (user, system) of a process and its threads; PostgreSQL's: the server's whole process tree (the
# postmaster's own and its children's, live or ended: a pooled connection closed meanwhile counts too); Redis's.
ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
PM_PID=$(pgrep -o -x postgres)
pg_ticks() {
  local s p
  s=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$PM_PID/stat")
  for p in $(pgrep -P "$PM_PID" || true); do s=$((s + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
  echo "$s"
}
redis_ticks() { awk '{print $14 + $15}' "/proc/$(pgrep -x redis-server | head -1)/stat"; }
TCK=$(getconf CLK_TCK)

load 32 "${WARM_S:-10}" >/dev/null
printf '%-5s %-4s %8s %9s %9s %9s %9s %9s\n' conc rep req/s p50_ms gw_user gw_sys postgres redis
for c in ${CONCURRENCY:-1 32}; do
  for rep in $(seq 1 "${REPS:-3}"); do
    read -r u0 s0 < <(ticks "$SY_PID"); p0=$(pg_ticks); r0=$(redis_ticks)
    out=$(load "$c" "${DURATION:-5}")
    read -r u1 s1 < <(ticks "$SY_PID"); p1=$(pg_ticks); r1=$(redis_ticks)
    n=$(sed -n 's/.*"requests":\([0-9]*\).*/\1/p' <<<"$out")
    p50=$(sed -n 's/.*"p50_us":\([0-9]*\).*/\1/p' <<<"$out")
    awk -v c="$c" -v rep="$rep" -v n="$n" -v d="${DURATION:-5}" -v p50="$p50" -v t="$TCK" \
      -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v r=$((r1 - r0)) \
      'BEGIN { k = 1e6 / t / n; printf "%-5s %-4s %8.0f %9.2f %9.0f %9.0f %9.0f %9.0f\n", c, rep, n / d, p50 / 1000, u * k, s * k, p * k, r * k }'
  done
done
echo "(CPU in µs per request: the gateway's process, PostgreSQL's server, Redis's)"
