// Package rollout drives rollouts: the resources of a kind move from one
// version to a newer one, wave by wave, each spec converted by the newer
// version's conversion and re-applied through the API's own apply (so a
// move validates, bumps the generation and records history as any apply
// does). All of a rollout's state is in its rows; a Driver on every
// control replica takes the steps of the rollouts no other replica holds
// a lease on, each step one transaction under the rollout's row lock.
package rollout
