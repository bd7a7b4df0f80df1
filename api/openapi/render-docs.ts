import { AUTH_LABELS, type OpenApiDocument, type Operation } from './build-openapi';
import type { JsonSchema } from './route-docs';

/**
 * The readable reference at GET /docs: plain server-rendered HTML from the OpenAPI document, with inline
 * CSS and no script or CDN (the service may run without internet).
 */
export function renderDocsHtml(doc: OpenApiDocument): string {
  const ops: Array<{ method: string; path: string; op: Operation }> = [];
  for (const [path, methods] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(methods)) ops.push({ method, path, op });

  const byTag = doc.tags.map((t) => ({ tag: t.name, ops: ops.filter((o) => o.op.tags[0] === t.name) }));
  const anchor = (o: { method: string; path: string }) => `op-${o.method}${o.path.replace(/[^a-zA-Z0-9]+/g, '-').replace(/-$/, '')}`;

  const toc = byTag
    .map(
      (g) =>
        `<li><a href="#tag-${esc(g.tag)}">${esc(g.tag)}</a><ul>${g.ops
          .map((o) => `<li><a href="#${anchor(o)}"><span class="m ${o.method}">${o.method.toUpperCase()}</span> ${esc(o.path)}</a></li>`)
          .join('')}</ul></li>`,
    )
    .join('');

  const sections = byTag
    .map((g) => `<section><h2 id="tag-${esc(g.tag)}">${esc(g.tag)}</h2>${g.ops.map((o) => renderOperation(doc, o.method, o.path, o.op, anchor(o))).join('')}</section>`)
    .join('');

  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(doc.info.title)} reference</title>
<style>${CSS}</style></head>
<body><nav><h1>${esc(doc.info.title)}</h1><p class="v">OpenAPI ${esc(doc.openapi)} · version ${esc(doc.info.version)} · <a href="/openapi.json">openapi.json</a></p><ul>${toc}</ul></nav>
<main><p>${esc(doc.info.description)}</p>
<h2>Errors</h2><p>Every non-2xx reply has this body:</p>${schemaBlock(doc, doc.components.schemas.ErrorResponse, 'ErrorResponse')}
${sections}</main></body></html>`;
}

function renderOperation(doc: OpenApiDocument, method: string, path: string, op: Operation, id: string): string {
  const params = op.parameters?.length
    ? `<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>type</th><th>required</th><th>notes</th></tr>${op.parameters
        .map((p) => `<tr><td><code>${esc(p.name)}</code></td><td>${p.in}</td><td>${esc(typeOf(p.schema))}</td><td>${p.required ? 'yes' : ''}</td><td>${esc(notes(p.schema))}</td></tr>`)
        .join('')}</table>`
    : '';
  let body = '';
  if (op.requestBody) {
    body = `<h4>Request body${op.requestBody.required ? '' : ' (optional)'}</h4>`;
    for (const [type, media] of Object.entries(op.requestBody.content)) {
      const name = refName(media.schema);
      body += `<p class="ct">${esc(type)}${name ? ` · <code>${esc(name)}</code>` : ''}</p>${schemaBlock(doc, name ? doc.components.schemas[name] : media.schema, name)}`;
    }
  }
  const responses = Object.entries(op.responses)
    .filter(([status]) => status !== 'default')
    .map(([status, r]) => {
      const resp = r as { description: string; content?: Record<string, { schema?: JsonSchema }> };
      const ok = status.startsWith('2') || status.startsWith('3');
      const types = Object.keys(resp.content ?? {});
      const schema = resp.content?.['application/json']?.schema;
      const name = schema ? refName(schema) : undefined;
      const detail = ok && name && name !== 'ErrorResponse' ? `<details><summary><code>${esc(name)}</code></summary>${schemaBlock(doc, doc.components.schemas[name], name)}</details>` : '';
      return `<tr><td class="${ok ? 'ok' : 'err'}">${esc(status)}</td><td>${esc(resp.description)}${types.length && ok ? ` <span class="ct">(${esc(types.join(', '))})</span>` : ''}${detail}</td></tr>`;
    })
    .join('');
  return `<article id="${id}"><h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${esc(path)}</code>${op.deprecated ? ' <span class="dep">deprecated</span>' : ''}</h3>
