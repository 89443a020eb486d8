/**
 * Backoff computes reconnect delays: exponential growth of the ceiling from
 * min to max, and a uniformly random delay below it ("full jitter"), so a
 * fleet of workers does not reconnect in lockstep after a server restart.
 */
export class Backoff {
  private attempt = 0;

  /** random returns a uniform value in [0, 1); tests replace it. */
  constructor(
    private readonly minMs: number,
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** next returns the delay before the next attempt and counts the attempt. */
  next(): number {
    let ceiling = this.minMs;
    for (let i = 0; i < this.attempt && ceiling < this.maxMs; i++) {
      ceiling *= 2;
    }
    ceiling = Math.min(ceiling, this.maxMs);
    this.attempt++;
    // The ceiling itself is reachable.
    return Math.min(ceiling, Math.floor(this.random() * (ceiling + 1)));
  }

  /** reset starts the growth over, after a connection that worked. */
  reset(): void {
    this.attempt = 0;
  }
}
