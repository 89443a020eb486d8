package store

// pinPlansSQL makes the rest of the transaction run its statements on
// generic plans made of index lookups joined by nested loops.
//
// The reconcile path's statements (claims, applies, results) look rows up
// by key: a batch of ids or identities, or the head of the queue's index.
// Nested loops over indexes are the right plan for them at any table size,
// yet the sessions plan for their arguments (see openPool in package app),
// and a claim took longer to plan than to run. A plan cached while the
// tables were nearly empty would join them by scanning them whole, which
// turns quadratic as they grow; with sequential scans, hash and merge joins
// and materialisation disabled, the generic plan has the lookup shape
// whatever the statistics said when it was made, so it is made once per
// session and reused. The change trigger resets these for its own
// statements (migration 00006).
const pinPlansSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
	set_config('enable_mergejoin', 'off', true), set_config('enable_material', 'off', true)`
