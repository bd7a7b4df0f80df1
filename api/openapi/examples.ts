/**
 * Request and response examples of every operation, and code samples of the main ones, as the reference at
 * /docs shows them. This file holds what the examples share and the code samples; the examples are by area
 * (account-, text-, media- and batch-examples.ts), merged into EXAMPLES in build-openapi.ts. `buildOpenApi` writes
 * them into the document (`example` of the request body, of each query parameter and of the success response);
 * test/api/openapi-examples.test.ts validates every request example against the very ajv schema the route
 * validates with, and every response example against its response schema.
 * Model ids are the demo catalog's, so "try it" against `npm start -- --demo` works as shown.
 */

/**
 * The origin every example and code sample names (`npm start`'s default). GET /openapi.json serves the document with
 * it replaced by the origin the document was fetched from (api/routes/docs.route.ts).
 */
export const EXAMPLE_ORIGIN = 'http://localhost:3000';

export interface OperationExamples {
  /** The JSON request body. */
  request?: unknown;
  /** Query parameters (as their JSON values; the query schema coerces strings). */
  query?: Record<string, unknown>;
  /** The success response body (JSON operations), or its text. */
  response: unknown;
}

/** The time the example records carry. */
export const EXAMPLE_TIME = '2026-11-24T12:00:00.000Z';

type CodeSample = { lang: string; label: string; source: string };

/** curl, Python and Node (the official `openai` SDKs) for the routes the SDKs cover. */
function sdkSamples(curlPath: string, body: unknown, python: string, node: string): CodeSample[] {
  const curl = body === undefined
    ? `curl ${EXAMPLE_ORIGIN}${curlPath} \\\n  -H "Authorization: Bearer $SWITCHYARD_API_KEY"`
    : `curl ${EXAMPLE_ORIGIN}${curlPath} \\\n  -H "Authorization: Bearer $SWITCHYARD_API_KEY" \\\n  -H 'Content-Type: application/json' \\\n  -d '${JSON.stringify(body)}'`;
  return [
    { lang: 'Shell', label: 'curl', source: curl },
    { lang: 'Python', label: 'Python (openai)', source: `import os\nfrom openai import OpenAI\n\nclient = OpenAI(base_url="${EXAMPLE_ORIGIN}/v1", api_key=os.environ["SWITCHYARD_API_KEY"])\n\n${python}` },
    { lang: 'JavaScript', label: 'Node (openai)', source: `import OpenAI from 'openai';\n\nconst client = new OpenAI({ baseURL: '${EXAMPLE_ORIGIN}/v1', apiKey: process.env.SWITCHYARD_API_KEY });\n\n${node}` },
  ];
}

export const CODE_SAMPLES: Record<string, CodeSample[]> = {
  'POST /v1/responses': sdkSamples(
    '/v1/responses',
    { model: 'openai/gpt-4.1-mini', input: 'Hello!' },
    'response = client.responses.create(model="openai/gpt-4.1-mini", input="Hello!")\nprint(response.output_text)',
    "const response = await client.responses.create({ model: 'openai/gpt-4.1-mini', input: 'Hello!' });\nconsole.log(response.output_text);",
  ),
  'POST /v1/chat/completions': sdkSamples(
    '/v1/chat/completions',
    { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'Hello!' }] },
    'completion = client.chat.completions.create(\n    model="openai/gpt-4.1-mini",\n    messages=[{"role": "user", "content": "Hello!"}],\n)\nprint(completion.choices[0].message.content)',
    "const completion = await client.chat.completions.create({\n  model: 'openai/gpt-4.1-mini',\n  messages: [{ role: 'user', content: 'Hello!' }],\n});\nconsole.log(completion.choices[0].message.content);",
  ),
  'POST /v1/embeddings': sdkSamples(
    '/v1/embeddings',
    { model: 'openai/text-embedding-3-small', input: 'The quick brown fox' },
    'result = client.embeddings.create(model="openai/text-embedding-3-small", input="The quick brown fox")\nprint(len(result.data[0].embedding))',
    "const result = await client.embeddings.create({ model: 'openai/text-embedding-3-small', input: 'The quick brown fox' });\nconsole.log(result.data[0].embedding.length);",
  ),
  'GET /v1/models': sdkSamples(
    '/v1/models',
    undefined,
    'for model in client.models.list():\n    print(model.id)',
    'for await (const model of client.models.list()) console.log(model.id);',
  ),
  'POST /v1/images/generations': sdkSamples(
    '/v1/images/generations',
    { model: 'openai/gpt-image-1', prompt: 'A lighthouse at dawn, watercolor' },
    'image = client.images.generate(model="openai/gpt-image-1", prompt="A lighthouse at dawn, watercolor")\nprint(image.data[0].url)',
    "const image = await client.images.generate({ model: 'openai/gpt-image-1', prompt: 'A lighthouse at dawn, watercolor' });\nconsole.log(image.data[0].url);",
  ),
};
