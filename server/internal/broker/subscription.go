package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"connectrpc.com/connect"
)

// checkSubscription refuses a subscription to a reaction that an applied
// kind version does not declare (a typo would otherwise leave the worker
// connected and idle, its resources parked), naming what the kind version
// does declare. A kind version not applied yet is only a warning, since
// workers may start before their manifests: its tasks flow once it is.
// The registry is refreshed before refusing, in case the kind changed a
// moment ago on another replica.
func (b *Broker) checkSubscription(ctx context.Context, s *session) ([]string, error) {
	warnings, unknown := b.subscriptionProblems(s)
	if len(unknown) > 0 {
		if err := b.kinds.Refresh(ctx); err != nil {
			return nil, connect.NewError(connect.CodeUnavailable, fmt.Errorf("reloading kinds to check the subscription: %w", err))
		}
		warnings, unknown = b.subscriptionProblems(s)
	}
	if len(unknown) > 0 {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New(strings.Join(unknown, "; ")))
	}
	return warnings, nil
}

// subscriptionProblems names, once per kind version, kinds not applied
// yet (warnings) and applied ones that lack reactions the worker serves
// (unknown), each sorted.
func (b *Broker) subscriptionProblems(s *session) (warnings, unknown []string) {
	missing := map[kindKey][]string{}
	for rk := range s.serves {
		k := kindKey{rk.kind, rk.version}
		e := b.kinds.Get(rk.kind, rk.version)
		switch {
		case e == nil:
			if _, seen := missing[k]; !seen {
				missing[k] = nil
				warnings = append(warnings, fmt.Sprintf("kind %s v%d is not registered yet; its tasks will flow once its manifest is applied", rk.kind, rk.version))
			}
		case len(e.TriggersOf(rk.reaction)) == 0:
			missing[k] = append(missing[k], strconv.Quote(rk.reaction))
		}
	}
	for k, names := range missing {
		if len(names) == 0 {
			continue
		}
		slices.Sort(names)
		declared := []string{}
		if e := b.kinds.Get(k.kind, k.version); e != nil {
			for _, r := range e.Manifest().GetReactions() {
				declared = append(declared, r.GetName())
			}
		}
		noun := "reaction"
		if len(names) > 1 {
			noun = "reactions"
		}
		unknown = append(unknown, fmt.Sprintf("kind %s v%d has no %s %s; it declares: %s",
			k.kind, k.version, noun, strings.Join(names, ", "), or(strings.Join(declared, ", "), "none")))
	}
	slices.Sort(warnings)
	slices.Sort(unknown)
	return warnings, unknown
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
