import { newId } from '../ids';
import type { LeaseSettings } from '../config/env';
import type { Logger } from '../logger';
import type { Ledger } from './ledger';
import type { Decimal } from '../money';

/**
 * Reservation leases (docs/architecture.md "Leases"; the migration reservation_leases). A process reserves, ahead of
 * time and with the ledger's usual rules, room for a few requests of one caller (organization, key, member): a lease,
 * one reservation row in PostgreSQL. A request whose bound the lease still covers is granted here, in memory, with
 * no round trip: its provider is called while its generation is recorded ("drawn": its bound moves from the lease's
 * reservation to its own in the next ledger batch). The money is reserved in PostgreSQL before the provider is
 * called, as for any request; only the generation's own record is not waited for.
 *
 * - A lease is taken when a request finds none with room (that request goes the usual way), and renewed ahead when
 *   half of it is drawn. It is taken only while the caller's room is at least `headroom` leases: near the end of a
 *   balance or a limit every request reserves for itself, so no process sits on money another one's request needs.
 * - Its size follows the caller's rate: a lease half drawn within a second is followed by one twice as large (up to
 *   `MAX_SCALE` times `requests` bounds), one given back idle by one half as large; a larger lease the room does not
 *   allow is tried again, a while later, at half the size. A busy caller takes a lease every second or so, not one
 *   every few requests.
 * - A lease nobody drew from for `idleMs`, one `maxAgeMs` old, or one replaced by a new lease is given back once its
 *   drawn opens have committed (the unspent rest is released).
 * - Every `idleMs` (or `ttlMs / 3`, if shorter) the process extends its leases' expiry to `ttlMs` ahead. A process
 *   that dies leaves its leases to the reaper, which releases them once expired (`sy_lease_sweep`); a lease the
 *   process learns is gone (it stood still past its expiry) or revoked (its key's terms changed) is not drawn from
 *   again, and is given back once its drawn opens have committed: what they drew stays theirs.
 */
export type { LeaseSettings } from '../config/env';

/** A lease grows to at most this many times `requests` bounds for a busy caller. */
export const MAX_SCALE = 64;

/** Who a lease is for: a reservation's organization, key and member. */
export interface LeaseOwner {
  organizationId: string;
  apiKeyId: string | null;
  userId: string | null;
}

interface Lease {
  id: string;
  owner: LeaseOwner;
  /** The bound it was sized by, and the scale it was taken at. */
  bound: Decimal;
  scale: number;
  /** Still drawable here. */
  free: Decimal;
  size: Decimal;
  /** Drawn opens not yet committed: the lease is given back only at 0. */
  pending: number;
  takenAt: number;
  lastDraw: number;
  /** No longer drawn from; given back once `pending` is 0. */
  retiring: boolean;
}

