# Sourced by bench/side-by-side.sh and bench/cost-per-request.sh: Switchyard from dist/ on the machine's PostgreSQL
# and Redis, with a one-model catalog (`bench/mini`) whose endpoint is the bench-peers harness's mock on port 18000.
#
# start_switchyard NAME [LAUNCH...]: builds (unless SKIP_BUILD), drops and re-creates the database at DB_URL, clears the
# Redis keys under PREFIX, starts `LAUNCH node SY_NODE_ARGS SY_ENTRY` (LAUNCH: a command prefix such as `taskset -c 1`;
# SY_NODE for the Node binary) on PORT, waits for /readyz, and makes an organization and a key without a rate limit.
# Exports the service's settings (DATABASE_URL, ...). Sets SY_PID and KEY; an EXIT trap stops the service, clears its Redis keys, keeps its log in SY_LOG when given, runs
# `bench_stopped` when the caller defines it, and removes WORK. Needs ROOT, DB_URL, REDIS, PORT, PREFIX and WORK.
start_switchyard() {
  local name=$1
  shift
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

  # The service's settings, and the CLI's below (the same database and secret).
  export DATABASE_URL=$DB_URL REDIS_URL=$REDIS QUEUE_PREFIX=$PREFIX SWITCHYARD_CATALOG=$WORK/catalog.json BENCH_PROVIDER_KEY=bench \
    WEB_CONCURRENCY=${WEB_CONCURRENCY:-1} PORT=$PORT SWITCHYARD_SECRET=$name-bench-secret-0123456789abcdef LOG_LEVEL=warn
  # shellcheck disable=SC2086
  "$@" "${SY_NODE:-node}" ${SY_NODE_ARGS:-} "${SY_ENTRY:-dist/bin/start.js}" >"$WORK/switchyard.log" 2>&1 &
  SY_PID=$!
  trap stop_switchyard EXIT
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null || { cat "$WORK/switchyard.log"; exit 1; }

  local org
  org=$(node bin/switchyard.js org create --name "$name" --balance 100000000 --json | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).organizationId')
  KEY=$(node bin/switchyard.js key create --org "$org" --rate-limit 0 --json | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).key')
}

stop_switchyard() {
  kill -INT "$SY_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$SY_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SY_PID" 2>/dev/null || true
  redis-cli -u "$REDIS" --scan --pattern "$PREFIX*" | xargs -r redis-cli -u "$REDIS" del >/dev/null || true
  if [ -n "${SY_LOG:-}" ]; then cp "$WORK/switchyard.log" "$SY_LOG" 2>/dev/null || true; fi
  if declare -F bench_stopped >/dev/null; then bench_stopped; fi
  rm -rf "$WORK"
}
