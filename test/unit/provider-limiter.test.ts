import { ProviderLimiter } from '../../shared/services/provider-limiter';

describe('ProviderLimiter', () => {
  it('keeps at most maxConcurrency calls of one provider in flight and lets others through', async () => {
    const limiter = new ProviderLimiter();
    let peak = 0;
    const slow = { id: 'slow', maxConcurrency: 2 };
    const call = () =>
      limiter.run(slow, async () => {
        peak = Math.max(peak, limiter.inFlight('slow'));
        await new Promise((r) => setTimeout(r, 20));
        return 1;
      });
    const fastDone = limiter.run({ id: 'fast', maxConcurrency: 1 }, async () => 'fast');
    const results = await Promise.all([call(), call(), call(), call(), call()]);
    expect(results).toEqual([1, 1, 1, 1, 1]);
    expect(peak).toBe(2);
    expect(await fastDone).toBe('fast');
    expect(limiter.inFlight('slow')).toBe(0);
  });

  it('does not limit a provider without a cap, and releases the slot when a call throws', async () => {
    const limiter = new ProviderLimiter();
    await expect(limiter.run({ id: 'p', maxConcurrency: 1 }, async () => Promise.reject(new Error('x')))).rejects.toThrow('x');
    expect(await limiter.run({ id: 'p', maxConcurrency: 1 }, async () => 2)).toBe(2);
    expect(await limiter.run({ id: 'q' }, async () => 3)).toBe(3);
  });
});
