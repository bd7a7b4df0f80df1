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
# shellcheck source=bench/bench-service.sh
. "$ROOT/bench/bench-service.sh"
start_switchyard side-by-side

cd "$PEERS"
TARGET_NAME=switchyard TARGET_PID=$SY_PID TARGET_PIN_EXCLUDE='^(postgres|redis-server)$' BENCH_MODEL=bench/mini \
  CONCURRENCY=${CONCURRENCY:-'1 32'} DURATION=${DURATION:-8} WARMUP=${WARMUP:-2} STREAM_CONC=${STREAM_CONC:-'1 16'} \
  bash run.sh "http://127.0.0.1:$PORT/v1" "Authorization: Bearer $KEY"
