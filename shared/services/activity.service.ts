import type { Db } from '../db/client';
import { Prisma } from '../db/generated/client';
import { AppError } from '../errors/app-error';
import type { Principal } from '../auth/principal';
import { activityDay, addDays } from '../billing/periods';
import type { ActivityQuery } from '../schemas/activity.schema';
import { ReadRouting } from '../db/read-routing';

/** One item of GET /v1/activity: a day x model x endpoint that had activity (decisions.md section 8). */
export interface ActivityItem {
  date: string;
  model: string;
  provider_name: string;
  endpoint_id: string;
  /** RUB. */
  usage: number;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  cached_tokens: number;
}

/** Whose activity a caller reads: always one organization, maybe one key, maybe one member. */
interface Scope {
  organizationId: string;
  apiKeyId?: string;
  userId?: string;
}

/**
 * Activity, read from totals a trigger keeps as generations end (prisma/migrations/20261205100000_activity_totals,
 * 20261208000000_activity_member_totals), never from the history: the organization's from `activity_org_totals`, a
 * member's from `activity_member_totals`, a key's from `activity_totals`. An API key sees its own activity; a member its
 * own and its keys' (their generations carry its user id); owner and admin the organization's.
 *
 * With DATABASE_READ_URL the totals are read from the replica (shared/db/read-routing.ts: the primary when it errs or
 * does not answer in time); the caller's filters (a key or member just made) are checked on the primary.
 */
export class ActivityService {
  private readonly totals: ReadRouting<Db>;

  constructor(
    private readonly db: Db,
    private readonly clock: () => Date = () => new Date(),
    replica?: Db,
    onReplicaError?: (err: unknown) => void,
  ) {
    this.totals = new ReadRouting(db, replica, onReplicaError);
  }

  async activity(principal: Principal, query: ActivityQuery): Promise<ActivityItem[]> {
    const today = activityDay(this.clock());
    let first = addDays(today, -(query.days - 1));
    let last = today;
    if (query.date !== undefined) {
      if (query.date < first || query.date > today) {
        throw AppError.validation([{ path: '/date', message: `must be within the last ${query.days} days (${first} to ${today})` }]);
      }
      first = last = query.date;
    }
    const scope = await this.scopeOf(principal, query);
    const sql = Prisma.sql;
    // Each read from the totals of its own scope, at most one row per item (days x endpoints, however many keys and
    // members): the organization's whole activity, a member's (its generations with or without a key), a key's. A key's
    // read filtered by member too (a key's generations carry its owner's id) still sums the detailed rows.
    const member = scope.apiKeyId === undefined && scope.userId !== undefined;
    const whole = scope.apiKeyId === undefined && scope.userId === undefined;
    const from = whole
      ? sql`activity_org_totals a WHERE a.organization_id = ${scope.organizationId} AND a.day BETWEEN ${first}::date AND ${last}::date`
      : member
        ? sql`activity_member_totals a WHERE a.organization_id = ${scope.organizationId} AND a.user_id = ${scope.userId}
               AND a.day BETWEEN ${first}::date AND ${last}::date`
        : sql`(SELECT day, model, provider, endpoint, SUM(usage) AS usage, SUM(requests) AS requests,
                      SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens,
                      SUM(reasoning_tokens) AS reasoning_tokens, SUM(cached_tokens) AS cached_tokens
                 FROM activity_totals
                WHERE organization_id = ${scope.organizationId} AND api_key_id = ${scope.apiKeyId}
                  AND day BETWEEN ${first}::date AND ${last}::date
                  ${scope.userId !== undefined ? sql`AND user_id = ${scope.userId}` : Prisma.empty}
                GROUP BY day, model, provider, endpoint) a`;
    // One JSON value: a thousand items cost the driver one string to hand over, not a thousand rows to map. Amounts are
    // rounded to 6 places as every amount in JSON is (shared/money.ts moneyNumber: half up; these are never negative).
    const [row] = await this.totals.read((db) => db.$queryRaw<Array<{ items: string }>>(sql`
      SELECT COALESCE(json_agg(json_build_object(
               'date', a.day::text, 'model', a.model, 'provider_name', a.provider, 'endpoint_id', a.endpoint,
               'usage', round(a.usage, 6), 'requests', a.requests, 'prompt_tokens', a.prompt_tokens,
               'completion_tokens', a.completion_tokens, 'reasoning_tokens', a.reasoning_tokens, 'cached_tokens', a.cached_tokens)
             ORDER BY a.day DESC, a.usage DESC, a.model, a.endpoint), '[]')::text AS items
        FROM ${from}`));
    return JSON.parse(row.items) as ActivityItem[];
  }

  /** The caller's scope, narrowed by the filters it may use; a key or member of another organization is a 404. */
  private async scopeOf(p: Principal, q: ActivityQuery): Promise<Scope> {
    if (p.kind === 'key') {
      if ((q.api_key_id !== undefined && q.api_key_id !== p.keyId) || (q.user_id !== undefined && q.user_id !== p.userId)) {
        throw new AppError('FORBIDDEN', 'An API key sees only its own activity');
      }
      return { organizationId: p.organizationId, apiKeyId: p.keyId };
    }
    const member = p.role === 'member';
    if (q.api_key_id !== undefined) {
      const key = await this.db.apiKey.findUnique({ where: { id: q.api_key_id }, select: { organizationId: true, userId: true } });
      if (!key || key.organizationId !== p.organizationId) throw new AppError('NOT_FOUND', `Key ${q.api_key_id} not found`);
      if (member && key.userId !== p.userId) throw new AppError('FORBIDDEN', 'A member sees only its own keys\' activity');
    }
    if (q.user_id !== undefined) {
      const user = await this.db.user.findUnique({ where: { id: q.user_id }, select: { organizationId: true } });
      if (!user || user.organizationId !== p.organizationId) throw new AppError('NOT_FOUND', `Member ${q.user_id} not found`);
      if (member && q.user_id !== p.userId) throw new AppError('FORBIDDEN', 'A member sees only its own activity');
    }
    return { organizationId: p.organizationId, apiKeyId: q.api_key_id, userId: member ? p.userId : q.user_id };
  }
}
