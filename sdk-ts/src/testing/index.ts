// @converge/sdk/testing: unit-test handlers and whole workers without a
// server. taskFor builds a handler's task from a kind manifest; runHandler
// runs a handler through the worker's own result checks; FakeServer is an
// in-process WorkerService a real Worker dials.
export { taskFor, eventsOf, wireTask, testLease, type TaskOptions, type ManifestInput } from "./task.js";
export { runHandler, outcomeOf, type Outcome, type SuccessOutcome, type FailureOutcome, type RunOptions } from "./outcome.js";
export { FakeServer, FakeSession, type FakeServerOptions, type FakeConfig, type ServerMsg } from "./server.js";
export { Waiter } from "./waiter.js";
