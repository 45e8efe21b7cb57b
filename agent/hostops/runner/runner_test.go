package runner

import (
	"context"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

func TestExecPassesEnvNotText(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	hostile := `'; echo INJECTED; '$(echo INJECTED)`
	out, err := Exec{}.Run(context.Background(), Command{Program: "sh", Args: []string{"-c", `printf %s "$V"`}, Env: []string{Env("V", hostile)}})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != hostile {
		t.Fatalf("output %q, want the value verbatim %q", out, hostile)
	}
}

func TestExecReportsStderr(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	_, err := Exec{}.Run(context.Background(), Command{Program: "sh", Args: []string{"-c", "echo boom >&2; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want it to carry stderr", err)
	}
}

func TestDecodeJSONList(t *testing.T) {
	type disk struct{ Number uint32 }
	cases := map[string]struct {
		out  string
		want int
	}{
		"none":  {"", 0},
		"one":   {`{"Number":1}`, 1},
		"many":  {`[{"Number":1},{"Number":2}]`, 2},
		"space": {"\r\n[{\"Number\":1}]\r\n", 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeJSONList[disk]([]byte(tc.out))
			if err != nil || len(got) != tc.want {
				t.Fatalf("got %v, %v; want %d items", got, err, tc.want)
			}
		})
	}
	if _, err := DecodeJSONList[disk]([]byte("WARNING: x")); err == nil {
		t.Fatal("garbage decoded")
	}
}

func TestLines(t *testing.T) {
	got := Lines([]byte("a\r\n\r\n b \n"))
	if strings.Join(got, "|") != "a|b" {
		t.Fatalf("Lines = %q", got)
	}
}