<p>${esc(op.summary)}</p>${op.description ? `<p>${esc(op.description)}</p>` : ''}
<p class="auth"><b>Auth:</b> ${esc(AUTH_LABELS[op['x-switchyard-auth']])}</p>${params}${body}
<h4>Responses</h4><table>${responses}</table></article>`;
}

/** A property table for an object schema, then the whole schema as pretty JSON (for nesting and combinators). */
function schemaBlock(doc: OpenApiDocument, schema: JsonSchema | undefined, name?: string): string {
  if (!schema) return '';
  const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const rows = Object.entries(props)
    .map(([k, s]) => {
      const resolved = resolve(doc, s);
      return `<tr><td><code>${esc(k)}</code></td><td>${esc(typeOf(resolved))}</td><td>${required.has(k) ? 'yes' : ''}</td><td>${esc(notes(resolved))}</td></tr>`;
    })
    .join('');
  const table = rows ? `<table><tr><th>field</th><th>type</th><th>required</th><th>notes</th></tr>${rows}</table>` : '';
  return `${table}<details><summary>JSON Schema${name ? ` ${esc(name)}` : ''}</summary><pre>${esc(JSON.stringify(schema, null, 2))}</pre></details>`;
}

function resolve(doc: OpenApiDocument, s: JsonSchema): JsonSchema {
  const name = refName(s);
  return name ? (doc.components.schemas[name] ?? s) : s;
}

function refName(s: JsonSchema): string | undefined {
  return typeof s.$ref === 'string' ? s.$ref.replace('#/components/schemas/', '') : undefined;
}

function typeOf(s: JsonSchema): string {
  if (typeof s.$ref === 'string') return refName(s) ?? 'object';
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if ('const' in s) return JSON.stringify(s.const);
  const t = Array.isArray(s.type) ? s.type.join(' | ') : typeof s.type === 'string' ? s.type : undefined;
  if (t === 'array' && s.items && typeof s.items === 'object') return `array of ${typeOf(s.items as JsonSchema)}`;
  if (t) return t;
  for (const k of ['anyOf', 'oneOf'] as const) if (Array.isArray(s[k])) return (s[k] as JsonSchema[]).map(typeOf).join(' | ');
  return 'any';
}

function notes(s: JsonSchema): string {
  const out: string[] = [];
  const add = (k: string, label = k) => s[k] !== undefined && out.push(`${label} ${typeof s[k] === 'object' ? JSON.stringify(s[k]) : String(s[k])}`);
  add('minimum', 'min');
  add('maximum', 'max');
  add('minLength', 'min length');
  add('maxLength', 'max length');
  add('minItems', 'min items');
  add('maxItems', 'max items');
  add('pattern');
  add('format');
  add('default');
  if (typeof s.description === 'string') out.unshift(s.description);
  return out.join('; ');
}

function esc(s: unknown): string {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const CSS = `
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;display:flex}
nav{width:300px;flex:none;height:100vh;position:sticky;top:0;overflow:auto;background:#f4f6fa;border-right:1px solid #dde2ea;padding:16px}
nav h1{font-size:20px;margin:0 0 4px}nav ul{list-style:none;padding-left:0;margin:4px 0}nav ul ul{padding-left:8px;font-size:13px}
nav a{color:#1d2330;text-decoration:none}nav a:hover{text-decoration:underline}.v{font-size:12px;color:#667}
main{flex:1;min-width:0;padding:16px 32px;max-width:1100px}h2{border-bottom:2px solid #dde2ea;padding-bottom:4px;margin-top:32px}
article{border:1px solid #dde2ea;border-radius:6px;padding:4px 16px 12px;margin:16px 0}h3{font-size:17px}h4{margin:12px 0 4px;font-size:14px}
.m{display:inline-block;min-width:58px;text-align:center;border-radius:4px;color:#fff;font-size:12px;font-weight:700;padding:1px 6px}
.get{background:#2f7d32}.post{background:#1565c0}.patch{background:#8d5a00}.put{background:#6a1b9a}.delete{background:#c62828}
.dep{background:#eee;border-radius:4px;padding:1px 6px;font-size:12px;color:#a00}.auth{font-size:14px}.ct{color:#556;font-size:13px;margin:4px 0}
table{border-collapse:collapse;width:100%;font-size:13px;margin:4px 0}td,th{border:1px solid #e3e7ee;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f7f8fb}td.ok{color:#2f7d32;font-weight:600}td.err{color:#c62828;font-weight:600}
pre{background:#f7f8fb;border:1px solid #e3e7ee;padding:8px;overflow:auto;font-size:12px;max-height:480px}details summary{cursor:pointer;font-size:13px;color:#345}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
`;
