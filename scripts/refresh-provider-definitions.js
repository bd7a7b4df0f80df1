#!/usr/bin/env node
/**
 * Refreshes the provider definitions the fake providers validate requests against (fakes/definitions/README.md).
 *
 *   node scripts/refresh-provider-definitions.js --openai <openai/openai-openapi checkout or its openapi.json>
 *       [--anthropic <anthropics/anthropic-sdk-typescript checkout>] [--gemini <googleapis/js-genai checkout>]
 *
 * OpenAI: the request schemas of the operations the fakes serve are extracted from the OpenAPI document with every
 * schema they reach (descriptions, examples and extensions stripped, OpenAPI's `nullable` made JSON Schema, `oneOf`
 * read as `anyOf`: the document's alternatives overlap) into
 * fakes/definitions/openai-requests.json. Anthropic and Gemini publish TypeScript types, not schemas: our schemas of
 * them (fakes/definitions/anthropic-requests.json, gemini-requests.json) are written by hand from those types; this
 * script compares their top-level fields with the types' and records the source version it was checked against.
 * A checkout may be a plain directory or a bare git directory (its HEAD is read).
 */
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const OUT = path.join(__dirname, '..', 'fakes', 'definitions');
/** The OpenAI operations the fake serves → their request schema in the OpenAPI document. */
const OPENAI_REQUESTS = {
  'POST /chat/completions': 'CreateChatCompletionRequest',
  'POST /responses': 'CreateResponse',
  'POST /embeddings': 'CreateEmbeddingRequest',
  'POST /images/generations': 'CreateImageRequest',
  'POST /batches': 'CreateBatchRequest',
};
/** Keywords that say nothing a validator checks. */
const DROP = new Set(['description', 'title', 'example', 'examples', 'default', 'deprecated', 'discriminator', 'readOnly', 'writeOnly', 'externalDocs', 'xml']);

function args() {
  const out = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, '')] = argv[i + 1];
  return out;
}

/** A file of a checkout: from its work tree, else from the HEAD of a (bare) git directory. */
function readSource(root, file) {
  if (fs.statSync(root).isFile()) return fs.readFileSync(root, 'utf8');
  const plain = path.join(root, file);
  if (fs.existsSync(plain)) return fs.readFileSync(plain, 'utf8');
  return execFileSync('git', ['--git-dir', root, 'show', `HEAD:${file}`], { encoding: 'utf8', maxBuffer: 64 << 20 });
}

