#!/usr/bin/env node
'use strict';
// The console (/console): console/src bundled by esbuild into dist/console, offline, at install (postinstall) and
// by `npm run build`. One script (app.js) and one style sheet (app.css) with content hashes in their names, and
// index.html naming them; the page has no inline script, so the route's Content-Security-Policy allows none.
// Prints the sizes of the first page's script (raw, gzip, brotli): docs/console.md keeps the figure.
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { createHash } = require('node:crypto');

const root = path.join(__dirname, '..');
const src = path.join(root, 'console');
const out = path.join(root, 'dist', 'console');

function sizes(buf) {
  return {
    raw: buf.length,
    gzip: zlib.gzipSync(buf, { level: 9 }).length,
    brotli: zlib.brotliCompressSync(buf, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
  };
}

/** An asset and, beside it, its gzip and brotli forms: the route sends the one the browser accepts. */
function writeAsset(name, buf) {
  const file = path.join(out, 'assets', name);
  fs.writeFileSync(file, buf);
  fs.writeFileSync(`${file}.gz`, zlib.gzipSync(buf, { level: 9 }));
  fs.writeFileSync(`${file}.br`, zlib.brotliCompressSync(buf, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }));
}

async function buildConsole({ quiet = false } = {}) {
  // An install before the sources are there (the Dockerfile copies package.json and scripts/ first): `npm run build`
  // builds the console once they are.
  if (!fs.existsSync(path.join(src, 'src', 'main.tsx'))) {
    if (!quiet) console.log('console: no sources (console/src) here yet; `npm run build` builds it');
    return null;
  }
  let esbuild;
  try {
    esbuild = require('esbuild');
  } catch {
    // A production install without devDependencies keeps the dist/console a full install built.
    if (fs.existsSync(path.join(out, 'index.html'))) return null;
    throw new Error('esbuild is not installed: run `npm install` (with devDependencies) to build the console');
  }
  const result = await esbuild.build({
    entryPoints: [path.join(src, 'src', 'main.tsx')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2020'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    write: false,
    outdir: out,
    entryNames: 'app',
    legalComments: 'none',
    logLevel: 'silent',
    absWorkingDir: root,
  });
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(path.join(out, 'assets'), { recursive: true });
  const names = {};
  let script;
  for (const f of result.outputFiles) {
    const ext = path.extname(f.path);
    const hash = createHash('sha256').update(f.contents).digest('hex').slice(0, 10);
    const name = `app.${hash}${ext}`;
    writeAsset(name, Buffer.from(f.contents));
    names[ext] = name;
    if (ext === '.js') script = Buffer.from(f.contents);
  }
  const css = fs.readFileSync(path.join(src, 'styles.css'));
  const cssName = `styles.${createHash('sha256').update(css).digest('hex').slice(0, 10)}.css`;
  writeAsset(cssName, css);
  writeAsset('icon.svg', fs.readFileSync(path.join(src, 'icon.svg')));
  const html = fs
    .readFileSync(path.join(src, 'index.html'), 'utf8')
    .replace('{{script}}', `/console/assets/${names['.js']}`)
    .replace('{{styles}}', `/console/assets/${cssName}`);
  fs.writeFileSync(path.join(out, 'index.html'), html);
  const size = sizes(script);
  fs.writeFileSync(path.join(out, 'build.json'), `${JSON.stringify({ script: names['.js'], styles: cssName, size }, null, 2)}\n`);
  if (!quiet) console.log(`console: dist/console/assets/${names['.js']} ${size.raw} B, gzip ${size.gzip} B, brotli ${size.brotli} B`);
  return size;
}

module.exports = { buildConsole };

if (require.main === module) {
  buildConsole().catch((e) => {
    process.stderr.write(`console build: ${e.message}\n`);
    process.exit(1);
  });
}
