export default async function scaleTeardown(): Promise<void> {
  await (globalThis as { __syScale?: { stop(): Promise<void> } }).__syScale?.stop();
}
