package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/devpg"
	"github.com/convergehq/converge/server/internal/secret"
)

// secretStatus is what the worker reports in the secrets workload: a
// token beside ok (secret when the fields are marked, so every
// reconcile seals a status too).
const secretStatus = `{"ok":true,"token":"tok-0123456789abcdef0123456789abcdef"}`

// w1Manifest is W1's kind: the bench leaf or, in the secrets workload,
// the leaf with a spec password and a status token, secret
// (writeOnly, x-converge-secret) when o.secretFields.
func w1Manifest(o options) *convergev1.KindManifest {
	m := benchManifest()
	if !o.secretPayload {
		return m
	}
	password, token := map[string]any{"type": "string"}, map[string]any{"type": "string"}
	if o.secretFields {
		password["writeOnly"], token["x-converge-secret"] = true, true
	}
	spec, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{
		"i": map[string]any{"type": "integer"}, "password": password}})
	status, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{
		"ok": map[string]any{"type": "boolean"}, "token": token}})
	m.SpecSchema, m.StatusSchema = spec, status
	return m
}

// leafSpecOf is the spec of W1's leaf i.
func leafSpecOf(o options, i int) map[string]any {
	if !o.secretPayload {
		return map[string]any{"i": i}
	}
	return map[string]any{"i": i, "password": fmt.Sprintf("pw-%07d-0123456789abcdef", i)}
}

// secretPair is one pair of W1 runs in the secrets workload: without
// secret fields, then with them, on fresh databases of one cluster.
type secretPair struct {
	plain, sealed w1Result
}

// runSecretPairs runs o.runs pairs of W1, each without then with secret
// fields. Both runs of a pair carry the same password and token and both
// servers hold a secret key, so the pair differs only in whether the
// schema marks the two fields secret: the cost of sealing and opening.
func runSecretPairs(ctx context.Context, o options, cluster *devpg.Cluster, r *results) error {
	if os.Getenv(secret.EnvVar) == "" {
		key, err := secret.NewKeyText()
		if err != nil {
			return err
		}
		os.Setenv(secret.EnvVar, key)
		defer os.Unsetenv(secret.EnvVar)
	}
	for i := 1; i <= o.runs; i++ {
		var p secretPair
		for _, sealed := range []bool{false, true} {
			oo := o
			oo.secretPayload, oo.secretFields = true, sealed
			logf("pair %d/%d: W1 with %d leaves, secret fields %v", i, o.runs, o.resources, sealed)
			res, err := runW1(ctx, oo, cluster, fmt.Sprintf("bench_secrets_%d_%v", i, sealed))
			if err != nil {
				return fmt.Errorf("pair %d (secret fields %v): %w", i, sealed, err)
			}
			if sealed {
				p.sealed = res
			} else {
				p.plain = res
			}
		}
		logf("pair %d/%d: %.0f/s without, %.0f/s with secret fields: %.3f×", i, o.runs, p.plain.rate, p.sealed.rate, p.sealed.rate/p.plain.rate)
		r.secrets = append(r.secrets, p)
	}
	return nil
}

// reportSecrets prints each pair and its ratios.
func reportSecrets(w io.Writer, o options, pairs []secretPair) {
	fmt.Fprintf(w, "\n### W1 with secret fields against W1 without (%d leaves, pairs run back to back; both carry a spec password and a status token, marked secret or not)\n\n", o.resources)
	fmt.Fprintln(w, "| Pair | Without: reconciles/s | With: reconciles/s | Ratio | Idle p50 without / with (ms) | converge CPU µs per reconcile without / with | converge CPU ratio | PostgreSQL CPU ratio |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	var ratios, cpuRatios, pgRatios []float64
	perReconcile := func(r w1Result) float64 { return r.cpuConverge / float64(max(r.n, 1)) * 1e6 }
	for i, p := range pairs {
		ratio := p.sealed.rate / p.plain.rate
		cpu := perReconcile(p.sealed) / perReconcile(p.plain)
		pg := p.sealed.cpuPostgres / p.plain.cpuPostgres
		ratios, cpuRatios, pgRatios = append(ratios, ratio), append(cpuRatios, cpu), append(pgRatios, pg)
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.3f× | %.1f / %.1f | %.0f / %.0f | %.2f× | %.2f× |\n", i+1, p.plain.rate, p.sealed.rate, ratio,
			ms(p.plain.idleP50), ms(p.sealed.idleP50), perReconcile(p.plain), perReconcile(p.sealed), cpu, pg)
	}
	if len(ratios) > 0 {
		med, lo, hi := median(ratios)
		cmed, clo, chi := median(cpuRatios)
		pmed, plo, phi := median(pgRatios)
		fmt.Fprintf(w, "\nThroughput ratio (with secret fields / without): median %.3f×, %.3f–%.3f. converge CPU per reconcile: median %.2f×, %.2f–%.2f. PostgreSQL CPU: median %.2f×, %.2f–%.2f.\n",
			med, lo, hi, cmed, clo, chi, pmed, plo, phi)
	}
}
