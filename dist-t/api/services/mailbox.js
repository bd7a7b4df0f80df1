"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Mailbox = void 0;
/** The messages of one generation as they arrive, read one at a time with a deadline. */
class Mailbox {
    queue = [];
    wake;
    closed = false;
    put(m) {
        this.queue.push(m);
        this.wake?.();
    }
    /** The next message, or null when none arrives within `timeoutMs` (or the mailbox is closed). */
    async next(timeoutMs) {
        if (this.queue.length)
            return this.queue.shift();
        if (this.closed)
            return null;
        await new Promise((resolve) => {
            const timer = setTimeout(resolve, timeoutMs);
            this.wake = () => {
                clearTimeout(timer);
                resolve();
            };
        });
        this.wake = undefined;
        return this.queue.shift() ?? null;
    }
    close() {
        this.closed = true;
        this.wake?.();
    }
}
exports.Mailbox = Mailbox;
