package conctl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/unidiff"
)

// Limits of a history request, as the API defines them.
const (
	maxHistoryPage = 100
	diffContext    = 3
)

type historyFlags struct {
	limit  int
	diff   bool
	noDiff bool
}

func (a *app) historyCmd() *cobra.Command {
	var fl historyFlags
	cmd := &cobra.Command{
		Use:   "history KIND/NAME",
		Short: "Show a resource's spec revisions, newest first, with what each changed",
		Long: `History lists the spec revisions the server keeps for a resource, newest
first: the generation each one made, when, its source (apply, compose,
flow or rollback) and who caused it. Every resource has a history, children
of composites included.

Below the list, each revision's spec is compared, as YAML, with the
revision before it (a unified diff); --no-diff leaves that out. When the
revisions before the oldest one shown are no longer kept (the server keeps
the last N), its whole spec is shown instead.

Any revision shown can be applied again with "conctl rollback". -o json and
-o yaml print the revisions as the API returns them (Revision), spec
included.`,
		Example: `  conctl history greeting/hello-world
  conctl history greeting/hello-world --limit 3
  conctl history vpc/prod-main --no-diff -n team-a
  conctl history greeting/hello-world -o yaml`,
		Args: exactArgs(1, "KIND/NAME, e.g. greeting/hello-world"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if fl.limit < 1 {
				return usagef("--limit: %d is not positive", fl.limit)
			}
			if cmd.Flags().Changed("diff") && cmd.Flags().Changed("no-diff") && fl.diff == fl.noDiff {
				return usagef("--diff and --no-diff: choose one")
			}
			return a.history(cmd.Context(), ref, fl.limit, fl.diff && !fl.noDiff)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.limit, "limit", 10, "show at most this many revisions, newest first")
	f.BoolVar(&fl.diff, "diff", true, "show what each revision changed, as a unified diff of the spec")
	f.BoolVar(&fl.noDiff, "no-diff", false, "list the revisions only")
	return cmd
}

// historyPage is what history read: the revisions, newest first, and
// whether the server holds older ones.
type historyPage struct {
	revisions []*convergev1.Revision
	more      bool
	keep      int32
}

func (a *app) history(ctx context.Context, ref resourceRef, limit int, diff bool) error {
	want := limit
	if diff {
		want++ // the revision before the oldest shown, to diff it against
	}
	page, err := a.readHistory(ctx, ref, want)
	if err != nil {
		return err
	}
	revs := page.revisions
	var base *convergev1.Revision
	if len(revs) > limit {
		revs, base = revs[:limit], revs[limit]
	}
	if a.machine() {
		msgs := make([]proto.Message, len(revs))
		for i, r := range revs {
			msgs[i] = r
		}
		return a.printMessages(msgs, false)
	}
	if len(revs) == 0 {
		fmt.Fprintf(a.stderr, "No revisions found for resource %s.\n", ref)
		return nil
	}
	var buf bytes.Buffer
	if err := writeRevisionTable(&buf, revs, a.now()); err != nil {
		return err
	}
	if diff {
		for i, r := range revs {
			prev := base
			if i+1 < len(revs) {
				prev = revs[i+1]
			}
			buf.WriteString("\n")
			if err := writeRevisionDiff(&buf, ref.kind, r, prev, page.keep, a.now()); err != nil {
				return err
			}
		}
	}
	if _, err := a.stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if page.more || base != nil {
		fmt.Fprintf(a.stderr, "Showing the newest %d revisions; there are more (raise --limit).\n", len(revs))
	}
	return nil
}

// readHistory reads up to want revisions, newest first, following pages.
func (a *app) readHistory(ctx context.Context, ref resourceRef, want int) (*historyPage, error) {
	page := &historyPage{}
	req := &convergev1.GetResourceHistoryRequest{Namespace: ref.namespace, Kind: ref.kind, Name: ref.name}
	for len(page.revisions) < want {
		req.PageSize = int32(min(want-len(page.revisions), maxHistoryPage))
		cctx, cancel := a.call(ctx)
		resp, err := a.client.GetResourceHistory(cctx, req)
		cancel()
		if err != nil {
			return nil, wrapf(err, "history of %s", ref)
		}
		page.keep = resp.GetKeep()
		got := resp.GetRevisions()
		page.revisions = append(page.revisions, got[:min(len(got), want-len(page.revisions))]...)
		next := resp.GetNextPageToken()
		if next == "" {
			return page, nil
		}
		if next == req.PageToken {
			return nil, fmt.Errorf("history of %s: the server returned page token %q twice", ref, next)
		}
		req.PageToken = next
	}
	page.more = true
	return page, nil
}

func writeRevisionTable(w io.Writer, revs []*convergev1.Revision, now time.Time) error {
	t := newTable(w, "GEN", "WHEN", "SOURCE", "ACTOR")
	for _, r := range revs {
		t.row(strconv.FormatInt(r.GetGeneration(), 10), when(now, r.GetTime()), r.GetSource(), r.GetActor())
	}
	return t.flush()
}

// writeRevisionDiff shows what revision r changed from prev, the revision
// before it (nil when the server keeps none older).
func writeRevisionDiff(w io.Writer, kind string, r, prev *convergev1.Revision, keep int32, now time.Time) error {
	fmt.Fprintf(w, "generation %d: %s by %s, %s\n", r.GetGeneration(), or(r.GetSource(), "unknown source"),
		or(r.GetActor(), "unknown actor"), when(now, r.GetTime()))
	spec, err := specYAML(r.GetSpec())
	if err != nil {
		return err
	}
	label := func(rev *convergev1.Revision) string {
		return fmt.Sprintf("%s generation %d", kindID(kind, rev.GetKindVersion()), rev.GetGeneration())
	}
	if prev == nil && r.GetGeneration() > 1 {
		fmt.Fprintf(w, "The revisions before it are no longer kept (the server keeps the last %d). Its spec:\n", keep)
		if spec == "" {
			spec = "{}\n"
		}
		_, err := io.WriteString(indented(w), spec)
		return err
	}
	from, prevSpec := "(none)", ""
	if prev != nil {
		from = label(prev)
		if prevSpec, err = specYAML(prev.GetSpec()); err != nil {
			return err
		}
	}
	d := unidiff.Unified(from, label(r), prevSpec, spec, diffContext)
	if d == "" {
		note := "The spec is unchanged"
		if prev != nil && prev.GetKindVersion() != r.GetKindVersion() {
			note += fmt.Sprintf("; the kind version went from v%d to v%d", prev.GetKindVersion(), r.GetKindVersion())
		}
		d = note + ".\n"
	}
	_, err = io.WriteString(w, d)
	return err
}

// specYAML renders a spec as YAML with sorted keys; an empty spec is "".
func specYAML(s *structpb.Struct) (string, error) {
	if len(s.GetFields()) == 0 {
		return "", nil
	}
	var buf bytes.Buffer
	if err := writeStruct(&buf, s); err != nil {
		return "", err
	}
	return buf.String(), nil
}
