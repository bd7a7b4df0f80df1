import type Redis from 'ioredis';
import type { Config } from '../shared/config/env';
import type { Db } from '../shared/db/client';
import type { Catalog } from '../shared/catalog/catalog.types';
import type { Logger } from '../shared/logger';
import type { UpstreamClient } from '../shared/providers/api';
import { GenerationService } from '../shared/services/generation.service';
import { EndpointStatsStore } from '../shared/services/endpoint-stats.store';

/** What processors need, injected (no module-level state). */
export interface WorkerDeps {
  config: Config;
  db: Db;
  /** A normal (non-blocking) connection for publishing, stats and stickiness. */
  redis: Redis;
  catalog: Catalog;
  logger: Logger;
  upstream: UpstreamClient;
  clock: () => Date;
  generations: GenerationService;
  stats: EndpointStatsStore;
}

export function buildWorkerDeps(d: Omit<WorkerDeps, 'generations' | 'stats' | 'clock'> & { clock?: () => Date }): WorkerDeps {
  const clock = d.clock ?? (() => new Date());
  return { ...d, clock, generations: new GenerationService(d.db, clock), stats: new EndpointStatsStore(d.redis, d.config.queuePrefix) };
}