export class LeaseDesk {
  /** The lease drawn from, by owner. */
  private readonly current = new Map<string, Lease>();
  /** Every lease this process holds (current and retiring), by id. */
  private readonly held = new Map<string, Lease>();
  /** Owners whose lease is being taken. */
  private readonly taking = new Set<string>();
  /** Owners refused a lease (too close to a limit, or no room): not asked again before this time. */
  private readonly refusedUntil = new Map<string, number>();
  /** Each owner's lease size, in `requests` bounds (1 to MAX_SCALE). */
  private readonly scales = new Map<string, number>();
  /** Takes and give-backs under way (close waits for them). */
  private readonly underway = new Set<Promise<unknown>>();
  private readonly timer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly ledger: Ledger,
    private readonly settings: LeaseSettings,
    private readonly logger: Logger,
    /** The ledger's clock: expiries are compared with the times the sweep is given. */
    private readonly clock: () => Date = () => new Date(),
  ) {
    if (settings.requests > 0) {
      this.timer = setInterval(() => void this.tick(), Math.max(50, Math.min(settings.ttlMs / 3, settings.idleMs)));
      this.timer.unref();
    }
  }

  /**
   * Grants `bound` from the owner's lease: the lease's id, or null when there is none with room (the request reserves
   * for itself; a lease is taken for the requests after it).
   */
  draw(owner: LeaseOwner, bound: Decimal): string | null {
    // LEASE_REQUESTS=0 turns leases off; a closed desk grants nothing more.
    if (this.settings.requests <= 0 || this.closed || bound.lessThanOrEqualTo(0)) return null;
    const key = keyOf(owner);
    const lease = this.current.get(key);
    if (!lease || lease.free.lessThan(bound)) {
      this.take(key, owner, bound);
      return null;
    }
    lease.free = lease.free.minus(bound);
    lease.pending++;
    const now = (lease.lastDraw = Date.now());
    if (lease.free.lessThan(lease.size.div(2)) && !this.taking.has(key) && (this.refusedUntil.get(key) ?? 0) <= now) {
      // Half drawn within a second: the next lease is twice as large.
      if (now - lease.takenAt < 1_000) this.scales.set(key, Math.min(MAX_SCALE, lease.scale * 2));
      this.take(key, owner, bound);
    }
    return lease.id;
  }

  /** A draw not used after all (its job could not be claimed here): the bound is back in the lease. */
  undraw(leaseId: string, bound: Decimal): void {
    const lease = this.held.get(leaseId);
    if (!lease) return;
    lease.free = lease.free.plus(bound);
    lease.pending--;
    this.giveBackIfDone(lease);
  }

  /** A drawn open has committed (or failed): `granted` 0 means the lease was gone in PostgreSQL. */
  opened(leaseId: string, granted: Decimal | null): void {
    const lease = this.held.get(leaseId);
    if (!lease) return;
    lease.pending--;
    if (granted !== null && granted.isZero()) {
      this.logger.warn('a lease was gone when a request drawn from it was recorded', { lease: leaseId });
      this.retire(lease);
    }
    // A lease still drawn from stays; a retiring one goes back once its last drawn open has committed.
    else if (lease.retiring) this.giveBackIfDone(lease);
  }

  /**
   * A key's terms changed (its leases are revoked in PostgreSQL: `Ledger.revokeLeasesOfKey`): this process draws
   * nothing more from its leases of that key, and gives each back once its drawn opens have committed. Another
   * process learns it at its next renewal.
   */
  revokeKey(apiKeyId: string): void {
    for (const lease of [...this.current.values()]) if (lease.owner.apiKeyId === apiKeyId) this.retire(lease);
  }

  /** Gives back every lease nothing is pending on and stops renewing (process shutdown); the rest expire. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.all(this.underway);
    for (const lease of this.held.values()) this.retire(lease);
    await Promise.all(this.underway);
  }

  private track(p: Promise<unknown>): void {
    this.underway.add(p);
    void p.finally(() => this.underway.delete(p));
  }

  /** Takes a lease for the owner, in the background; `replace`: the current one is given back even when none is granted. */
  private take(key: string, owner: LeaseOwner, bound: Decimal, replace = false): void {
    if (this.taking.has(key) || (this.refusedUntil.get(key) ?? 0) > Date.now()) return;
    this.taking.add(key);
    const scale = this.scales.get(key) ?? 1;
    const amount = bound.times(this.settings.requests * scale);
    const id = newId('lease');
    const expiresAt = new Date(this.clock().getTime() + this.settings.ttlMs);
    const taking = this.ledger
      .takeLease({ id, organizationId: owner.organizationId, apiKeyId: owner.apiKeyId, userId: owner.userId, amount, headroom: amount.times(this.settings.headroom), expiresAt })
      .then((r) => {
        const previous = this.current.get(key);
        if ('refused' in r) {
          // Not asked again for a while; a larger lease than the room allows is then tried at half the size.
          if (scale > 1) this.scales.set(key, scale / 2);
          this.refusedUntil.set(key, Date.now() + this.settings.idleMs);
          if (replace && previous) this.retire(previous);
          return;
        }
        this.refusedUntil.delete(key);
        const now = Date.now();
        const lease: Lease = { id, owner, bound, scale, free: r.granted, size: r.granted, pending: 0, takenAt: now, lastDraw: now, retiring: false };
        this.held.set(id, lease);
        if (this.closed) return this.retire(lease);
        this.current.set(key, lease);
        if (previous) this.retire(previous);
      })
      .catch((err: unknown) => {
        const previous = this.current.get(key);
        if (replace && previous) this.retire(previous);
        // Not taken, or taken and not known here (the answer was lost): the reaper releases that one once expired.
        this.refusedUntil.set(key, Date.now() + this.settings.idleMs);
        this.logger.warn('a lease could not be taken', { err, lease: id });
      })
      .finally(() => this.taking.delete(key));
    this.track(taking);
  }

  private retire(lease: Lease): void {
    lease.retiring = true;
    const key = keyOf(lease.owner);
    if (this.current.get(key) === lease) this.current.delete(key);
    this.giveBackIfDone(lease);
  }

  private giveBackIfDone(lease: Lease): void {
    if (lease.retiring && lease.pending === 0 && this.held.has(lease.id)) this.track(this.giveBack(lease));
  }

  private async giveBack(lease: Lease): Promise<void> {
    this.held.delete(lease.id);
    // A lease not given back now (the database is away) is released by the reaper once it expires.
    await this.ledger.returnLease(lease.id).catch((err: unknown) => this.logger.warn('a lease could not be given back', { err, lease: lease.id }));
  }

  /** Gives back idle and old leases, then renews the rest; a lease no longer held in PostgreSQL is dropped. */
  private async tick(): Promise<void> {
    const now = Date.now();
    for (const [key, until] of this.refusedUntil) if (until <= now) this.refusedUntil.delete(key);
    for (const lease of this.current.values()) {
      const key = keyOf(lease.owner);
      if (now - lease.lastDraw >= this.settings.idleMs) {
        // Idle: given back, and the next one half as large.
        if (lease.scale > 1) this.scales.set(key, lease.scale / 2);
        else this.scales.delete(key);
        this.retire(lease);
      }
      // Replaced by a new lease when the room still allows one; given back either way.
      else if (now - lease.takenAt >= this.settings.maxAgeMs) this.take(key, lease.owner, lease.bound, true);
    }
    const ids = [...this.held.keys()];
    if (ids.length === 0) return;
    try {
      const held = await this.ledger.renewLeases(ids, new Date(this.clock().getTime() + this.settings.ttlMs));
      for (const id of ids) {
        const lease = this.held.get(id);
        const state = held.get(id);
        if (!lease || (state && !state.revoked)) continue;
        // Revoked (its key's terms changed), or gone (the reaper released it: this process stood still past its
        // expiry): not drawn from again, and given back once its drawn opens have committed (a no-op when gone).
        if (!state) this.logger.warn('a lease expired before its process renewed it', { lease: id });
        this.retire(lease);
      }
    } catch (err) {
      this.logger.warn('leases could not be renewed', { err });
    }
  }
}

function keyOf(o: LeaseOwner): string {
  return `${o.organizationId}\u0000${o.apiKeyId ?? ''}\u0000${o.userId ?? ''}`;
}
