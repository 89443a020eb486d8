package conctl

import (
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// maxMessageWidth keeps MESSAGE columns to one screen line.
const maxMessageWidth = 80

// printResources prints resources as a table (-o wide adds the owner), or
// as JSON/YAML (one object when single).
func (a *app) printResources(rs []*convergev1.Resource, single bool) error {
	if a.machine() {
		msgs := make([]proto.Message, len(rs))
		for i, r := range rs {
			msgs[i] = r
		}
		return a.printMessages(msgs, single)
	}
	wide := a.output == formatWide
	header := []string{"NAMESPACE", "KIND", "NAME", "VERSION", "PHASE", "GEN", "SYNCED", "AGE", "MESSAGE"}
	if wide {
		header = slices.Insert(header, len(header)-1, "OWNER")
	}
	t := newTable(a.stdout, header...)
	now := a.now()
	for _, r := range rs {
		row := []string{r.GetNamespace(), r.GetKind(), r.GetName(), version(r.GetKindVersion()), r.GetPhase(),
			strconv.FormatInt(r.GetGeneration(), 10), strconv.FormatInt(r.GetSyncedGeneration(), 10),
			age(now, r.GetCreatedAt())}
		if wide {
			row = append(row, refName(r.GetOwner(), r.GetNamespace()))
		}
		t.row(append(row, truncate(resourceMessage(r), maxMessageWidth))...)
	}
	return t.flush()
}

// resourceMessage is the one line that best explains a resource's phase:
// its failure (led by its reason, if it has one), else the message of a condition that does not hold (for a
// composite held back by its children, the server words it with the
// culprits), else what it is waiting for, else a composite's counts.
func resourceMessage(r *convergev1.Resource) string {
	if m := r.GetFailure().GetMessage(); m != "" {
		if reason := r.GetFailure().GetReason(); reason != "" {
			return reason + ": " + m
		}
		return m
	}
	var other string
	for _, c := range r.GetConditions() {
		if c.GetStatus() == "True" || c.GetMessage() == "" {
			continue
		}
		if c.GetType() == "Ready" {
			return c.GetMessage()
		}
		if other == "" {
			other = c.GetMessage()
		}
	}
	return or(or(other, r.GetWaiting()), rollupMessage(r.GetRollup()))
}

func version(v int32) string {
	return "v" + strconv.FormatInt(int64(v), 10)
}

// printKinds prints kind manifests as a table, or as JSON/YAML.
func (a *app) printKinds(ms []*convergev1.KindManifest, single bool) error {
	if a.machine() {
		msgs := make([]proto.Message, len(ms))
		for i, m := range ms {
			msgs[i] = m
		}
		return a.printMessages(msgs, single)
	}
	t := newTable(a.stdout, "KIND", "VERSION", "OWNER", "REACTIONS", "RETIRED", "AGE", "DESCRIPTION")
	now := a.now()
	for _, m := range ms {
		var reactions []string
		for _, r := range m.GetReactions() {
			reactions = append(reactions, r.GetName())
		}
		retired := ""
		if m.GetPolicy().GetRetired() {
			retired = "yes"
		}
		desc, _, _ := strings.Cut(m.GetDescription(), "\n")
		t.row(m.GetKind(), version(m.GetKindVersion()), m.GetOwner(), strings.Join(reactions, ","), retired,
			age(now, m.GetCreatedAt()), truncate(desc, maxMessageWidth))
	}
	return t.flush()
}

// printEvents prints events oldest first; withObject adds the resource each
// one is about.
func (a *app) printEvents(events []*convergev1.Event, withObject bool) error {
	if a.machine() {
		msgs := make([]proto.Message, len(events))
		for i, e := range events {
			msgs[i] = e
		}
		return a.printMessages(msgs, false)
	}
	header := []string{"AGE", "TYPE", "REASON", "OBJECT", "ACTOR", "MESSAGE"}
	if !withObject {
		header = append(header[:3:3], "ACTOR", "MESSAGE")
	}
	t := newTable(a.stdout, header...)
	now := a.now()
	for _, e := range events {
		row := []string{age(now, e.GetTime()), e.GetType(), e.GetReason()}
		if withObject {
			row = append(row, e.GetNamespace()+"/"+e.GetKind()+"/"+e.GetName())
		}
		row = append(row, e.GetActor(), truncate(e.GetMessage(), maxMessageWidth))
		t.row(row...)
	}
	return t.flush()
}

// oldestFirst reverses the server's newest-first order in place.
func oldestFirst(events []*convergev1.Event) []*convergev1.Event {
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
	}
	return events
}
