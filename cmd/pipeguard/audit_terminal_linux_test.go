package main

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openTerminal returns the terminal end of a new pseudo-terminal and its
// other end, where what a user types is written.
func openTerminal(t *testing.T) (tty, keyboard *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
		return nil, nil
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty, ptmx
}

// TestAuditWithoutPathOnATerminal: with no PATH and a terminal on
// standard input, query, summary and verify say what they want at once
// (exit 2) instead of waiting for records nobody sends; from a pipe they
// read standard input as before.
func TestAuditWithoutPathOnATerminal(t *testing.T) {
	const want = ": no audit log given, and standard input is a terminal: give the agent's --audit-log-path file or a directory of audit files (e.g. /var/log/pipeguard/audit.log), or pipe records in (\"-\" reads standard input)\n"
	for _, cmd := range []string{"query", "summary", "verify"} {
		tty, keyboard := openTerminal(t)
		// End of input typed ahead, once for every read: a command that
		// read the terminal would find no records rather than wait, so
		// the test fails rather than hangs.
		if _, err := keyboard.Write(bytes.Repeat([]byte{4}, 16)); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := run([]string{"audit", cmd}, tty, &out, &errOut)
		if code != exitBadInput || errOut.String() != "pipeguard audit "+cmd+want+"See 'pipeguard audit "+cmd+" --help' for usage.\n" || out.Len() != 0 {
			t.Errorf("audit %s on a terminal: exit %d\nstdout %q\nstderr %q", cmd, code, out.String(), errOut.String())
		}
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close() // an empty log
	defer r.Close()
	var out, errOut bytes.Buffer
	code := run([]string{"audit", "verify"}, r, &out, &errOut)
	if code != exitDenied || out.String() != "FAIL: <stdin>: no audit records found\n" {
		t.Errorf("audit verify from an empty pipe: exit %d\nstdout %q\nstderr %q", code, out.String(), errOut.String())
	}
}
