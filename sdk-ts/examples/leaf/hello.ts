import { terminal, type Task } from "@converge/sdk";
import type { HelloV1Handler, HelloV1Spec, HelloV1Status } from "./kinds.js";

/**
 * reconcileHello converges one hello resource: its status says hello. An
 * empty name can never succeed, so it fails terminally: the resource is
 * Failed (with this message) until its spec changes.
 */
export const reconcileHello: HelloV1Handler = async (task: Task<HelloV1Spec, HelloV1Status>) => {
  const { name, greeting = "Hello" } = task.spec;
  if (!name) {
    throw terminal(new Error("spec.name is empty: say who to greet"));
  }
  return { status: { message: `${greeting}, ${name}!` } };
};
