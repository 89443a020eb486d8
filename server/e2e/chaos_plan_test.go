//go:build unix

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

// The chaos test's knobs, read from the environment so a failing run can
// be replayed: the seed alone decides the fault schedule.
const (
	chaosSeedEnv     = "CONVERGE_CHAOS_SEED"
	chaosDurationEnv = "CONVERGE_CHAOS_DURATION"
	chaosStrictEnv   = "CONVERGE_CHAOS_STRICT"
	// chaosDefaultDuration is how long faults are injected by default:
	// long enough for every fault type once, short enough for CI.
	chaosDefaultDuration = 45 * time.Second
	chaosMaxDuration     = time.Hour
)

// faultKind is what a fault does to the system under test.
type faultKind string

const (
	faultKillControl faultKind = "kill-control"
	faultKillBroker  faultKind = "kill-broker"
	faultKillWorker  faultKind = "kill-worker"
	faultPGFast      faultKind = "pg-restart-fast"
	faultPGImmediate faultKind = "pg-restart-immediate"
	// faultPGTerminate ends every database session of the replicas
	// (pg_terminate_backend) while PostgreSQL stays up.
	faultPGTerminate faultKind = "pg-terminate"
	// The read replica's faults, in a run with one (TestChaosReplica): a
	// fast restart of the hot standby, or a SIGKILL of it and a start with
	// crash recovery.
	faultStandbyFast faultKind = "standby-restart-fast"
	faultStandbyKill faultKind = "kill-standby"
)

// isPostgres reports whether a fault is aimed at PostgreSQL (the primary
// or its standby) rather than at one of the processes.
func (k faultKind) isPostgres() bool {
	return k == faultPGFast || k == faultPGImmediate || k == faultPGTerminate || k.isStandby()
}

// isStandby reports whether a fault is aimed at the read replica.
func (k faultKind) isStandby() bool { return k == faultStandbyFast || k == faultStandbyKill }

// plannedFault is one fault of the schedule.
type plannedFault struct {
	// at is the offset from the start of the fault phase.
	at   time.Duration
	kind faultKind
	// victim indexes the control, broker or worker killed; 0 for
	// PostgreSQL.
	victim int
}

func (f plannedFault) String() string {
	if f.kind.isPostgres() {
		return fmt.Sprintf("+%s %s", f.at.Round(time.Millisecond), f.kind)
	}
	return fmt.Sprintf("+%s %s #%d", f.at.Round(time.Millisecond), f.kind, f.victim+1)
}

// chaosConfig is what the environment asked for.
type chaosConfig struct {
	seed     uint64
	duration time.Duration
	// seedSource says where the seed came from, for the log.
	seedSource string
	// strict asserts issue 10's recovery bound (95% within lease + 5 s)
	// rather than the looser one a shared machine passes reliably.
	strict bool
}

// chaosConfigFromEnv reads CONVERGE_CHAOS_SEED (an unsigned decimal;
// default: the clock), CONVERGE_CHAOS_DURATION (a Go duration between 1s
// and 1h; default chaosDefaultDuration) and CONVERGE_CHAOS_STRICT (a
// boolean; default false).
func chaosConfigFromEnv() (chaosConfig, error) {
	c := chaosConfig{duration: chaosDefaultDuration, seed: uint64(time.Now().UnixNano()), seedSource: "the clock"}
	if v := os.Getenv(chaosSeedEnv); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("%s=%q: want an unsigned decimal integer: %w", chaosSeedEnv, v, err)
		}
		c.seed, c.seedSource = seed, chaosSeedEnv
	}
	if v := os.Getenv(chaosDurationEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return c, fmt.Errorf("%s=%q: want a Go duration such as 45s or 5m: %w", chaosDurationEnv, v, err)
		}
		if d < time.Second || d > chaosMaxDuration {
			return c, fmt.Errorf("%s=%s: must be between 1s and %s", chaosDurationEnv, d, chaosMaxDuration)
		}
		c.duration = d
	}
	if v := os.Getenv(chaosStrictEnv); v != "" {
		strict, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("%s=%q: want a boolean such as 1 or 0: %w", chaosStrictEnv, v, err)
		}
		c.strict = strict
	}
	return c, nil
}

// topology is how many of each process a plan may pick a victim from,
// and whether there is a read replica to fault.
type topology struct {
	controls, brokers, workers int
	standby                    bool
}

// planFaults draws the fault schedule from seed: a fault every gap plus up
// to jitter, starting at offset 0, for as long as the offset is under
// duration. The fault types come in shuffled rounds of four (control,
// broker, worker, PostgreSQL), or five with a standby (the read replica),
// so any run of that many faults or more hits every type; victims, what
// happens to PostgreSQL (a fast or an immediate restart, or its sessions
// terminated) and to the standby (a fast restart or a kill) are drawn at
// random. It is a pure function of its arguments: the same seed replays
// the same schedule.
func planFaults(seed uint64, duration, gap, jitter time.Duration, top topology) []plannedFault {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var plan []plannedFault
	var round []faultKind
	for at := time.Duration(0); at < duration; at += gap + time.Duration(rng.Int64N(int64(jitter)+1)) {
		if len(round) == 0 {
			round = []faultKind{faultKillControl, faultKillBroker, faultKillWorker, faultPGFast}
			if top.standby {
				round = append(round, faultStandbyFast)
			}
			rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		f := plannedFault{at: at, kind: round[0]}
		round = round[1:]
		switch f.kind {
		case faultKillControl:
			f.victim = rng.IntN(top.controls)
		case faultKillBroker:
			f.victim = rng.IntN(top.brokers)
		case faultKillWorker:
			f.victim = rng.IntN(top.workers)
		case faultPGFast:
			f.kind = []faultKind{faultPGFast, faultPGImmediate, faultPGTerminate}[rng.IntN(3)]
		case faultStandbyFast:
			f.kind = []faultKind{faultStandbyFast, faultStandbyKill}[rng.IntN(2)]
		}
		plan = append(plan, f)
	}
	return plan
}