function commitOf(root) {
  try {
    const gitDir = fs.existsSync(path.join(root, '.git')) ? path.join(root, '.git') : root;
    return execFileSync('git', ['--git-dir', gitDir, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

/** One schema node cleaned: no documentation keywords, `nullable` as JSON Schema, refs into `definitions`. */
function clean(node, refs) {
  if (Array.isArray(node)) return node.map((n) => clean(n, refs));
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (DROP.has(k) || k.startsWith('x-') || k === 'nullable') continue;
    if (k === '$ref') {
      const name = v.replace('#/components/schemas/', '');
      refs.add(name);
      out.$ref = `#/definitions/${name}`;
    } else if (k === 'properties' || k === 'patternProperties' || k === '$defs') {
      out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, clean(s, refs)]));
    } else if (k === 'oneOf') {
      // OpenAPI's oneOf lists alternatives that overlap (an input message matches two of them): any one is enough.
      out.anyOf = clean(v, refs);
    } else out[k] = clean(v, refs);
  }
  if (node.nullable === true) {
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    else if (Array.isArray(out.type) && !out.type.includes('null')) out.type = [...out.type, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    if (out.type === undefined) return { anyOf: [out, { type: 'null' }] };
  }
  return out;
}

/** The top-level property names a request schema allows, through `allOf` and `$ref`s. */
function topLevelFields(schema, all, seen = new Set()) {
  const names = new Set();
  const walk = (s) => {
    if (!s || typeof s !== 'object') return;
    if (s.$ref) {
      const name = s.$ref.split('/').pop();
      if (seen.has(name)) return;
      seen.add(name);
      return walk(all[name]);
    }
    for (const p of Object.keys(s.properties ?? {})) names.add(p);
    for (const k of ['allOf', 'anyOf', 'oneOf']) for (const sub of s[k] ?? []) walk(sub);
  };
  walk(schema);
  return [...names].sort();
}

function refreshOpenAI(root) {
  const doc = JSON.parse(readSource(root, 'openapi.json'));
  const all = doc.components.schemas;
  const definitions = {};
  const pending = Object.values(OPENAI_REQUESTS);
  while (pending.length > 0) {
    const name = pending.pop();
    if (definitions[name] || !all[name]) continue;
    const refs = new Set();
    definitions[name] = clean(all[name], refs);
    for (const r of refs) if (!definitions[r]) pending.push(r);
  }
  const sorted = Object.fromEntries(Object.keys(definitions).sort().map((k) => [k, definitions[k]]));
  const out = {
    source: { repo: 'openai/openai-openapi', path: 'openapi.json', version: doc.info.version, commit: commitOf(root) },
    requests: OPENAI_REQUESTS,
    fields: Object.fromEntries(Object.values(OPENAI_REQUESTS).map((n) => [n, topLevelFields(all[n], all)])),
    definitions: sorted,
  };
  fs.writeFileSync(path.join(OUT, 'openai-requests.json'), `${JSON.stringify(out)}\n`);
  console.log(`openai-requests.json: ${Object.keys(sorted).length} schemas from openapi.json ${doc.info.version}`);
}

/** The field names of `export interface <name> { ... }` in a TypeScript source (one level, no nesting). */
function interfaceFields(source, name) {
  const start = source.indexOf(`export interface ${name} {`) >= 0 ? source.indexOf(`export interface ${name} {`) : source.indexOf(`export declare interface ${name} {`);
  if (start < 0) throw new Error(`no interface ${name}`);
  let depth = 0;
  let i = source.indexOf('{', start);
  const body = [];
  for (; i < source.length; i++) {
    const ch = source[i];
    if (ch === '{') depth++;
    if (ch === '}') depth--;
    if (depth === 0) break;
    body.push(ch);
  }
  const text = body.join('').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const fields = [];
  let level = 0;
  for (const line of text.split('\n')) {
    const m = level === 1 ? /^\s*([A-Za-z_][A-Za-z0-9_]*)\??:/.exec(line) : null;
    if (m) fields.push(m[1]);
    for (const ch of line) level += ch === '{' || ch === '(' || ch === '<' ? 1 : ch === '}' || ch === ')' || ch === '>' ? -1 : 0;
    if (level < 1) level = 1;
  }
  return fields.sort();
}

/** Compares a hand-written definition's top-level fields with the provider's type, records the version it was checked at. */
function checkHandWritten(file, root, sources) {
  const target = path.join(OUT, file);
  const def = JSON.parse(fs.readFileSync(target, 'utf8'));
  const version = JSON.parse(readSource(root, 'package.json')).version;
  let drift = false;
  for (const { path: src, interface: name, schema } of sources) {
    const theirs = interfaceFields(readSource(root, src), name);
    const ours = Object.keys(def.definitions[schema].properties ?? {}).sort();
    const missing = theirs.filter((f) => !ours.includes(f));
    const extra = ours.filter((f) => !theirs.includes(f));
    if (missing.length || extra.length) {
      drift = true;
      console.log(`${file} ${schema} differs from ${src} ${name}: theirs only [${missing.join(', ')}], ours only [${extra.join(', ')}]`);
    }
  }
  def.source = { ...def.source, version, commit: commitOf(root) };
  fs.writeFileSync(target, `${JSON.stringify(def, null, 1)}\n`);
  console.log(`${file}: checked against ${def.source.repo} ${version}${drift ? ' (differences above: update the schema by hand)' : ''}`);
}

const a = args();
if (!a.openai && !a.anthropic && !a.gemini) {
  console.error('usage: refresh-provider-definitions.js --openai <dir|openapi.json> [--anthropic <dir>] [--gemini <dir>]');
  process.exit(2);
}
if (a.openai) refreshOpenAI(a.openai);
if (a.anthropic) {
  checkHandWritten('anthropic-requests.json', a.anthropic, [{ path: 'src/resources/messages/messages.ts', interface: 'MessageCreateParamsBase', schema: 'MessageCreateParams' }]);
}
if (a.gemini) {
  checkHandWritten('gemini-requests.json', a.gemini, [
    { path: 'src/types.ts', interface: 'GenerationConfig', schema: 'GenerationConfig' },
    { path: 'src/types.ts', interface: 'Schema', schema: 'Schema' },
  ]);
}
