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
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];
export const QUEUE_NAMES = Object.values(QUEUES) as QueueName[];
