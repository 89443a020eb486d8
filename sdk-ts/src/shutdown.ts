/**
 * shutdownSignal returns an AbortSignal that aborts on the first SIGTERM or
 * SIGINT (or the signals given), for {@link Worker.run}: the worker then
 * drains gracefully. A second signal while draining exits the process at
 * once with the conventional status (128 + the signal's number), as an
 * impatient Ctrl-C expects.
 *
 * ```ts
 * await worker.run(shutdownSignal());
 * ```
 */
export function shutdownSignal(signals: string[] = ["SIGTERM", "SIGINT"]): AbortSignal {
  const ac = new AbortController();
  const numbers: Record<string, number> = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1, SIGQUIT: 3 };
  const onSignal = (sig: string) => {
    if (ac.signal.aborted) {
      process.exit(128 + (numbers[sig] ?? 0));
    }
    ac.abort(new Error(`received ${sig}`));
  };
  for (const s of signals) {
    process.on(s as NodeJS.Signals, onSignal);
  }
  return ac.signal;
}
