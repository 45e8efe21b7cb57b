package anchor_test

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/pipeguard/pipeguard/agent/audit"
	"github.com/pipeguard/pipeguard/internal/testing/testenv"
)

// TestTamperingIsDetectedAgainstTheAnchor tampers with a rotated log of an
// agent anchored to a real kube-apiserver, in every way an attacker holding
// the node's files could, and verifies each copy against the anchor read
// back through a kubeconfig: every one is found, with words that say what.
func TestTamperingIsDetectedAgainstTheAnchor(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	c := kubernetes.NewForConfigOrDie(env.Config)
	createNamespace(t, c)
	kubeconfig := env.KubeconfigFile(t)
	pristine := anchoredLog(t, c)

	rep := verifyAnchored(t, pristine, kubeconfig)
	if !rep.OK() || len(rep.Files) != 15 {
		t.Fatalf("untouched log: ok=%v files=%d records=%d problems=%v", rep.OK(), len(rep.Files), rep.Records, rep.Problems)
	}
	if n := rep.Notices[len(rep.Notices)-1].Msg; !strings.Contains(n, "the chain reaches the anchor: record seq "+itoa(rep.Last)+" hashes to the anchored hash") {
		t.Fatalf("untouched log: last notice %q", n)
	}
	t.Logf("log: %d files, %d records", len(rep.Files), rep.Records)
	mid := 7

	cases := map[string]struct {
		tamper func(t *testing.T, lf *logFiles)
		want   []string
	}{
		// Found only with the anchor.
		"01 edit the last record": {
			tamper: func(t *testing.T, lf *logFiles) {
				n := lf.newest()
				lf.lines[n][len(lf.lines[n])-1] = edit(lf.lines[n][len(lf.lines[n])-1])
			},
			want: []string{"hashes to", "but the anchor says", "was changed and the chain rebuilt"},
		},
		"02 delete the last record (the stop checkpoint)": {
			tamper: func(t *testing.T, lf *logFiles) { n := lf.newest(); lf.lines[n] = lf.lines[n][:len(lf.lines[n])-1] },
			want:   []string{"before the anchored record seq", "missing from the end of the log"},
		},
		"03 delete the newest file": {
			tamper: func(t *testing.T, lf *logFiles) { lf.lines[lf.newest()] = nil },
			want:   []string{"before the anchored record seq", "missing from the end of the log (the newest files were deleted or truncated)"},
		},
		"04 delete the two newest files": {
			tamper: func(t *testing.T, lf *logFiles) { lf.lines[lf.newest()] = nil; lf.lines[lf.newest()-1] = nil },
			want:   []string{"before the anchored record seq", "missing from the end of the log"},
		},
		"05 truncate the newest file by 50 whole records": {
			tamper: func(t *testing.T, lf *logFiles) { n := lf.newest(); lf.lines[n] = lf.lines[n][:len(lf.lines[n])-50] },
			want:   []string{"before the anchored record seq", "missing from the end of the log"},
		},
		"06 truncate the newest file mid-record": {
			tamper: func(t *testing.T, lf *logFiles) {
				n := lf.newest()
				last := lf.lines[n][len(lf.lines[n])-3]
				lf.lines[n] = append(lf.lines[n][:len(lf.lines[n])-3], last[:len(last)/2])
			},
			want: []string{"torn final line", "and the anchor names record seq", "the file was cut mid-record", "before the anchored record seq"},
		},
		"07 append a forged record with a correct link": {
			tamper: func(t *testing.T, lf *logFiles) { lf.appendForged(t, nil) },
			want:   []string{"follow the stop checkpoint seq", "that the agent anchored when it shut down: they were added after it stopped"},
		},
		"08 edit a middle record and re-chain everything after it": {
			tamper: func(t *testing.T, lf *logFiles) {
				lf.lines[mid][10] = edit(lf.lines[mid][10])
				lf.rechainFrom(t, mid, 10)
			},
			want: []string{"hashes to", "but the anchor says", "was changed and the chain rebuilt"},
		},
		"09 delete a record, renumber and re-chain": {
			tamper: func(t *testing.T, lf *logFiles) {
				lf.lines[mid] = append(lf.lines[mid][:10:10], lf.lines[mid][11:]...)
				lf.rechainFrom(t, mid, 10)
			},
			want: []string{"before the anchored record seq", "missing from the end of the log"},
		},
		// Found by the chain alone; the anchor must not hide them.
		"10 edit a middle record": {
			tamper: func(t *testing.T, lf *logFiles) { lf.lines[mid][10] = edit(lf.lines[mid][10]) },
			want:   []string{"does not follow record seq", "was changed or replaced"},
		},
		"11 edit the first record": {
			tamper: func(t *testing.T, lf *logFiles) { lf.lines[0][0] = edit(lf.lines[0][0]) },
			want:   []string{"record seq 2 does not follow record seq 1"},
		},
		"12 delete a middle record": {
			tamper: func(t *testing.T, lf *logFiles) { lf.lines[mid] = append(lf.lines[mid][:10:10], lf.lines[mid][11:]...) },
			want:   []string{"missing (deleted?)"},
		},
		"13 swap two records": {
			tamper: func(t *testing.T, lf *logFiles) { l := lf.lines[mid]; l[10], l[11] = l[11], l[10] },
			want:   []string{"records are out of order or repeated"},
		},
		"14 repeat a record": {
			tamper: func(t *testing.T, lf *logFiles) {
				l := lf.lines[mid]
				lf.lines[mid] = append(l[:11:11], l[10:]...)
			},
			want: []string{"records are out of order or repeated"},
		},
		"15 delete the oldest file": {
			tamper: func(t *testing.T, lf *logFiles) { lf.lines[0] = nil },
			want:   []string{"no prune checkpoint accounts for them"},
		},
		"16 delete a middle file": {
			tamper: func(t *testing.T, lf *logFiles) { lf.lines[mid] = nil },
			want:   []string{"a rotated file may have been deleted"},
		},
		"17 truncate a middle file by 10 whole records": {
			tamper: func(t *testing.T, lf *logFiles) { lf.lines[mid] = lf.lines[mid][:len(lf.lines[mid])-10] },
			want:   []string{"are missing between", "a rotated file may have been deleted"},
		},
		"18 truncate a middle file mid-record": {
			tamper: func(t *testing.T, lf *logFiles) {
				l := lf.lines[mid]
				lf.lines[mid] = append(l[:len(l)-1:len(l)-1], l[len(l)-1][:40])
			},
			want: []string{"torn line (40 bytes without a newline) at the end of a file that later records continue", "the file was cut mid-record"},
		},
		"19 insert a line that is not a record": {
			tamper: func(t *testing.T, lf *logFiles) {
				l := lf.lines[mid]
				lf.lines[mid] = append(l[:10:10], append([][]byte{[]byte("{\"kind\":\"Event\"}\n")}, l[10:]...)...)
			},
			want: []string{"line is not a valid audit record"},
		},
		"20 copy a rotated file under another name": {
			tamper: func(t *testing.T, lf *logFiles) {
				lf.paths = append(lf.paths, filepath.Join(filepath.Dir(lf.paths[0]), "audit-2026-03-01T12-00-00.000.log"))
				lf.lines = append(lf.lines, lf.lines[mid])
			},
			want: []string{"overlap those of", "a file was copied or records were replayed"},
		},
		"21 edit a rotated file's last record": {
			tamper: func(t *testing.T, lf *logFiles) {
				l := lf.lines[mid]
				l[len(l)-1] = edit(l[len(l)-1])
			},
			want: []string{"does not continue", "that record was changed, or the files do not belong together"},
		},
		// A forged prune checkpoint that claims the oldest file, then
		// deleting that file.
		"22 forged prune checkpoint appended, then the oldest file deleted": {
			tamper: func(t *testing.T, lf *logFiles) { forgePrune(t, lf); lf.lines[0] = nil },
			want:   []string{"follow the stop checkpoint seq", "they were added after it stopped"},
		},
		"23 forged prune checkpoint inserted and re-chained, then the oldest file deleted": {
			tamper: func(t *testing.T, lf *logFiles) {
				forgePrune(t, lf)
				n := lf.newest()
				l := lf.lines[n]
				forged, stop := l[len(l)-1], l[len(l)-2]
				lf.lines[n] = append(l[:len(l)-2:len(l)-2], forged, stop)
				lf.rechainFrom(t, n, len(l)-2)
				lf.lines[0] = nil
			},
			want: []string{"hashes to", "but the anchor says"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := copyLog(t, pristine)
			lf := load(t, path)
			tc.tamper(t, lf)
			lf.save(t)
			rep := verifyAnchored(t, path, kubeconfig)
			if rep.OK() {
				t.Fatalf("tampering passed verification; notices: %v", rep.Notices)
			}
			all := ""
			for _, p := range rep.Problems {
				all += p.String() + "\n"
			}
			t.Logf("%s", all)
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no problem says %q; problems:\n%s", w, all)
				}
			}
		})
	}
}

// forgePrune appends a prune checkpoint claiming the oldest file, linked
// correctly to the last record.
func forgePrune(t *testing.T, lf *logFiles) {
	t.Helper()
	first := lf.lines[0]
	lastSeq, lastHash := headOf(t, first[len(first)-1])
	lf.appendForged(t, map[string]string{
		audit.AnnotationCheckpoint: "prune", audit.AnnotationRecord: audit.RecordCheckpoint,
		audit.AnnotationPrunedFile: filepath.Base(lf.paths[0]),
		audit.AnnotationPrunedSeqs: "1-" + itoa(lastSeq), audit.AnnotationPrunedHash: lastHash.String(),
	})
}
