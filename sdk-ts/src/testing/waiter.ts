/** The default bound of every wait of the fake server, in ms. */
export const defaultTimeoutMs = 5000;

/** Waiter is a list that can be awaited for an element matching a predicate. */
export class Waiter<T> {
  readonly items: T[] = [];
  private waiters: { pred: (t: T) => boolean; from: number; resolve: (t: T) => void }[] = [];
  private closed = false;

  constructor(private readonly timeoutMs = defaultTimeoutMs) {}

  push(t: T): void {
    this.items.push(t);
    const i = this.items.length - 1;
    this.waiters = this.waiters.filter((w) => {
      if (i >= w.from && w.pred(t)) {
        w.resolve(t);
        return false;
      }
      return true;
    });
  }

  /** close marks the list as complete; later waits still time out, saying so. */
  close(): void {
    this.closed = true;
  }

  /**
   * next resolves with the first item at index from or later that matches
   * pred, waiting for it up to ms; then it rejects with an Error saying
   * what it waited for.
   */
  next(pred: (t: T) => boolean, what: string, from = 0, ms = this.timeoutMs): Promise<T> {
    const found = this.items.slice(from).find(pred);
    if (found !== undefined) {
      return Promise.resolve(found);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== entry);
        reject(new Error(`timed out after ${ms} ms waiting for ${what}${this.closed ? " (stream closed)" : ""}`));
      }, ms);
      const entry = {
        pred,
        from,
        resolve: (t: T) => {
          clearTimeout(timer);
          resolve(t);
        },
      };
      this.waiters.push(entry);
    });
  }
}

/** Queue is an async iterable fed by push and ended by end. */
export class Queue<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private error: unknown;

  push(t: T): void {
    this.items.push(t);
    this.wake?.();
  }

  end(error?: unknown): void {
    this.ended = true;
    this.error = error;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      while (this.items.length > 0) {
        yield this.items.shift() as T;
      }
      if (this.ended) {
        if (this.error !== undefined) throw this.error;
        return;
      }
      await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
    }
  }
}
