import type { NextFunction, Request, Response } from 'express';
import type { Principal } from '../../shared/auth/principal';
import type { SettlementJournal } from '../../shared/billing/settlement-journal';

/**
 * Read-your-writes for the reads that show money and history (balance, key, keys, history, stored responses): a
 * worker replies before its settlement commits (docs/architecture.md "Endings and rules"), so such a read first waits
 * until the settlements promised to the caller's organization when it arrived are committed (a few milliseconds).
 */
export function settledReads(journal: SettlementJournal) {
  return async (_req: Request, res: Response, next: NextFunction): Promise<void> => {
    await journal.waitSettled((res.locals.principal as Principal).organizationId);
    next();
  };
}
