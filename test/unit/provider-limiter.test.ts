import { ProviderLimiter } from '../../shared/services/provider-limiter';

describe('ProviderLimiter', () => {
  it('keeps at most maxConcurrency calls of one provider in flight and lets others through', async () => {
    const limiter = new ProviderLimiter();
    let peak = 0;
    const slow = { id: 'slow', maxConcurrency: 2 };
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const call = () =>
      limiter.run(slow, async () => {
        peak = Math.max(peak, limiter.inFlight('slow'));
        await gate;
        return 1;
      });
    const calls = [call(), call(), call(), call(), call()];
    // Two in flight, held; a call of another provider is not held behind them.
    expect(await limiter.run({ id: 'fast', maxConcurrency: 1 }, async () => 'fast')).toBe('fast');
    expect(limiter.inFlight('slow')).toBe(2);
    open();
    const results = await Promise.all(calls);
    expect(results).toEqual([1, 1, 1, 1, 1]);
    expect(peak).toBe(2);
    expect(limiter.inFlight('slow')).toBe(0);
  });

  it('does not limit a provider without a cap, and releases the slot when a call throws', async () => {
    const limiter = new ProviderLimiter();
    await expect(limiter.run({ id: 'p', maxConcurrency: 1 }, async () => Promise.reject(new Error('x')))).rejects.toThrow('x');
    expect(await limiter.run({ id: 'p', maxConcurrency: 1 }, async () => 2)).toBe(2);
    expect(await limiter.run({ id: 'q' }, async () => 3)).toBe(3);
  });
});
