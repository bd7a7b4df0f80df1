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
#   STREAM=1 CONCURRENCY=16 SKIP_BUILD=1 bash bench/cost-per-request.sh             # streamed, as the harness's case
#   TARGET=portkey STREAM=1 CONCURRENCY=16 bash bench/cost-per-request.sh            # Portkey in the gateway's place
#
# STREAM=1: streamed chat completions, the mock waiting 5 ms between its events (the harness's streamed case),
# STREAM_N of them a window (3000; the warm-up: 300 at 32), through the harness's stream probe; the p50 is the whole
# stream's. The last column is the whole machine's busy CPU (both cores: load generator, mock, kernel, everything) a
# request.
#
# Needs `bash ../shared/bench-peers/setup.sh` once per machine (the mock, the load generator). Environment:
# BENCH_PEERS, COST_DATABASE_URL (postgresql://postgres@127.0.0.1:5432/sy_cost; dropped and re-created),
# BENCH_REDIS_URL, SY_PORT (3978), SY_NODE_ARGS, SY_ENTRY, WARM_S (10), DURATION (5), REPS (3), SQL_BEFORE (run on the
# migrated database before the load: an experiment), STREAM, STREAM_N, TARGET (switchyard or portkey; Portkey from
# PEERS_DIR, /tmp/peers, as the harness installs it).
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

STREAM=${STREAM:-}
MOCK_CHUNK_DELAY_MS=$([ -n "$STREAM" ] && echo 5 || echo 0) taskset -c 0 node "$PEERS/mock-openai.mjs" >"$WORK/mock.log" 2>&1 &
MOCK_PID=$!
disown "$MOCK_PID"
if [ "${TARGET:-switchyard}" = portkey ]; then
  taskset -c 1 node "${PEERS_DIR:-/tmp/peers}/node_modules/@portkey-ai/gateway/build/start-server.js" --port="$PORT" --headless >"$WORK/portkey.log" 2>&1 &
  SY_PID=$!
  trap 'kill -KILL "$SY_PID" "$MOCK_PID" 2>/dev/null || true; rm -rf "$WORK"' EXIT
  for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.2; done
  HEADERS=(-H "x-portkey-provider: openai" -H "x-portkey-custom-host: http://127.0.0.1:18000/v1" -H "Authorization: Bearer sk-mock")
  MODEL=gpt-4o-mini
else
  bench_stopped() { kill -KILL "$MOCK_PID" 2>/dev/null || true; }
  start_switchyard cost-per-request taskset -c 1
  [ -z "${SQL_BEFORE:-}" ] || psql "$DB_URL" -qc "$SQL_BEFORE"
  HEADERS=(-H "Authorization: Bearer $KEY")
  MODEL=bench/mini
fi

export WRK_BODY='{"model":"'$MODEL'","messages":[{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":16}'
export STREAM_BODY='{"model":"'$MODEL'","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":16}'
URL="http://127.0.0.1:$PORT/v1/chat/completions"
# One window: a line of JSON with `requests`, `rps` and `p50_us` (the stream probe's `total_p50_us`, renamed).
load() {
  if [ -n "$STREAM" ]; then
    taskset -c 0 node "$PEERS/ttfb.mjs" "$URL" "${HEADERS[@]}" -n "$3" -c "$1" --warmup 0 | sed 's/"total_p50_us"/"p50_us"/'
  else
    taskset -c 0 node "$PEERS/loadgen.mjs" "$URL" -c "$1" -d "$2" "${HEADERS[@]}"
  fi
}

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
# Every core's busy ticks (user, nice, system, irq, softirq).
machine_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
TCK=$(getconf CLK_TCK)
STREAM_N=${STREAM_N:-3000}

load 32 "${WARM_S:-10}" 300 >/dev/null
printf '%-5s %-4s %8s %9s %9s %9s %9s %9s %9s\n' conc rep req/s p50_ms gw_user gw_sys postgres redis machine
for c in ${CONCURRENCY:-1 32}; do
  for rep in $(seq 1 "${REPS:-3}"); do
    read -r u0 s0 < <(ticks "$SY_PID"); p0=$(pg_ticks); r0=$(redis_ticks); m0=$(machine_ticks)
    out=$(load "$c" "${DURATION:-5}" "$STREAM_N")
    read -r u1 s1 < <(ticks "$SY_PID"); p1=$(pg_ticks); r1=$(redis_ticks); m1=$(machine_ticks)
    n=$(sed -n 's/.*"requests":\([0-9]*\).*/\1/p' <<<"$out")
    rps=$(sed -n 's/.*"rps":\([0-9.]*\).*/\1/p' <<<"$out")
    p50=$(sed -n 's/.*"p50_us":\([0-9]*\).*/\1/p' <<<"$out")
    awk -v c="$c" -v rep="$rep" -v n="$n" -v rps="$rps" -v p50="$p50" -v t="$TCK" \
      -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v r=$((r1 - r0)) -v m=$((m1 - m0)) \
      'BEGIN { k = 1e6 / t / n; printf "%-5s %-4s %8.0f %9.2f %9.0f %9.0f %9.0f %9.0f %9.0f\n", c, rep, rps, p50 / 1000, u * k, s * k, p * k, r * k, m * k }'
  done
done
echo "(CPU in µs per request: the gateway's process, PostgreSQL's server, Redis's, the whole machine's)"
