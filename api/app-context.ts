import { systemClock } from '../shared/ids';
import { jsonBody } from './middleware/reject-nul';
import { settledReads } from './middleware/settled-reads';
import { SettlementJournal } from '../shared/billing/settlement-journal';
import { idempotencyKey } from './middleware/auth';
import type Redis from 'ioredis';
import type { Config } from '../shared/config/env';
import type { Db } from '../shared/db/client';
import type { Pool } from 'pg';
import type { Catalog } from '../shared/catalog/catalog.types';
import { modelDisplayName } from '../shared/catalog/catalog-index';
import type { Logger } from '../shared/logger';
import { AccountsService } from '../shared/services/accounts.service';
import { KeyInfoService } from '../shared/services/key-info.service';
import { Ledger } from '../shared/billing/ledger';
import type { EndingDeps } from '../shared/billing/ending';
import type { RequestHandler } from 'express';
import { Queue } from 'bullmq';
import { Authenticator, authMiddleware } from './middleware/auth';
import { SessionGate } from './middleware/session';
import { SessionsService } from '../shared/services/sessions.service';
import { MembersService } from '../shared/services/members.service';
import { ActivityService } from '../shared/services/activity.service';
import { LoginThrottle } from '../shared/auth/login-throttle';
import { GenerationBus } from '../shared/queue/generation-bus';
import { whenReady } from '../shared/queue/redis';
import { QUEUE_NAMES, type QueueName } from '../shared/queue/queue-names';
import { GenerationService } from '../shared/services/generation.service';
import { EndpointStatsStore } from '../shared/services/endpoint-stats.store';
import { GenerationGateway } from './services/generation-gateway';
import { RoutePlanner } from './services/route-planner';
import { TextService } from './services/text.service';
import { EmbeddingsService } from './services/embeddings.service';
import { TypedQuestionsService } from './services/typed-questions.service';
import { ImagesService } from './services/images.service';
import { MediaService } from './services/media.service';
import { MediaOperationsService } from './services/media-operations.service';
import { MediaRecords } from './services/media-records';
import { CallbackService } from '../shared/services/callbacks.service';
import { HistoryService } from '../shared/services/history.service';
import { rateLimitMiddleware } from './middleware/rate-limit';
import { createMetrics, type Metrics } from '../shared/metrics/metrics';
import { startTracing, type Tracing } from '../shared/telemetry/tracing';
import { FilesService, filesBaseUrl } from '../shared/services/files.service';
import { createBlobStore } from '../shared/storage/create-blob-store';
import { LeaseDesk } from '../shared/billing/leases';
import { LocalLane } from '../shared/runtime/local-lane';
import type { BlobStore } from '../shared/storage/blob-store';
import { BatchFiles } from '../shared/services/batch-files.service';
import { BatchesService } from './services/batches.service';
import { BatchSteps } from './services/batch-steps';
import { BatchDriver } from './services/batch-driver';
import { batchLineKinds } from './services/batch-lines';
import { BatchUpstream } from './services/batch-upstream';
import { UpstreamBatches } from '../shared/services/upstream-batches.service';
import { StoredResponses } from './services/stored-responses';
import { BackgroundStreams } from './services/background-streams';
import { ResponseStreamLog } from './services/response-stream-log';
import { databaseAnswers } from '../shared/db/client';
import { announceKeyChange, listenForKeyChanges, type KeyChange } from '../shared/runtime/key-changes';

/** Everything a route needs, built once from injected I/O (no module-level state). */
export interface AppDeps {
  config: Config;
  db: Db;
  /** The pg pool under `db`: the ledger's hot path goes through it (shared/db/client.ts connectDb). */
  pool?: Pool;
  /** DATABASE_READ_URL's streaming replica: history and activity read from it, falling back to `db` (shared/db/read-routing.ts). */
  readDb?: Db;
  /** History's listings' pools (shared/db/client.ts connectListings); without them a listing reads through `db`/`readDb`. */
  historyPools?: { primary: Pool; replica?: Pool };
  redis: Redis;
  /** A connection of its own for the reply channel (a subscribed connection can do nothing else). */
  subscriber: Redis;
  catalog: Catalog;
  logger: Logger;
  secret: string;
  clock?: () => Date;
  /** Readiness probe for the workers (true when at least one worker serves the queues). */
  workersReady?: () => Promise<boolean>;
  authCacheMs?: number;
  /** Prometheus metrics; pass the workers' own in a single-process start so /metrics shows both. */
  metrics?: Metrics;
  /** Where file bytes go; default from the environment (local disk or S3_*). */
  blobStore?: BlobStore;
  /** The process's ledger (shared/runtime/bootstrap.ts), shared with its workers; default: one of its own. */
  ledger?: Ledger;
  /**
   * What this process's API shares with its workers (claims, reply channels, the records of jobs claimed here): the same
   * lane goes to both (shared/runtime/bootstrap.ts); default: a lane of its own, with no workers in it.
   */
  lane?: LocalLane;
  /** The process's tracing (shared/runtime/bootstrap.ts); default: its own when Config.tracing asks for it (closed with the context). */
  tracing?: Tracing;
}

