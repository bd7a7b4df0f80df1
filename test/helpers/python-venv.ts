/**
 * A Python virtualenv with the official `openai` SDK, for client tests. Made once with `python3 -m venv` and
 * pip (its configured index: here a local wheel mirror) under node_modules/.cache/switchyard-pyvenv/<key>,
 * the key hashing the requirement and the Python version, and reused by every later run. When Python, venv
 * or the package cannot be had, the answer says why, and the caller skips its tests printing that reason.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** What the client tests need: a Responses API with streaming helpers and `_request_id` (1.66 and later). */
export const PYTHON_OPENAI_REQUIREMENT = 'openai>=1.66';

export type PythonVenv = { ok: true; python: string; dir: string } | { ok: false; reason: string };

const CACHE_ROOT = path.join(__dirname, '..', '..', 'node_modules', '.cache', 'switchyard-pyvenv');

function run(cmd: string, args: string[], timeoutMs: number): { ok: boolean; output: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: timeoutMs, env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' } });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error.message) : ''}`.trim();
  return { ok: r.status === 0 && !r.error, output };
}

const tail = (text: string) => text.split('\n').filter((l) => !/^WARNING: Location .* is ignored/.test(l)).slice(-6).join('\n');

/** The venv for `requirement`, made on first use (this blocks for up to a few minutes, once). */
export function pythonVenv(requirement = PYTHON_OPENAI_REQUIREMENT): PythonVenv {
  const python3 = process.env.SWITCHYARD_TEST_PYTHON || 'python3';
  const version = run(python3, ['-c', 'import sys; print(sys.version)'], 20_000);
  if (!version.ok) return { ok: false, reason: `no usable ${python3}: ${tail(version.output) || 'not found'}` };

  const key = createHash('sha256').update(`${requirement}\n${version.output}`).digest('hex').slice(0, 16);
  const dir = path.join(CACHE_ROOT, key);
  const python = path.join(dir, 'bin', 'python');
  if (fs.existsSync(path.join(dir, 'ready'))) return { ok: true, python, dir };

  // Made beside its final place and renamed into it: a run that dies half-way leaves nothing that looks ready.
  fs.mkdirSync(CACHE_ROOT, { recursive: true });
  const tmp = `${dir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  try {
    const venv = run(python3, ['-m', 'venv', tmp], 120_000);
    if (!venv.ok) return { ok: false, reason: `python3 -m venv failed: ${tail(venv.output)}` };
    const pip = run(path.join(tmp, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--retries', '1', '--timeout', '15', requirement], 300_000);
    if (!pip.ok) return { ok: false, reason: `pip install ${requirement} failed: ${tail(pip.output)}` };
    fs.writeFileSync(path.join(tmp, 'ready'), `${requirement}\n`);
    // Two test files may make it at once (jest runs files in parallel): the first rename wins, and a later maker keeps
    // that one, never removing a venv a test may be running (only a directory with no `ready` is replaced).
    try {
      fs.renameSync(tmp, dir);
    } catch {
      if (!fs.existsSync(path.join(dir, 'ready'))) {
        fs.rmSync(dir, { recursive: true, force: true });
        fs.renameSync(tmp, dir);
      }
    }
    return { ok: true, python, dir };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
