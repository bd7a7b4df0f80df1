import { randomBytes } from 'node:crypto';
import { GenerationBus, GenerationPublisher, LocalBuses, type BusMessage } from '../../shared/queue/generation-bus';
import { createRedis, whenReady } from '../../shared/queue/redis';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { waitFor } from '../helpers/until';

describe('GenerationBus (real Redis)', () => {
  const pub = createRedis(TEST_REDIS_URL, { patient: true });
  const sub = createRedis(TEST_REDIS_URL, { patient: true });
  // Only through Redis: no process's reply channels (a lane's LocalBuses) are given.
  const bus = new GenerationBus(pub, sub, `{t-${randomBytes(4).toString('hex')}}`);
  beforeAll(async () => {
    await Promise.all([whenReady(pub), whenReady(sub)]);
    await bus.start();
  });
  afterAll(() => {
    pub.disconnect();
    sub.disconnect();
  });

  it('delivers a generation its own numbered messages, and nothing once detached', async () => {
    const got: BusMessage[] = [];
    const detach = bus.listen('gen_a', (m) => got.push(m));
    const other: BusMessage[] = [];
    bus.listen('gen_b', (m) => other.push(m));
    const p = new GenerationPublisher(pub, bus.channel, 'gen_a');
    await p.send({ type: 'delta', event: { type: 'text_delta', text: 'hi' } });
    await p.send({ type: 'done', payload: { ok: 1 } });
    await waitFor('both messages', () => got.length >= 2);
    expect(got.map((m) => [m.type, m.seq])).toEqual([
      ['delta', 1],
      ['done', 2],
    ]);
    expect(other).toEqual([]);
    detach();
    await p.send({ type: 'cancelled' });
    // The channel keeps the publisher's order: once a later message reached gen_b, the cancel has come and gone.
    await new GenerationPublisher(pub, bus.channel, 'gen_b').send({ type: 'cancelled' });
    await waitFor("gen_b's message", () => other.length === 1);
    expect(got).toHaveLength(2);
  });

  it('tells every waiter to re-read the database after the subscriber reconnects', async () => {
    const got: BusMessage[] = [];
    bus.listen('gen_c', (m) => got.push(m));
    sub.disconnect(true); // drop the connection; ioredis reconnects and resubscribes
    await waitFor('the recheck', () => got.length > 0);
    expect(got[0]).toMatchObject({ type: 'recheck', id: 'gen_c' });
    const p = new GenerationPublisher(pub, bus.channel, 'gen_c');
    await p.send({ type: 'cancelled' });
    await waitFor('the cancel', () => got.some((m) => m.type === 'cancelled'));
    // Messages sent once the recheck came arrive (on a Redis Cluster a node leaving may add another recheck).
    expect(got.filter((m) => m.type !== 'recheck')).toEqual([expect.objectContaining({ type: 'cancelled', id: 'gen_c' })]);
  });

  it('hands a worker of the same process (lane) its messages directly, without Redis; another lane through Redis', async () => {
    const buses = new LocalBuses();
    const local = new GenerationBus(pub, null, `{t-${randomBytes(4).toString('hex')}}`, buses);
    const seen: string[] = [];
    const watcher = pub.duplicate();
    await watcher.subscribe(local.channel);
    watcher.on('message', (_c: string, text: string) => seen.push(text));
    const got: BusMessage[] = [];
    local.listen('gen_d', (m) => got.push(m));
    const p = new GenerationPublisher(pub, local.channel, 'gen_d', buses);
    // A worker of another process (another lane) publishes through Redis.
    await new GenerationPublisher(pub, local.channel, 'gen_d', new LocalBuses()).send({ type: 'started', endpoint: 'e', model: 'm' });
    await waitFor('the message through Redis', () => seen.length > 0);
    expect(seen.map((t) => JSON.parse(t).type)).toEqual(['started']);
    expect(got).toHaveLength(0);
    seen.length = 0;
    await p.send({ type: 'delta', event: { type: 'text_delta', text: 'hi' } });
    // Delivered before send resolves: nothing to wait for.
    expect(got.map((m) => [m.type, m.seq])).toEqual([['delta', 1]]);
    await p.send({ type: 'done', payload: { ok: 1 } });
    expect(got.map((m) => [m.type, m.seq])).toEqual([
      ['delta', 1],
      ['done', 2],
    ]);
    // Once closed, the channel is an ordinary Redis channel again.
    local.close();
    await p.send({ type: 'cancelled' });
    await waitFor('the message through Redis', () => seen.length > 0);
    expect(seen.map((t) => JSON.parse(t).type)).toEqual(['cancelled']);
    expect(got).toHaveLength(2);
    watcher.disconnect();
  });
});
