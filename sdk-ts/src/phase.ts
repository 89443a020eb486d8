import type { Resource } from "../gen/converge/v1/types_pb.js";

/** The phases a resource can be in, in the server's precedence order. */
export const Phase = {
  Deleting: "Deleting",
  Quarantined: "Quarantined",
  Failed: "Failed",
  Orphaned: "Orphaned",
  Degraded: "Degraded",
  Ready: "Ready",
  Reconciling: "Reconciling",
} as const;

/** One of the {@link Phase} values. */
export type PhaseName = (typeof Phase)[keyof typeof Phase];

/** isReady reports whether r is Ready; undefined is not. */
export function isReady(r: Resource | undefined): boolean {
  return r?.phase === Phase.Ready;
}

/** settled reports whether r has come to rest: Ready, or Failed. */
export function settled(r: Resource | undefined): boolean {
  return r?.phase === Phase.Ready || r?.phase === Phase.Failed;
}
