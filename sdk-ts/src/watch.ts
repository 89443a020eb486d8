import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client as RpcClient } from "@connectrpc/connect";
import {
  WatchRequestSchema,
  WatchResponseSchema,
  type ControlService,
  type WatchRequest,
  type WatchResponse,
} from "../gen/converge/v1/control_pb.js";
import { sleep } from "./wake.js";

// Reconnect backoff bounds.
const minReconnectMs = 100;
const maxReconnectMs = 5000;

/**
 * follow is Client.watch: a Watch that reopens a broken stream from the
 * last cursor it saw. See Client.watch for the contract.
 */
export async function* follow(
  rpc: RpcClient<typeof ControlService>,
  req: MessageInitShape<typeof WatchRequestSchema>,
  signal: AbortSignal | undefined,
): AsyncGenerator<WatchResponse> {
  const r: WatchRequest = create(WatchRequestSchema, req);
  const ac = new AbortController();
  const stop = () => ac.abort();
  signal?.addEventListener("abort", stop, { once: true });
  if (signal?.aborted) ac.abort();
  let established = false;
  let delay = minReconnectMs;
  try {
    for (;;) {
      let registered = false;
      let err: unknown;
      try {
        for await (const resp of rpc.watch(r, { signal: ac.signal })) {
          if (!registered) {
            registered = established = true;
            delay = minReconnectMs;
            // The contract makes the first message a heartbeat; should a
            // server send a change first, the caller still hears that the
            // stream is live.
            const first =
              resp.heartbeat && resp.changes.length === 0 ? resp : create(WatchResponseSchema, { heartbeat: true, cursor: r.cursor });
            advance(r, first);
            yield first;
            if (first === resp) {
              continue;
            }
          }
          advance(r, resp);
          if (resp.changes.length > 0) {
            yield resp;
          }
        }
        err = new ConnectError("watch stream ended", Code.Unavailable);
      } catch (e) {
        err = e;
      }
      if (ac.signal.aborted) {
        return;
      }
      if (!established || !retryable(err)) {
        throw err;
      }
      await sleep(delay, ac.signal);
      delay = Math.min(2 * delay, maxReconnectMs);
    }
  } finally {
    signal?.removeEventListener("abort", stop);
    ac.abort();
  }
}

/** advance moves the resume point past resp. */
function advance(r: WatchRequest, resp: WatchResponse): void {
  if (resp.cursor) {
    r.cursor = resp.cursor;
  } else if (resp.changes.length > 0 && resp.changes[resp.changes.length - 1].cursor) {
    r.cursor = resp.changes[resp.changes.length - 1].cursor;
  }
}

/**
 * retryable reports whether reopening a broken stream may help: codes that
 * describe the request itself (or the caller's rights) do not change on a
 * retry.
 */
function retryable(err: unknown): boolean {
  const code = ConnectError.from(err).code;
  return ![
    Code.InvalidArgument,
    Code.NotFound,
    Code.AlreadyExists,
    Code.PermissionDenied,
    Code.FailedPrecondition,
    Code.OutOfRange,
    Code.Unimplemented,
    Code.Unauthenticated,
  ].includes(code);
}
