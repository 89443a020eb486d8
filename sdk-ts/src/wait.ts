import { Code, ConnectError } from "@connectrpc/connect";
import type { Resource } from "../gen/converge/v1/types_pb.js";
import type { Client, WaitOptions } from "./client.js";
import { Phase } from "./phase.js";
import { Wake } from "./wake.js";

// The first gap between reads no change prompted; later gaps double up to
// the poll interval.
const firstPollMs = 100;

/** waitFor is Client.waitFor; see it for the contract. */
export async function waitFor(
  c: Client,
  kind: string,
  name: string,
  done: (r: Resource) => boolean,
  options: WaitOptions,
): Promise<Resource> {
  const namespace = options.namespace || "default";
  const what = `${namespace}/${kind}/${name}`;
  const ac = new AbortController();
  const onAbort = () => ac.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) ac.abort();
  let timedOut = false;
  const timer =
    options.timeoutMs !== undefined
      ? setTimeout(() => {
          timedOut = true;
          ac.abort();
        }, options.timeoutMs)
      : undefined;
  // The watch runs on its own and only says when to read: the first time
  // once it is registered, then after each change of the resource.
  const wake = new Wake();
  ac.signal.addEventListener("abort", () => wake.poke(), { once: true });
  if (ac.signal.aborted) wake.poke();
  let registered = false;
  let watchErr: unknown;
  const watching = (async () => {
    for await (const resp of c.watch({ namespace, kind, name }, { signal: ac.signal })) {
      if (resp.heartbeat || resp.changes.some((ch) => ch.namespace === namespace && ch.kind === kind && ch.name === name)) {
        registered = true;
        wake.poke();
      }
    }
  })().catch((e: unknown) => {
    watchErr = e ?? new Error("watch failed");
    wake.poke();
  });
  let poll: ReturnType<typeof setTimeout> | undefined;
  let pollDelay = 0;
  const armPoll = (reset: boolean) => {
    if (!options.pollIntervalMs) return;
    pollDelay = reset ? Math.min(firstPollMs, options.pollIntervalMs) : Math.min(2 * pollDelay, options.pollIntervalMs);
    clearTimeout(poll);
    poll = setTimeout(() => {
      armPoll(false);
      wake.poke();
    }, pollDelay);
  };
  let last: Resource | undefined;
  try {
    for (;;) {
      await wake.wait();
      if (ac.signal.aborted) {
        const why = timedOut ? `timed out after ${options.timeoutMs} ms` : "aborted";
        const seen = last ? `last seen ${describe(last)}` : "not read yet";
        throw new Error(`converge: wait for resource ${what}: ${why}; ${seen}`);
      }
      if (watchErr !== undefined) {
        throw watchErr;
      }
      if (!registered) {
        continue;
      }
      armPoll(true);
      try {
        last = await c.get(kind, name, namespace);
      } catch (e) {
        if (e instanceof ConnectError && e.code === Code.NotFound) {
          throw new ConnectError(`resource ${what} not found`, Code.NotFound);
        }
        if (ac.signal.aborted) {
          continue;
        }
        throw e;
      }
      if (done(last)) {
        return last;
      }
    }
  } finally {
    clearTimeout(timer);
    clearTimeout(poll);
    options.signal?.removeEventListener("abort", onAbort);
    ac.abort();
    await watching;
  }
}

/** describe renders a resource's state for messages: its phase and why. */
function describe(r: Resource): string {
  const why = r.failure?.message || r.waiting || r.conditions.find((c) => c.status !== "True")?.message || "";
  return `phase ${r.phase || Phase.Reconciling}${why ? ` (${why})` : ""}`;
}
