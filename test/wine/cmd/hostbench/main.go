//go:build windows

// Command hostbench measures host calls per second through WMI in the
// calling process, as the agent makes its storage, SMB and iSCSI calls:
// wmi.New, then two calls Wine's own WMI service answers, in interleaved
// rounds (query, method, query, method, ...) so that both see the same
// load on the machine. The query is SELECT of Win32_BIOS in root\cimv2;
// the method is StdRegProv.GetStringValue of the product name. Each mode
// first makes one warm-up call, outside the rounds: for the query, the
// connection's start.
//
// It prints one JSON line per round: calls per second, the processes
// started and the CPU time per call of hostbench (GetProcessTimes). The
// process count comes from a Job object that holds hostbench and so every
// process it would start; it must stay 0 in the rounds. Under Wine the
// first WMI call starts Wine's desktop process (explorer.exe, which Wine
// starts at a program's first use of the desktop, and Windows runs from
// logon): a warm-up may start that one, named by its image path, and no
// other. The last line is the summary:
// the median calls per second and CPU per call of each mode, beside the
// PowerShell worker's calls per second the previous report measured
// (previousWorker), and a note on what the figures say. hostbench exits 1
// when a call fails or a process started, 2 on a bad flag.
//
// Under Wine (make bench-windows) the calls go to Wine's WMI service,
// which is not Windows' WMI provider host: the figures say what the
// agent's side of a call costs (COM, the marshalling of parameters and
// objects), not what the MSFT_* storage providers cost on a node.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
)

// options are hostbench's flags.
type options struct {
	rounds  int
	calls   int
	timeout time.Duration
}

// Bounds of the flags: a run stays within hours.
const (
	maxRounds = 1000
	maxCalls  = 10000
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// parseFlags reads and checks the flags.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("hostbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.rounds, "rounds", 10, "rounds of each mode, interleaved")
	fs.IntVar(&o.calls, "calls", 200, "calls per round")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "deadline of each call")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q: hostbench takes flags only (-rounds, -calls, -timeout)", fs.Arg(0))
	case o.rounds < 1 || o.rounds > maxRounds:
		err = fmt.Errorf("-rounds %d is out of range: give 1 to %d", o.rounds, maxRounds)
	case o.calls < 1 || o.calls > maxCalls:
		err = fmt.Errorf("-calls %d is out of range: give 1 to %d", o.calls, maxCalls)
	case o.timeout <= 0:
		err = fmt.Errorf("-timeout %s is not positive: give the deadline of each call, e.g. 2m", o.timeout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "hostbench:", err)
	}
	return o, err
}

// mode is one kind of call, and what was measured of it.
type mode struct {
	name   string
	call   func(ctx context.Context, c wmi.Conn) error
	calls  int // made so far, the warm-up included
	starts int // processes the job gained during this mode's rounds
	warmup time.Duration
	// warmupStarts are the processes the job gained during the warm-up,
	// and warmupImages the image paths of the job's other processes then.
	warmupStarts int
	warmupImages []string
	rounds       []round
}

// The two calls, as the agent's WMI layer makes them.
var modes = []struct {
	name string
	call func(ctx context.Context, c wmi.Conn) error
}{
	{modeQuery, func(ctx context.Context, c wmi.Conn) error {
		objs, err := c.Query(ctx, wmi.NamespaceCIMv2, "SELECT SerialNumber, Manufacturer FROM Win32_BIOS")
		if err == nil && len(objs) != 1 {
			err = fmt.Errorf("the query of Win32_BIOS returned %d objects, want 1", len(objs))
		}
		return err
	}},
	{modeMethod, func(ctx context.Context, c wmi.Conn) error {
		out, err := c.Call(ctx, wmi.NamespaceCIMv2, "StdRegProv", "GetStringValue",
			wmi.Param{Name: "hDefKey", Value: uint32(0x80000002)}, // HKEY_LOCAL_MACHINE
			wmi.Param{Name: "sSubKeyName", Value: `SOFTWARE\Microsoft\Windows NT\CurrentVersion`},
			wmi.Param{Name: "sValueName", Value: "ProductName"})
		if err != nil {
			return err
		}
		if err := wmi.Result("StdRegProv.GetStringValue", out, wmi.Codes{}); err != nil {
			return err
		}
		if s, _ := out.Props["sValue"].(string); s == "" {
			return fmt.Errorf("StdRegProv.GetStringValue answered sValue %v, want the product name", out.Props["sValue"])
		}
		return nil
	}},
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	if err := benchmark(o, stdout); err != nil {
		fmt.Fprintln(stderr, "hostbench:", err)
		return 1
	}
	return 0
}

