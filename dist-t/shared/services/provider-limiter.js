"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ProviderLimiter = void 0;
/**
 * Caps the upstream calls in flight per provider within one worker process (catalog `maxConcurrency`), so a
 * slow provider holds at most that many of the process's job slots and cannot starve the others. Calls over
 * the cap wait their turn in arrival order. 0 or absent: no cap.
 */
class ProviderLimiter {
    active = new Map();
    waiting = new Map();
    async run(provider, fn) {
        const cap = provider.maxConcurrency ?? 0;
        if (cap <= 0)
            return fn();
        if ((this.active.get(provider.id) ?? 0) >= cap) {
            await new Promise((resolve) => {
                const q = this.waiting.get(provider.id) ?? [];
                q.push(resolve);
                this.waiting.set(provider.id, q);
            });
        }
        this.active.set(provider.id, (this.active.get(provider.id) ?? 0) + 1);
        try {
            return await fn();
        }
        finally {
            this.active.set(provider.id, (this.active.get(provider.id) ?? 1) - 1);
            this.waiting.get(provider.id)?.shift()?.();
        }
    }
    inFlight(providerId) {
        return this.active.get(providerId) ?? 0;
    }
}
exports.ProviderLimiter = ProviderLimiter;
