import { create } from "@bufbuild/protobuf";
import { LeaseSchema, TaskEventSchema } from "../gen/converge/v1/worker_pb.js";
import { validate } from "./result.js";

/** The types of a task event, for {@link Task.event}. */
export const EventType = {
  Normal: "Normal",
  Warning: "Warning",
} as const;

/** One of the {@link EventType} values. */
export type EventTypeName = (typeof EventType)[keyof typeof EventType];

/** TaskEvent is one event a task reported with {@link Task.event}. */
export interface TaskEvent {
  type: EventTypeName;
  /** A machine-readable cause in UpperCamelCase, e.g. Replacing. */
  reason: string;
  message: string;
}

/**
 * maxQueuedEvents bounds the events that wait for the stream, across all
 * tasks, so a handler that reports faster than the stream sends (or while
 * it is down) does not grow the worker without bound.
 */
export const maxQueuedEvents = 1000;

/** The error {@link Task.event} throws when too many events wait for the stream. */
export const eventQueueFull = "converge: too many task events wait for the stream; the event is dropped";

// The lease is a stand-in: the check is of what the handler chose.
const standIn = create(LeaseSchema, { taskId: 1n, epoch: 1n });

/**
 * taskEvent returns a task's `event` method: it checks the event against
 * the protocol's rules (throwing an Error naming the problem and where),
 * then hands it to sink; a preview's events, and those of a task without a
 * sink, go nowhere.
 */
export function taskEvent(
  where: string,
  preview: boolean,
  sink: ((e: TaskEvent) => void) | undefined,
): (type: EventTypeName, reason: string, message?: string) => void {
  return (type, reason, message = "") => {
    const problem = validate(TaskEventSchema, create(TaskEventSchema, { lease: standIn, type, reason, message }));
    if (problem) {
      throw new Error(`converge: event ${JSON.stringify(reason)} of ${where}: ${problem}`);
    }
    if (!preview && sink) {
      sink({ type, reason, message });
    }
  };
}
