'use strict';
// Runs the project's TypeScript sources directly, so `switchyard` works right after `npm install`, before any
// build. Each .ts file is compiled to CommonJS by @swc/core (a dependency for this reason) the first time it is
// required, and the output kept under node_modules/.cache/switchyard-ts keyed by the source's hash, so later
// runs compile nothing. Relative `./x.js` specifiers (the NodeNext style the sources and the generated Prisma
// client use) resolve to `./x.ts` when only the source exists. Only files of this checkout outside
// node_modules are touched.
const crypto = require('node:crypto');
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const NODE_MODULES = path.join(ROOT, 'node_modules') + path.sep;
const CACHE = path.join(NODE_MODULES, '.cache', 'switchyard-ts');

let swc;
/** @returns {boolean} false when @swc/core is not installed (then the caller uses the build in dist/). */
function available() {
  if (swc) return true;
  try {
    swc = require('@swc/core');
    return true;
  } catch {
    return false;
  }
}

const ours = (file) => file.startsWith(ROOT + path.sep) && !file.startsWith(NODE_MODULES);

function compile(source, filename) {
  const key = crypto.createHash('sha256').update(swc.version || '').update('\0').update(filename).update('\0').update(source).digest('hex');
  const cached = path.join(CACHE, `${key}.js`);
  try {
    return fs.readFileSync(cached, 'utf8');
  } catch {
    // not compiled yet
  }
  const { code } = swc.transformSync(source, {
    filename,
    sourceMaps: 'inline',
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
  });
  try {
    fs.mkdirSync(CACHE, { recursive: true });
    const tmp = `${cached}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, code);
    fs.renameSync(tmp, cached);
  } catch {
    // a read-only checkout still runs, compiling each time
  }
  return code;
}

function register() {
  if (!available()) return false;
  if (require.extensions['.ts']) return true;
  require.extensions['.ts'] = function loadTypeScript(module, filename) {
    if (!ours(filename)) throw new Error(`refusing to compile TypeScript outside the checkout: ${filename}`);
    module._compile(compile(fs.readFileSync(filename, 'utf8'), filename), filename);
  };
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function resolveTsSibling(request, parent, ...rest) {
    try {
      return resolve.call(this, request, parent, ...rest);
    } catch (err) {
      if (request.startsWith('.') && request.endsWith('.js') && parent && parent.filename && ours(parent.filename)) {
        return resolve.call(this, `${request.slice(0, -3)}.ts`, parent, ...rest);
      }
      throw err;
    }
  };
  return true;
}

module.exports = { register };
