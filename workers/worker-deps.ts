import { systemClock } from '../shared/ids';
import type Redis from 'ioredis';
import type { Config } from '../shared/config/env';
import type { Db } from '../shared/db/client';
import type { Catalog } from '../shared/catalog/catalog.types';
import type { Logger } from '../shared/logger';
import type { UpstreamClient } from '../shared/providers/api';
import type { Pool } from 'pg';
import { GenerationService } from '../shared/services/generation.service';
import { Ledger } from '../shared/billing/ledger';
import { EndpointStatsStore } from '../shared/services/endpoint-stats.store';
import { ProviderLimiter } from '../shared/services/provider-limiter';
import { createMetrics, type Metrics } from '../shared/metrics/metrics';
import { FilesService, filesBaseUrl } from '../shared/services/files.service';
import { createBlobStore } from '../shared/storage/create-blob-store';
import type { BlobStore } from '../shared/storage/blob-store';
import { resolveSecret } from '../shared/runtime/secret';
import { SettlementJournal } from '../shared/billing/settlement-journal';
import type { LocalLane } from '../shared/runtime/local-lane';
import { JobStops } from '../shared/queue/generation-bus';
import { JobLocks } from '../shared/queue/job-lock';
import type { Tracing } from '../shared/telemetry/tracing';

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
  /** The money core: only shared/billing/ending.ts closes generations through it. */
  ledger: Ledger;
  stats: EndpointStatsStore;
  /** Per-provider caps on upstream calls in flight (catalog `maxConcurrency`). */
  limiter: ProviderLimiter;
  /** Job durations, provider attempts, money charged (the process's registry). */
  metrics: Metrics;
  /** Stored files: the media worker saves generated files, the maintenance job deletes expired ones. */
  files: FilesService;
  /** Settlements whose reply went out before their commit (shared/billing/ending.ts). */
  settlements: SettlementJournal;
  /** What this process's workers share with its API: claims, reply channels, the records of jobs claimed here (shared/runtime/local-lane.ts). */
  lane: LocalLane;
  /** The stop signals of the text and embeddings jobs running here (shared/queue/generation-bus.ts). */
  stops: JobStops;
  /** What this process knows of its running jobs' locks: a run that lost its job sends nothing more of it (shared/queue/job-lock.ts). */
  locks: JobLocks;
  /** OpenTelemetry spans (queue wait, provider attempts, settlement), when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  tracing?: Tracing;
}

export function buildWorkerDeps(
  d: Omit<WorkerDeps, 'generations' | 'ledger' | 'stats' | 'clock' | 'files' | 'limiter' | 'metrics' | 'settlements' | 'stops' | 'locks'> & {
    clock?: () => Date;
    metrics?: Metrics;
    files?: FilesService;
    secret?: string;
    blobStore?: BlobStore;
    pool?: Pool;
    /** The process's ledger, shared with its API (shared/runtime/bootstrap.ts); default: one of its own. */
    ledger?: Ledger;
    /** The connection the workers move their jobs over (startWorkerPool's): a kept promise's erase leaves with the job's completion. */
    jobConnection?: Redis;
  },
): WorkerDeps {
  const clock = d.clock ?? systemClock;
  const { secret, blobStore, metrics: _m, pool, ledger, jobConnection, ...rest } = d;
  const files =
    d.files ??
    new FilesService({
      db: d.db,
      store: blobStore ?? createBlobStore(d.config),
      // Resolved on first signature only: tests that never store files never touch the secret file.
      secret: secret ?? (() => resolveSecret(d.config)),
      baseUrl: filesBaseUrl(d.config),
      urlTtlSeconds: d.config.fileUrlTtlSeconds,
      clock,
      onError: (message, meta) => d.logger.warn(message, meta),
    });
  const metrics = d.metrics ?? createMetrics();
  const theLedger = ledger ?? new Ledger(d.db, clock, { pool, metrics });
  return {
    ...rest,
    clock,
    files,
    metrics,
    limiter: new ProviderLimiter(),
    generations: new GenerationService(d.db, clock, theLedger),
    ledger: theLedger,
    stats: new EndpointStatsStore(d.redis, d.config.queuePrefix),
    settlements: new SettlementJournal(d.redis, d.config.queuePrefix, undefined, jobConnection, d.lane.buses),
    stops: new JobStops(),
    locks: new JobLocks(),
  };
}
