// Package convergetest helps test Converge workers written with package
// converge, at three levels:
//
// A task from the kind's manifest, in one line: [NewTask] fills in what
// the server would (kind, version, the reaction's trigger, uid,
// generation, attempt, dedup token, deadline, and an operation, rollup or
// reactor event as the trigger needs), from a manifest read with
// [ReadManifest]:
//
//	m := convergetest.ReadManifest(t, "greeting.json")
//	task := convergetest.NewTask(t, m, "reconcile", `{"name":"world"}`, convergetest.WithAttempt(2))
//
// A handler run as the worker runs it: [Run] calls it, recovers a panic as
// the worker does, and puts its result through the worker's own encoding
// and checks ([converge.CheckResult]), so a composer that emits a child
// with an invalid name fails the unit test with the message the worker
// would report:
//
//	out, err := convergetest.Run(t, h.compose, task)
//	// err: converge: result children[0] "Bad_Name": name: ...
//
// A whole worker against an in-process server: [NewServer] speaks the
// worker protocol over a real HTTP/2 stream with no database, dispatches
// what the test sends within the worker's capacity, acknowledges results,
// and fails the test for any message the real server would refuse:
//
//	srv := convergetest.NewServer(t)
//	w := convergetest.NewWorker(t, srv)
//	w.Handle("greeting", 1, "reconcile", reconcile)
//	convergetest.RunWorker(t, w)
//	srv.Send(task)
//	r := srv.ResultFor(t.Context(), task)
//
// Manifests are read as JSON, the format conctl also accepts. The SDK has
// no YAML parser (it depends on connect and protobuf only), so for YAML
// manifests pass your YAML library's Unmarshal with the [YAML] option.
// Likewise it has no JSON Schema validator: specs are checked against the
// manifest's spec_schema only with one passed to [ValidateWith]. The
// server's own rules beyond the worker's (status_schema, what a reaction
// may emit, edge cycles) are not applied; an end-to-end test against a
// real server covers those.
package convergetest