// benchmark runs the warm-up and the rounds, then prints the summary; it
// fails when a call fails or a process started.
func benchmark(o options, stdout io.Writer) error {
	job, err := newAccountingJob()
	if err != nil {
		return err
	}
	defer job.close()
	conn, err := wmi.New()
	if err != nil {
		return err
	}
	var ms []*mode
	for _, m := range modes {
		ms = append(ms, &mode{name: m.name, call: m.call})
	}
	first, err := job.snapshot()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := warmUp(o, conn, job, m); err != nil {
			return err
		}
	}
	out := json.NewEncoder(stdout)
	for n := 1; n <= o.rounds; n++ {
		for _, m := range ms {
			r, err := measure(o, conn, job, m, n)
			if err != nil {
				return err
			}
			if err := out.Encode(r); err != nil {
				return fmt.Errorf("writing round %d: %w", n, err)
			}
		}
	}
	last, err := job.snapshot()
	if err != nil {
		return err
	}
	s := summarize(o, ms, last.processes-first.processes, wineVersion())
	if err := out.Encode(s); err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	if !s.Verified {
		return fmt.Errorf("the counts do not match what was measured: %v", s.Mismatches)
	}
	return nil
}

// call makes one call of m.
func call(o options, conn wmi.Conn, m *mode) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	m.calls++
	if err := m.call(ctx, conn); err != nil {
		return fmt.Errorf("call %d of the %s mode: %w", m.calls, m.name, err)
	}
	return nil
}

// warmUp makes m's first call, outside the rounds.
func warmUp(o options, conn wmi.Conn, job *accountingJob, m *mode) error {
	before, err := job.snapshot()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := call(o, conn, m); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	m.warmup = time.Since(start)
	after, err := job.snapshot()
	if err != nil {
		return err
	}
	if m.warmupStarts = after.processes - before.processes; m.warmupStarts > 0 {
		if m.warmupImages, err = job.others(); err != nil {
			return err
		}
	}
	return nil
}

// measure makes round n's calls of m and returns its line.
func measure(o options, conn wmi.Conn, job *accountingJob, m *mode, n int) (round, error) {
	before, err := job.snapshot()
	if err != nil {
		return round{}, err
	}
	start := time.Now()
	for range o.calls {
		if err := call(o, conn, m); err != nil {
			return round{}, fmt.Errorf("round %d: %w", n, err)
		}
	}
	wall := time.Since(start)
	after, err := job.snapshot()
	if err != nil {
		return round{}, err
	}
	r := newRound(n, m.name, o.calls, wall, before, after)
	m.starts += r.ProcessStarts
	m.rounds = append(m.rounds, r)
	return r, nil
}

// wineVersion returns Wine's version when hostbench runs under Wine, else
// "": Wine's ntdll.dll exports wine_get_version, Windows' does not.
func wineVersion() string {
	proc := windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version")
	if proc.Find() != nil {
		return ""
	}
	v, _, _ := proc.Call()
	if v == 0 {
		return "unknown version"
	}
	// v points into Wine's ntdll, not into Go's memory: read it as a *byte
	// without converting a uintptr, which the garbage collector forbids.
	return windows.BytePtrToString(*(**byte)(unsafe.Pointer(&v)))
}
