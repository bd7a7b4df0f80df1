import type Redis from 'ioredis';
import type { Config } from '../shared/config/env';
import type { Db } from '../shared/db/client';
import type { Catalog } from '../shared/catalog/catalog.types';
import type { Logger } from '../shared/logger';
import { AccountsService } from '../shared/services/accounts.service';
import { KeyInfoService } from '../shared/services/key-info.service';
import { Ledger } from '../shared/billing/ledger';
import type { RequestHandler } from 'express';
import { Authenticator, authMiddleware } from './middleware/auth';
import { rateLimitMiddleware } from './middleware/rate-limit';

/** Everything a route needs, built once from injected I/O (no module-level state). */
export interface AppDeps {
  config: Config;
  db: Db;
  redis: Redis;
  catalog: Catalog;
  logger: Logger;
  secret: string;
  clock?: () => Date;
  /** Readiness probe for the workers (true when at least one worker serves the queues). */
  workersReady?: () => Promise<boolean>;
  authCacheMs?: number;
}

export interface AppContext extends Required<Omit<AppDeps, 'authCacheMs' | 'workersReady'>> {
  workersReady: () => Promise<boolean>;
  auth: Authenticator;
  accounts: AccountsService;
  keyInfo: KeyInfoService;
  ledger: Ledger;
  /** Authentication then rate limiting: put in front of every authenticated route (unknown routes stay 404). */
  guard: RequestHandler[];
}

export function buildContext(deps: AppDeps): AppContext {
  const clock = deps.clock ?? (() => new Date());
  const auth = new Authenticator(deps.db, deps.secret, deps.authCacheMs ?? 1000);
  return {
    ...deps,
    clock,
    workersReady: deps.workersReady ?? (async () => true),
    auth,
    guard: [authMiddleware(auth), rateLimitMiddleware(deps.redis, deps.config.queuePrefix, deps.config.defaultRateLimitPerMinute)],
    accounts: new AccountsService(deps.db, deps.secret, clock),
    keyInfo: new KeyInfoService(deps.db, clock),
    ledger: new Ledger(deps.db, clock),
  };
}
