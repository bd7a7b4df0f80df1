/**
 * The official Python `openai` SDK against a running Switchyard (a test app on a real port, the fake providers
 * behind it): chat completions, streaming, the Responses API, embeddings (float, base64, token arrays) and an
 * error, with the request id the SDK surfaces. The SDK runs in a cached virtualenv (test/helpers/python-venv.ts);
 * where it cannot be installed, these tests are skipped with the reason printed.
 */
import path from 'node:path';
import { pythonVenv } from '../helpers/python-venv';
import { runProcess, type ProcessResult } from '../helpers/run-process';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';

const venv = pythonVenv();
if (!venv.ok) console.warn(`python-sdk.test.ts skipped: ${venv.reason}`);
const describeIfPython = venv.ok ? describe : describe.skip;

const TEXT = 'Hello from the fake provider';
const EXPECTED_COST = (1000 * 40 + 500 * 160) / 1_000_000;
const UUID = /^[0-9a-f-]{36}$/;

let s: TestStack;
let org: StackOrg;

function runScript(python: string, env: Record<string, string>): Promise<ProcessResult> {
  return runProcess(python, [path.join(__dirname, 'python', 'openai_sdk_check.py')], { env: { ...process.env, ...env } });
}

describeIfPython('the official Python openai SDK against Switchyard', () => {
  beforeAll(async () => {
    s = await createTestStack({ knobs: { promptTokens: 1000, completionTokens: 500, text: TEXT } });
    org = await s.seed({ balance: '100' });
  });
  afterAll(() => s?.close());

  it('answers chat, streams, responses, embeddings and errors as the SDK expects, with request ids', async () => {
    if (!venv.ok) return;
    const r = await runScript(venv.python, {
      SWITCHYARD_BASE_URL: `${s.url}/v1`,
      SWITCHYARD_API_KEY: org.key.key,
      CHAT_MODEL: STACK_MODELS.chat,
      EMBEDDING_MODEL: STACK_MODELS.embedding,
    });
    if (r.code !== 0) throw new Error(`the Python script failed (${r.code}):\n${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}');

    expect(out.chat).toMatchObject({ content: TEXT, finish_reason: 'stop', usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 } });
    expect(out.chat.request_id).toMatch(UUID);
    expect(out.chat_stream).toMatchObject({ text: TEXT, finish_reason: 'stop', usage: { prompt_tokens: 1000, completion_tokens: 500, cost_rub: EXPECTED_COST } });
    expect(out.chat_stream.request_id).toMatch(UUID);

    expect(out.responses).toMatchObject({ status: 'completed', output_text: TEXT, usage: { input_tokens: 1000, output_tokens: 500, cost_rub: EXPECTED_COST } });
    expect(out.responses.request_id).toMatch(UUID);
    expect(out.responses_stream).toEqual({ first: 'response.created', last: 'response.completed', text: TEXT, final_status: 'completed' });

    expect(out.embeddings).toMatchObject({ count: 2, token_arrays: { count: 2 } });
    expect(out.embeddings.dims).toBeGreaterThan(0);
    expect(out.embeddings.max_diff_base64).toBeLessThan(1e-6);
    expect(out.embeddings.request_id).toMatch(UUID);

    expect(out.error).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(out.error.request_id).toMatch(UUID);
    expect(out.error.trace_id).toBe(out.error.request_id);
  }, 60_000);
});
