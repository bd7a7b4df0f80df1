#!/usr/bin/env bash
# What the durable path's PostgreSQL work costs on this machine, before any speed claim is read
# (bench/rounds/07-cheap-flush.md and 08-slow-noisy-machine.md): a round trip, a WAL flush (a one-row insert with
# synchronous_commit on, then off), one open through sy_ledger_group back to back, the same after 35 ms idle (the rhythm
# of the harness's streamed case), and a pair (an open with the previous open's close: the batch concurrency 1 makes).
# pgbench, one client, on a scratch database migrated like the service's.
#
#   bash bench/pg-costs.sh                     # 4 s per measurement
#   SECONDS_EACH=8 SKIP_BUILD=1 bash bench/pg-costs.sh
#
# Environment: PG_COSTS_DATABASE_URL (postgresql://postgres@127.0.0.1:5432/sy_pg_costs; dropped and re-created).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DB_URL=${PG_COSTS_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/sy_pg_costs}
EACH=${SECONDS_EACH:-4}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"
command -v pgbench >/dev/null || { echo "pgbench not found (Debian: postgresql-client)"; exit 1; }

[ -n "${SKIP_BUILD:-}" ] || npm run -s build
node -e "require('./dist/bench/children').resetDatabase(process.argv[1]).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); })" "$DB_URL"
ORG=$(DATABASE_URL=$DB_URL node bin/switchyard.js org create --name pg-costs --balance 100000000 --json | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).organizationId')
# A key, as the harness's requests carry one (its row is locked and updated with the organization's).
KEY_ID=$(DATABASE_URL=$DB_URL node bin/switchyard.js key create --org "$ORG" --json | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).id')
psql "$DB_URL" -qc 'CREATE TABLE pg_costs_rows (id bigserial PRIMARY KEY, v int)'

OPEN="SELECT * FROM sy_ledger_group(('[{\"id\":\"pgc_' || :n || '_' || :client_id || '\",\"organization_id\":\"$ORG\",\"api_key_id\":\"$KEY_ID\",\"bound\":\"0.001\",\"minimum\":\"0.001\",\"model\":\"bench/mini\",\"unified_model_id\":\"bench/mini\",\"request_type\":\"chat\",\"api_type\":\"chat_completions\",\"response_mode\":\"sync\",\"request\":{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}}]')::jsonb, '[]'::jsonb, now());"
echo 'SELECT 1;' >"$WORK/round-trip.sql"
echo 'INSERT INTO pg_costs_rows (v) VALUES (1);' >"$WORK/insert.sql"
printf '\\set n random(1, 1000000000)\n%s\n' "$OPEN" >"$WORK/open.sql"
printf '\\set n random(1, 1000000000)\n\\sleep 35 ms\n%s\n' "$OPEN" >"$WORK/open-idle.sql"
# A pair, as at concurrency 1: this request's open with the previous request's close held in the same batch (the
# close's generation opened by the script's first statement; only the second is read).
CLOSE="[{\"id\":\"pgc_' || :n || '_' || :client_id || '\",\"cost\":\"0.0004\",\"status\":\"completed\",\"result\":{\"text\":\"hi\"},\"usage\":{\"input_tokens\":3,\"output_tokens\":2},\"provider\":\"mock\",\"latency_ms\":3}]"
PAIR=${OPEN/pgc_\' || :n/pgc_b\' || :n}
PAIR=${PAIR/\'[]\'::jsonb/(\'$CLOSE\')::jsonb}
printf '\\set n random(1, 1000000000)\n%s\n%s\n' "$OPEN" "$PAIR" >"$WORK/pair.sql"

# The mean of the script's last statement (pgbench -r), in ms.
measure() {
  local script=$1 options=${2:-}
  PGOPTIONS=$options pgbench "$DB_URL" -n -T "$EACH" -c 1 -r -f "$WORK/$script" 2>/dev/null |
    awk '/statement latencies/ { on = 1; next } on && NF { last = $1 } END { print last }'
}

printf '%-58s %s\n' 'PostgreSQL, one client (pgbench)' 'ms'
printf '%-58s %s\n' 'round trip (SELECT 1)' "$(measure round-trip.sql)"
printf '%-58s %s\n' 'one-row insert, synchronous_commit on' "$(measure insert.sql '-c synchronous_commit=on')"
printf '%-58s %s\n' 'one-row insert, synchronous_commit off' "$(measure insert.sql '-c synchronous_commit=off')"
printf '%-58s %s\n' 'one open through sy_ledger_group, back to back' "$(measure open.sql)"
printf '%-58s %s\n' 'one open through sy_ledger_group, after 35 ms idle' "$(measure open-idle.sql)"
printf '%-58s %s\n' 'one open with the previous close (sy_ledger_group pair)' "$(measure pair.sql)"
# The same pair timed inside the server (no round trip, no commit, no wake-up of another process: the steadiest of
# these figures on a noisy machine), over 2,000 pairs that each commit, by a procedure of the scratch database.
psql "$DB_URL" -qv ON_ERROR_STOP=1 <<SQL
CREATE PROCEDURE pg_costs_pairs(n int, INOUT pair_ms numeric DEFAULT 0)
LANGUAGE plpgsql AS \$\$
DECLARE i int; t0 timestamptz; spent interval := '0'; o jsonb; prev text;
BEGIN
  FOR i IN 1..n LOOP
    o := jsonb_build_object('id', 'pgp_' || i, 'organization_id', '$ORG', 'api_key_id', '$KEY_ID', 'bound', '0.001',
      'minimum', '0.001', 'model', 'bench/mini', 'unified_model_id', 'bench/mini',       'request_type', 'chat', 'api_type', 'chat_completions', 'response_mode', 'sync', 'request', '{"messages":[]}'::jsonb);
    t0 := clock_timestamp();
    PERFORM * FROM sy_ledger_group(jsonb_build_array(o), CASE WHEN prev IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(
      jsonb_build_object('id', prev, 'cost', '0.0004', 'status', 'completed', 'result', '{"text":"hi"}'::jsonb,
                         'usage', '{"input_tokens":3,"output_tokens":2}'::jsonb, 'provider', 'mock', 'latency_ms', 3)) END, now());
    IF prev IS NOT NULL THEN spent := spent + (clock_timestamp() - t0); END IF;
    COMMIT;
    prev := 'pgp_' || i;
  END LOOP;
  pair_ms := round((extract(epoch FROM spent) * 1000 / (n - 1))::numeric, 3);
END
\$\$;
SQL
printf '%-58s %s\n' 'the pair inside the server (no round trip, no commit)' "$(psql "$DB_URL" -qAtc 'CALL pg_costs_pairs(2000)')"
echo 'The insert rows differ by what one WAL flush costs here.'
psql "${DB_URL%/*}/postgres" -qc "DROP DATABASE IF EXISTS \"${DB_URL##*/}\"" >/dev/null 2>&1 || true
