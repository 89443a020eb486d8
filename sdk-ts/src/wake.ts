/**
 * Wake is a one-waiter wake-up: poke sets a flag and wakes the waiter; wait
 * returns at once if the flag is set, and clears it. Pokes between waits
 * collapse into one, which is enough because the waiter does everything
 * queued when it wakes.
 */
export class Wake {
  private flag = false;
  private waiter: (() => void) | undefined;

  poke(): void {
    this.flag = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  async wait(): Promise<void> {
    if (!this.flag) {
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
    this.flag = false;
  }
}

/** sleep resolves after ms, or at once when signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Node's timers take at most 2^31-1 ms. */
export const maxTimerMs = 2 ** 31 - 1;

/**
 * within resolves true once p settles, or false after ms, whichever is
 * first; its timer is cleared either way, so it never keeps the process
 * alive on its own.
 */
export function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.min(ms, maxTimerMs))));
  return Promise.race([p.then(() => true, () => true), late]).finally(() => clearTimeout(timer));
}
