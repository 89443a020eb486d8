// Compile-time tests of the handler types: the build type-checks this file,
// so a @ts-expect-error that no longer sees an error fails the build, as
// does an Equal that does not hold.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Worker, type JsonObject, type Middleware, type Task } from "@converge/sdk";
import { runHandler, taskFor, type Outcome } from "@converge/sdk/testing";
import { HelloV1, type HelloV1Handler, type HelloV1Spec, type HelloV1Status } from "../examples/leaf/kinds.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function expectType<T extends true>(): T | undefined {
  return undefined;
}

const w = new Worker({ url: "http://127.0.0.1:1" });

// A declared Status is enforced on what the handler returns.
w.handle<HelloV1Spec, HelloV1Status>(HelloV1.kind, HelloV1.kindVersion, "reconcile", async (t) => ({ status: { message: t.spec.name } }));
// @ts-expect-error: the status lacks message
w.handle<HelloV1Spec, HelloV1Status>(HelloV1.kind, HelloV1.kindVersion, "a", async () => ({ status: { mesage: "x" } }));
// @ts-expect-error: message is a string
w.handle<HelloV1Spec, HelloV1Status>(HelloV1.kind, HelloV1.kindVersion, "b", () => ({ status: { message: 1 } }));

// The handler's own type declares it: a generated handler type, or the task parameter's.
const typed: HelloV1Handler = async (t) => ({ status: { message: t.spec.greeting ?? "hi" } });
w.handle(HelloV1.kind, HelloV1.kindVersion, "c", typed);
// @ts-expect-error: a generated handler type checks the status too
const wrong: HelloV1Handler = async () => ({ status: { text: "x" } });
void wrong;
// @ts-expect-error: the Status of the task parameter is enforced on the result
w.handle(HelloV1.kind, HelloV1.kindVersion, "d", async (t: Task<HelloV1Spec, HelloV1Status>) => ({ status: { text: t.spec.name } }));

// An untyped handler's Status is JsonObject, never what it happens to return.
w.handle("hello", 1, "e", async (t) => {
  expectType<Equal<typeof t.status, JsonObject | undefined>>();
  expectType<Equal<typeof t.spec, JsonObject>>();
  return { status: { anything: 1 } };
});

// The declared Status, not the returned value's type, is the handler's: a
// return with more fields leaves it as declared, so middleware typed with
// it (or with the defaults, for an untyped handler) fits.
const logged: Middleware<HelloV1Spec, HelloV1Status> = (next) => next;
const plain: Middleware = (next) => next;
w.handle(HelloV1.kind, HelloV1.kindVersion, "g", async (t: Task<HelloV1Spec, HelloV1Status>) => ({ status: { message: t.spec.name, extra: 1 } }), {
  middleware: [logged],
});
w.handle("hello", 1, "h", async () => ({ status: { anything: 1 } }), { middleware: [plain] });

// Options are typed with the handler's types.
w.handle<HelloV1Spec, HelloV1Status>(HelloV1.kind, HelloV1.kindVersion, "f", (t) => ({ status: { message: t.spec.name } }), {
  middleware: [(next) => async (t) => {
    expectType<Equal<typeof t.spec, HelloV1Spec>>();
    const r = await next(t);
    expectType<Equal<NonNullable<Exclude<typeof r, void>["status"]>, HelloV1Status>>();
    return r;
  }],
});

// runHandler and taskFor take their types from the handler.
async function tested(): Promise<void> {
  const out = await runHandler(typed, taskFor("", "reconcile", { name: "Ada" }, { status: { message: "old" } }));
  expectType<Equal<typeof out, Outcome<HelloV1Status>>>();
  // @ts-expect-error: the task's status must be the handler's Status
  await runHandler(typed, taskFor("", "reconcile", { name: "Ada" }, { status: { text: "old" } }));
  const wide = await runHandler(async (t: Task<HelloV1Spec, HelloV1Status>) => ({ status: { message: t.spec.name, extra: 1 } }), taskFor("", "r", { name: "x" }));
  expectType<Equal<typeof wide, Outcome<HelloV1Status>>>();
  const t = taskFor("", "reconcile");
  expectType<Equal<typeof t.spec, JsonObject>>();
}
void tested;

describe("handler types", () => {
  it("compile as declared (checked by the build)", () => {
    assert.ok(true);
  });
});
