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
# shellcheck source=bench/bench-service.sh
. "$ROOT/bench/bench-service.sh"

taskset -c 0 node "$PEERS/mock-openai.mjs" >"$WORK/mock.log" 2>&1 &
MOCK_PID=$!
disown "$MOCK_PID"
bench_stopped() { kill -KILL "$MOCK_PID" 2>/dev/null || true; }
start_switchyard cost-per-request taskset -c 1
[ -z "${SQL_BEFORE:-}" ] || psql "$DB_URL" -qc "$SQL_BEFORE"

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
