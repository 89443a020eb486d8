import type { Configs } from "../gen/converge/v1/worker_pb.js";
import { decodeObject, hasConfig } from "./json.js";
import type { JsonObject } from "./task.js";
import { Wake } from "./wake.js";

/** kvKey names a kind version; provider configs belong to one. */
export function kvKey(kind: string, version: number): string {
  return `${kind}@${version}`;
}

/** A kind version whose default config appeared, changed or went away. */
export interface ConfigChange {
  kind: string;
  version: number;
  present: boolean;
}

/**
 * ConfigStore holds the default provider configs of the kind versions the
 * worker serves, across streams, and queues changes for the onConfig
 * callback.
 */
export class ConfigStore {
  private readonly served = new Map<string, { kind: string; version: number }>();
  /** Values as the server sent them (compact text, for comparing) and parsed. */
  private readonly values = new Map<string, { text: string; value: JsonObject }>();
  /** Kind versions whose value changed since the callback last saw them, oldest change first. */
  private readonly pending = new Set<string>();
  readonly kick = new Wake();

  serve(kind: string, version: number): void {
    this.served.set(kvKey(kind, version), { kind, version });
  }

  get(kind: string, version: number): JsonObject | undefined {
    const v = this.values.get(kvKey(kind, version));
    return v ? structuredClone(v.value) : undefined;
  }

  /**
   * apply takes a Configs message. With complete set, kind versions the
   * message does not name have no default config. It returns what changed,
   * and a description of each entry it ignored.
   */
  apply(m: Configs, complete: boolean): { changes: ConfigChange[]; ignored: string[] } {
    const ignored: string[] = [];
    const next = new Map<string, { text: string; value: JsonObject } | undefined>();
    m.configs.forEach((c, i) => {
      const key = kvKey(c.kind, c.kindVersion);
      if (!this.served.has(key)) {
        ignored.push(`configs[${i}]: kind ${JSON.stringify(c.kind)} version ${c.kindVersion} is not served by this worker`);
        return;
      }
      if (!hasConfig(c.config)) {
        next.set(key, undefined);
        return;
      }
      try {
        const value = decodeObject("config", c.config) as JsonObject;
        next.set(key, { text: JSON.stringify(value), value });
      } catch (e) {
        ignored.push(`configs[${i}] (kind ${JSON.stringify(c.kind)} version ${c.kindVersion}): ${(e as Error).message}`);
      }
    });
    if (complete) {
      for (const key of this.values.keys()) {
        if (!next.has(key)) {
          next.set(key, undefined);
        }
      }
    }
    const changes: ConfigChange[] = [];
    // In a fixed order, so callbacks and readiness follow the message.
    for (const key of [...next.keys()].sort()) {
      const v = next.get(key);
      if (this.values.get(key)?.text === v?.text) {
        continue;
      }
      if (v === undefined) {
        this.values.delete(key);
      } else {
        this.values.set(key, v);
      }
      const kv = this.served.get(key) as { kind: string; version: number };
      changes.push({ kind: kv.kind, version: kv.version, present: v !== undefined });
      this.pending.delete(key);
      this.pending.add(key);
    }
    if (changes.length > 0) {
      this.kick.poke();
    }
    return { changes, ignored };
  }

  /** nextChange takes the oldest queued change with the kind version's current value. */
  nextChange(): { kind: string; version: number; value: JsonObject | undefined } | undefined {
    for (const key of this.pending) {
      this.pending.delete(key);
      const kv = this.served.get(key) as { kind: string; version: number };
      const v = this.values.get(key);
      return { kind: kv.kind, version: kv.version, value: v ? structuredClone(v.value) : undefined };
    }
    return undefined;
  }
}