export interface AppContext extends Required<Omit<AppDeps, 'authCacheMs' | 'workersReady' | 'blobStore' | 'pool' | 'tracing' | 'readDb' | 'historyPools'>> {
  /** OpenTelemetry spans, when OTEL_EXPORTER_OTLP_ENDPOINT is set; undefined otherwise. */
  tracing?: Tracing;
  workersReady: () => Promise<boolean>;
  auth: Authenticator;
  /** Browser sessions (the `sy_session` cookie): sign-in, and the session on every authenticated route. */
  sessionGate: SessionGate;
  accounts: AccountsService;
  /** Members over HTTP (decisions.md section 8). */
  members: MembersService;
  /** GET /v1/activity, from the totals kept as generations end. */
  activity: ActivityService;
  keyInfo: KeyInfoService;
  ledger: Ledger;
  /** Authentication, rate limiting, the JSON body, then the Idempotency-Key (hashed with that body): in front of every authenticated route (unknown routes stay 404). */
  guard: RequestHandler[];
  /** `guard`, then a wait for the organization's promised settlements: in front of the reads that show money and history. */
  readGuard: RequestHandler[];
  /** Settlements replied to before their commit (shared/billing/settlement-journal.ts). */
  settlements: SettlementJournal;
  queues: Record<QueueName, Queue>;
  bus: GenerationBus;
  generations: GenerationService;
  stats: EndpointStatsStore;
  gateway: GenerationGateway;
  planner: RoutePlanner;
  /** One service per kind of generation: each plans, bounds, reserves and enqueues through the gateway, then waits. */
  text: TextService;
  /** Stored responses as the caller may see them (the Responses API, and its batch lines). */
  responses: StoredResponses;
  /** Background responses' event streams (relayed, resumed, forgotten). */
  backgroundStreams: BackgroundStreams;
  embeddings: EmbeddingsService;
  questions: TypedQuestionsService;
  images: ImagesService;
  media: MediaService;
  mediaOperations: MediaOperationsService;
  files: FilesService;
  history: HistoryService;
  /** The Batch API (docs/batches.md): its files, its batches, and the driver its `batches` queue's jobs run. */
  batchFiles: BatchFiles;
  batches: BatchesService;
  batchDriver: BatchDriver;
  /** Resolves when the database answers (GET /readyz). */
  databaseReady(): Promise<unknown>;
  /** Resolves once the reply channel is subscribed. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function buildContext(deps: AppDeps): AppContext {
  const clock = deps.clock ?? systemClock;
  const replicaFailed = (err: unknown) => deps.logger.warn('the read replica did not answer; read from the primary', { err });
  const auth = new Authenticator(deps.db, deps.secret, deps.authCacheMs ?? 1000);
  const queues = Object.fromEntries(
    QUEUE_NAMES.map((q) => [q, new Queue(q, { connection: deps.redis, prefix: deps.config.queuePrefix })]),
  ) as Record<QueueName, Queue>;
  const lane = deps.lane ?? new LocalLane();
  const bus = new GenerationBus(deps.redis, deps.subscriber, deps.config.queuePrefix, lane.buses);
  const stats = new EndpointStatsStore(deps.redis, deps.config.queuePrefix);
  const metrics = deps.metrics ?? createMetrics();
  const ownTracing = deps.tracing ? undefined : startTracing(deps.config.tracing);
  const tracing = deps.tracing ?? ownTracing;
  const ledger = deps.ledger ?? new Ledger(deps.db, clock, { pool: deps.pool, metrics });
  const generations = new GenerationService(deps.db, clock, ledger);
  // A promise whose generation is not recorded yet (granted from a lease, its record still committing) still runs.
  const settlements = new SettlementJournal(
    deps.redis,
    deps.config.queuePrefix,
    (ids) => generations.stillRunning(ids),
    undefined,
    lane.buses,
  );
  const leases = deps.config.leases.requests > 0 ? new LeaseDesk(ledger, deps.config.leases, deps.logger, clock) : undefined;
  // A key changed, here or in another process (shared/runtime/key-changes.ts): not served from the cache, nor from a
  // lease taken under its old terms.
  const applyKeyChange = (change: KeyChange) => {
    auth.forget(change.keyId);
    if (change.terms) leases?.revokeKey(change.keyId);
  };
  // Batch lines whose endpoint has batch prices are parked for their provider's own batch API (docs/batches.md).
  const upstreamBatches = new UpstreamBatches(deps.db, clock);
  const endings: EndingDeps = { ledger, settlements, lane, logger: deps.logger, config: deps.config, redis: deps.redis, tracing };
  const gateway = new GenerationGateway(generations, queues, bus, deps.logger, { redis: deps.redis, prefix: deps.config.queuePrefix }, endings, lane, leases, { catalog: deps.catalog, store: upstreamBatches });
  const planner = new RoutePlanner(deps.catalog, stats);
  metrics.trackQueues(queues);
  const store = deps.blobStore ?? createBlobStore(deps.config);
  const files = new FilesService({
    db: deps.db,
    store,
    secret: deps.secret,
    baseUrl: filesBaseUrl(deps.config),
    urlTtlSeconds: deps.config.fileUrlTtlSeconds,
    clock,
    onError: (message, meta) => deps.logger.warn(message, meta),
  });
  const syncWaitMs = deps.config.syncWaitMs;
  // The body is parsed only after authentication and the rate limit: a stranger's 10 MiB body costs no parsing.
  const accounts = new AccountsService(deps.db, deps.secret, clock, async (change) => {
    applyKeyChange(change);
    await announceKeyChange(deps.redis, deps.config.queuePrefix, change);
  });
  const sessionGate = new SessionGate(new SessionsService(deps.db, deps.secret, new LoginThrottle(deps.redis, deps.config.queuePrefix), clock), deps.config.publicBaseUrl);
  const guard = [authMiddleware(auth, sessionGate), rateLimitMiddleware(deps.redis, deps.config.queuePrefix, deps.config.defaultRateLimitPerMinute, clock), ...jsonBody(deps.config.maxBodyBytes), idempotencyKey];
  const records = new MediaRecords({ db: deps.db, files, gateway, syncWaitMs, callbackAllowPrivate: deps.config.callbackAllowPrivate, callbackPrivateHint: deps.config.demo });
  const text = new TextService({ db: deps.db, planner, gateway, syncWaitMs });
  const embeddings = new EmbeddingsService({ catalog: deps.catalog, planner, gateway, syncWaitMs });
  const images = new ImagesService({ planner, gateway, records, files });
  const responses = new StoredResponses(deps.db, settlements);
  const batchFiles = new BatchFiles(deps.db, store, clock, deps.config.batches.fileRetentionDays);
  const batchDriver = new BatchDriver({
    db: deps.db,
    files: batchFiles,
    kinds: batchLineKinds({ text, stored: responses, embeddings, images }),
    gateway,
    logger: deps.logger,
    metrics,
    clock,
    settings: deps.config.batches,
    upstream: new BatchUpstream({ store: upstreamBatches, catalog: deps.catalog, queue: queues.upstream_batches, gateway, logger: deps.logger, settings: deps.config.batches }),
    steps: new BatchSteps(deps.redis, deps.config.queuePrefix),
  });
  return {
    ...deps,
    lane,
    queues,
    bus,
    generations,
    stats,
    gateway,
    planner,
    text,
    responses,
    backgroundStreams: new BackgroundStreams(deps.db, new ResponseStreamLog(deps.redis, deps.config.queuePrefix), deps.logger, clock),
    embeddings,
    questions: new TypedQuestionsService({ db: deps.db, planner, gateway, syncWaitMs }),
    images,
    media: new MediaService({ planner, gateway, records, files, callbacks: new CallbackService(queues.callbacks, { backoffMs: deps.config.media.callbackBackoffMs }) }),
    mediaOperations: new MediaOperationsService({ catalog: deps.catalog, planner, gateway, records }),
    metrics,
    tracing,
    files,
    history: new HistoryService(deps.db, { pool: deps.historyPools?.primary, replica: deps.readDb && { db: deps.readDb, pool: deps.historyPools?.replica }, onReplicaError: replicaFailed, modelName: (id) => modelDisplayName(deps.catalog, id) }),
    batchFiles,
    batches: new BatchesService({ db: deps.db, files: batchFiles, queue: queues.batches, logger: deps.logger, clock }),
    batchDriver,
    databaseReady: () => databaseAnswers(deps.db),
    ready: async () => {
      // The subscriber too: a SUBSCRIBE sent while ioredis still runs its ready check can be lost, leaving the
      // reply channel deaf (every synchronous wait would then run out).
      await Promise.all([whenReady(deps.redis), whenReady(deps.subscriber)]);
      await bus.start();
      await listenForKeyChanges(deps.subscriber, deps.config.queuePrefix, applyKeyChange);
    },
    close: async () => {
      await leases?.close();
      bus.close();
      await Promise.all(Object.values(queues).map((q) => q.close()));
      await ownTracing?.shutdown();
    },
    clock,
    workersReady: deps.workersReady ?? (async () => true),
    auth,
    sessionGate,
    guard,
    readGuard: [...guard, settledReads(settlements)],
    settlements,
    accounts,
    members: new MembersService(deps.db, accounts, clock),
    activity: new ActivityService(deps.db, clock, deps.readDb, replicaFailed),
    keyInfo: new KeyInfoService(deps.db, clock),
    ledger,
  };
}
