/**
 * Reads a streaming replica may serve (DATABASE_READ_URL; spec decisions.md section 9): history's listings and
 * details. Money (balances, limits, reservations) and every read of one's own fresh writes stay on the primary: they
 * never come here. A read the replica cannot answer (stopped, unreachable, slower than its query timeout) or whose
 * answer is "not there" (a record it has not received yet: the read throws or returns null) is read from the primary.
 */
export class ReadRouting<R> {
  constructor(
    private readonly primary: R,
    private readonly replica: R | undefined,
    /** A replica that failed (not one that lacked a record): logged by the caller. */
    private readonly onReplicaError: (err: unknown) => void = () => undefined,
    /** An answer the replica gave that means "not received yet" (thrown): read again from the primary, unreported. */
    private readonly missing: (err: unknown) => boolean = () => false,
  ) {}

  /** From the replica, else from the primary. */
  async read<T>(fn: (from: R) => Promise<T>): Promise<T> {
    if (!this.replica) return fn(this.primary);
    let answer: T;
    try {
      answer = await fn(this.replica);
    } catch (err) {
      if (!this.missing(err)) this.onReplicaError(err);
      return fn(this.primary);
    }
    return answer ?? fn(this.primary);
  }
}
