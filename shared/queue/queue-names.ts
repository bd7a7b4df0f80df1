/**
 * Queue names. NEVER rename one: jobs already in Redis under the old name would be stranded.
 * Queues by kind, so slow work never blocks fast work (decisions.md section 5).
 */
export const QUEUES = {
  text: 'text',
  embeddings: 'embeddings',
  image: 'image',
  media: 'media',
  callbacks: 'callbacks',
  maintenance: 'maintenance',
  /** Batch drivers (api/services/batch-driver.ts): one step job per batch; its lines go to the queues of their kinds. */
  batches: 'batches',
  /**
   * Provider batch APIs (workers/services/upstream-batch-runner.ts): one step job per chunk of a batch's lines sent to an
   * endpoint's own batch API (submit, poll, settle).
   */
  upstreamBatches: 'upstream_batches',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];
export const QUEUE_NAMES = Object.values(QUEUES) as QueueName[];
