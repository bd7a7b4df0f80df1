import { headroomSlots, SlotShare, underShare, type ShareWorker } from '../../workers/services/default-share';
import type { ClaimTicket } from '../../shared/queue/claims';

describe('the default share (workers/services/default-share.ts)', () => {
  it('an organization is under its share while it holds fewer than an equal part of the slots among the organizations holding them', () => {
    expect(underShare(0, 1, 128)).toBe(true); // one that holds nothing, beside one that holds all
    expect(underShare(128, 1, 128)).toBe(false); // alone, it holds its share: all of them
    expect(underShare(63, 2, 128)).toBe(true);
    expect(underShare(64, 2, 128)).toBe(false);
    expect(underShare(0, 3, 4)).toBe(true);
  });

  it('the headroom is a fraction of the concurrency, at least one slot, none for 0', () => {
    expect(headroomSlots(128, 0.125)).toBe(16);
    expect(headroomSlots(16, 0.125)).toBe(2);
    expect(headroomSlots(4, 0.125)).toBe(1);
    expect(headroomSlots(128, 0)).toBe(0);
  });

  it('a headroom slot goes to an organization under its share while the headroom has room, and comes back when its job ends', () => {
    const share = new SlotShare(4, 0.5);
    const ended: Array<() => void> = [];
    const w: ShareWorker = {
      keys: {},
      toKey: (t) => t,
      full: () => true,
      ticketBeyond: (_kind, org, end) => {
        share.started(org);
        ended.push(() => (share.ended(org), end()));
        return { token: 't', lockDuration: 1 } as ClaimTicket;
      },
    };
    for (let i = 0; i < 4; i++) share.started('A');
    expect(share.beyond('A', w, 'take')).toBeNull(); // A holds every slot: its share
    expect(share.beyond('B', w, 'take')).not.toBeNull();
    expect(share.beyond('C', w, 'claim')).not.toBeNull();
    expect(share.room).toBe(0);
    expect(share.beyond('D', w, 'take')).toBeNull(); // the headroom is full
    ended[0]!();
    expect(share.room).toBe(1);
    expect(share.beyond('D', w, 'take')).not.toBeNull();
  });
});
