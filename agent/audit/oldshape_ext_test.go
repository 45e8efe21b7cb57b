package audit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeguard/pipeguard/agent/audit"
)

// testdata/pre-authorization.log was written by the agent before records
// carried the authorization.k8s.io annotations: a start checkpoint, the
// records of an allowed read, a guard denial, a handler refusal, a host
// failure and three streams, and the stop checkpoint.
const preAuthorizationLog = "testdata/pre-authorization.log"

// TestPreAuthorizationLogVerifies: a log written before the authorization
// annotations verifies as it is, and an agent started on it continues its
// chain with records in the new shape, the whole verifying as one chain.
func TestPreAuthorizationLogVerifies(t *testing.T) {
	old, err := os.ReadFile(preAuthorizationLog)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(old), "authorization.k8s.io/") || !strings.Contains(string(old), `"pipeguard.io/decision":"deny"`) {
		t.Fatalf("%s is not a log of the old shape, with a denial and no authorization annotations", preAuthorizationLog)
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, path)
	if !rep.OK() || rep.Records != 14 || rep.First != 1 || rep.Last != 14 {
		t.Fatalf("the old log: ok=%v records=%d seqs %d–%d problems=%v", rep.OK(), rep.Records, rep.First, rep.Last, rep.Problems)
	}

	l := openLog(t, path)
	ev := event("after-upgrade")
	audit.SetDecision(ev.Annotations, false, "confinement/outside-roots")
	if err := l.Append(ev, true); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep = verify(t, path)
	// The old records, a start checkpoint, the new record and a stop.
	if !rep.OK() || rep.Records != 17 || rep.First != 1 || rep.Last != 17 {
		t.Fatalf("the old log continued: ok=%v records=%d seqs %d–%d problems=%v", rep.OK(), rep.Records, rep.First, rep.Last, rep.Problems)
	}
	all := lines(t, path)
	if !strings.HasPrefix(strings.Join(all, "\n")+"\n", string(old)) {
		t.Fatal("the old records were not kept byte for byte")
	}
	if got := all[15]; !strings.Contains(got, `"auditID":"after-upgrade"`) ||
		!strings.Contains(got, `"authorization.k8s.io/decision":"forbid","authorization.k8s.io/reason":"pipeguard-agent: denied by rule confinement/outside-roots"`) {
		t.Fatalf("record 16 is not the new record with its authorization annotations: %s", got)
	}
}
