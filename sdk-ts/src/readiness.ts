import { create } from "@bufbuild/protobuf";
import {
  ReactionReadinessSchema,
  ReactionRefSchema,
  ReadinessSchema,
  type ReactionReadiness,
  type Readiness as ReadinessMessage,
} from "../gen/converge/v1/worker_pb.js";
import { kvKey } from "./config.js";
import { chars } from "./names.js";

/**
 * The reason a reaction registered with needsConfig is reported not ready
 * while its kind version has no default provider config.
 */
export const noConfigReason = "no default provider config yet";

// The protocol's bound on a readiness reason.
const maxReasonChars = 1024;

/** reactionKey names one registered reaction. */
export function reactionKey(kind: string, version: number, reaction: string): string {
  return JSON.stringify([kind, version, reaction]);
}

interface ReactionState {
  kind: string;
  version: number;
  reaction: string;
  needsConfig: boolean;
  notReady: boolean;
  reason: string;
}

interface ReadyStatus {
  ready: boolean;
  reason: string;
}

/** What one stream's server has been told; a new one per stream. */
export interface StreamReadiness {
  gen: number;
  told: Map<string, ReadyStatus>;
}

export function newStreamReadiness(): StreamReadiness {
  return { gen: -1, told: new Map() };
}

/**
 * Readiness is what the worker knows about its reactions' readiness; it
 * outlives streams. Each stream's sender reports the difference between it
 * and what that stream's server was told (see changes).
 */
export class Readiness {
  private readonly reactions = new Map<string, ReactionState>();
  /** Kind versions that have a default config. */
  private readonly configs = new Set<string>();
  /** Counts changes, so an unchanged state costs a sender nothing. */
  private gen = 0;
  /** Wakes the live stream's sender. */
  kick: (() => void) | undefined;

  add(kind: string, version: number, reaction: string, needsConfig: boolean): void {
    this.reactions.set(reactionKey(kind, version, reaction), {
      kind,
      version,
      reaction,
      needsConfig,
      notReady: false,
      reason: "",
    });
    this.changed();
  }

  /** set records a setReady call; it returns a problem when the reaction has no handler. */
  set(kind: string, version: number, reaction: string, ready: boolean, reason: string): string | undefined {
    const st = this.reactions.get(reactionKey(kind, version, reaction));
    if (!st) {
      return "no handler is registered for this reaction";
    }
    reason = boundReason(reason);
    if (st.notReady === !ready && st.reason === reason) {
      return undefined;
    }
    st.notReady = !ready;
    st.reason = reason;
    this.changed();
    return undefined;
  }

  /** setConfig records whether a kind version has a default config. */
  setConfig(kind: string, version: number, present: boolean): void {
    const key = kvKey(kind, version);
    if (this.configs.has(key) === present) {
      return;
    }
    if (present) {
      this.configs.add(key);
    } else {
      this.configs.delete(key);
    }
    this.changed();
  }

  private changed(): void {
    this.gen++;
    this.kick?.();
  }

  /** status is a reaction's readiness: its config (if it needs one) and its last setReady must allow it. */
  private status(st: ReactionState): ReadyStatus {
    const why: string[] = [];
    if (st.needsConfig && !this.configs.has(kvKey(st.kind, st.version))) {
      why.push(noConfigReason);
    }
    if (st.notReady) {
      why.push(st.reason);
    }
    if (why.length === 0) {
      return { ready: true, reason: st.reason };
    }
    return { ready: false, reason: boundReason(why.filter((s) => s.trim() !== "").join("; ")) };
  }

  /**
   * changes returns the Readiness message that brings the stream's server up
   * to date, and records it as told; undefined when it is up to date. A
   * server assumes a reaction it was not told about is ready.
   */
  changes(s: StreamReadiness): ReadinessMessage | undefined {
    if (s.gen === this.gen) {
      return undefined;
    }
    s.gen = this.gen;
    const out: ReactionReadiness[] = [];
    for (const [key, st] of [...this.reactions.entries()].sort((a, b) => compareReactions(a[1], b[1]))) {
      const now = this.status(st);
      const was = s.told.get(key) ?? { ready: true, reason: "" };
      if (now.ready === was.ready && now.reason === was.reason) {
        continue;
      }
      s.told.set(key, now);
      out.push(
        create(ReactionReadinessSchema, {
          reaction: create(ReactionRefSchema, { kind: st.kind, kindVersion: st.version, reaction: st.reaction }),
          ready: now.ready,
          reason: now.reason,
        }),
      );
    }
    return out.length > 0 ? create(ReadinessSchema, { reactions: out }) : undefined;
  }
}

function compareReactions(a: ReactionState, b: ReactionState): number {
  return a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.version - b.version || (a.reaction < b.reaction ? -1 : a.reaction > b.reaction ? 1 : 0);
}

/** boundReason makes a reason well-formed and at most maxReasonChars characters. */
export function boundReason(s: string): string {
  s = String(s ?? "").toWellFormed();
  if (chars(s) <= maxReasonChars) {
    return s;
  }
  return [...s].slice(0, maxReasonChars - 1).join("") + "…";
}
