//go:build wine && linux

package wine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// install is what a machine without the tools is told.
const install = "the Windows tests need Wine and the mingw-w64 compiler: sudo apt-get install wine64 gcc-mingw-w64-x86-64"

var (
	px       *prefix // the Wine prefix the tests share
	missing  string  // why the tools are absent, when they are
	setupErr error   // why the prefix could not be prepared
)

// prefix is a Wine prefix holding pipeguard's Windows binaries.
type prefix struct {
	dir        string // temp dir holding the prefix
	wine       string
	wineserver string
	env        []string
	goEnv      []string // builds Windows programs for Wine
}

func TestMain(m *testing.M) {
	start := time.Now()
	px, missing, setupErr = setup()
	if px != nil {
		fmt.Printf("wine prefix ready in %s\n", time.Since(start).Round(time.Millisecond))
	}
	code := m.Run()
	if px != nil {
		px.close()
	}
	os.Exit(code)
}

// need returns the prefix, or ends the test: skipped when the tools are
// absent (failed under CI=true, where the Windows tests must run), failed
// when the prefix could not be prepared.
func need(t *testing.T) *prefix {
	t.Helper()
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s; %s (CI=true: these tests must run)", missing, install)
		}
		t.Skipf("%s; %s", missing, install)
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return px
}

// lookTool finds the first of names on PATH or as a path.
func lookTool(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// setup prepares a Wine prefix: the runtime DLL Go needs, and the Windows
// binaries and test programs.
func setup() (*prefix, string, error) {
	p := &prefix{
		wine:       lookTool("wine", "wine64", "/usr/lib/wine/wine64"),
		wineserver: lookTool("wineserver", "/usr/lib/wine/wineserver64", "/usr/lib/wine/wineserver"),
	}
	gcc := lookTool("x86_64-w64-mingw32-gcc")
	switch {
	case p.wine == "" || p.wineserver == "":
		return nil, "wine is not installed", nil
	case gcc == "":
		return nil, "x86_64-w64-mingw32-gcc is not installed", nil
	}
	dir, err := os.MkdirTemp("", "pipeguard-wine-")
	if err != nil {
		return nil, "", err
	}
	p.dir = dir
	p.env = append(os.Environ(),
		"WINEPREFIX="+filepath.Join(dir, "prefix"),
		"WINEDEBUG=-all",
		// No Mono or Gecko installer; bcryptprimitives from system32 first.
		"WINEDLLOVERRIDES=mscoree,mshtml=;bcryptprimitives=n,b",
		"DISPLAY=",
	)
	fail := func(err error) (*prefix, string, error) {
		p.close()
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if _, err := p.host(ctx, p.wine, "wineboot.exe", "--init"); err != nil {
		return fail(fmt.Errorf("creating the Wine prefix: %w", err))
	}
	if _, err := p.host(ctx, p.wineserver, "-w"); err != nil {
		return fail(fmt.Errorf("waiting for wineboot: %w", err))
	}
	// A persistent wineserver: by default it ends, with every service it
	// runs, seconds after the last program exits.
	// It is started with no pipes: it keeps them open while it runs.
	persist := exec.CommandContext(ctx, p.wineserver, "-p")
	persist.Env = p.env
	if err := persist.Run(); err != nil {
		return fail(fmt.Errorf("starting a persistent wineserver: %w", err))
	}
	// Wine's own services start with the first program and inherit its
	// output: start them now, with none, so that no test's output stays
	// open after its program ends.
	services := exec.CommandContext(ctx, p.wine, "wineboot.exe")
	services.Env = p.env
	if err := services.Run(); err != nil {
		return fail(fmt.Errorf("starting Wine's services: %w", err))
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		return fail(err)
	}
	system32 := p.path(`C:\windows\system32`)
	if _, err := p.host(ctx, gcc, "-shared", "-O2", "-o", filepath.Join(system32, "bcryptprimitives.dll"),
		filepath.Join(root, "hack", "wine", "bcryptprimitives.c"), "-ladvapi32"); err != nil {
		return fail(fmt.Errorf("building bcryptprimitives.dll: %w", err))
	}
	overlay, err := deleteOverlay(dir)
	if err != nil {
		return fail(err)
	}
	p.goEnv = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0", "GOFLAGS=-overlay="+overlay)
	bin := p.path(`C:\pipeguard\bin`)
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin+string(filepath.Separator),
		"./cmd/pipeguard-agent", "./cmd/pipeguard", "./test/wine/cmd/csiclient", "./internal/testing/fakecri/cmd/fakecri")
	build.Dir = root
	build.Env = p.goEnv
	if out, err := build.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("building the Windows binaries: %v\n%s", err, out))
	}
	if err := os.MkdirAll(p.path(`C:\var\lib\kubelet\pods`), 0o755); err != nil {
		return fail(err)
	}
	return p, "", nil
}

// deleteOverlay writes a go build -overlay that lets Go's file deletion work
// under Wine 8. Go deletes with FileDispositionInformationEx and falls back
// to the older FileDispositionInformation when Windows says it lacks the
// class; Wine 8 says so with STATUS_NOT_IMPLEMENTED, which Go does not
// expect, so every os.RemoveAll (and t.TempDir's cleanup) fails there with
// "Invalid function". The overlay adds that one status to Go's fallback
// list; Windows itself never answers with it.
func deleteOverlay(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	orig := filepath.Join(strings.TrimSpace(string(out)), "src", "internal", "syscall", "windows", "at_windows.go")
	src, err := os.ReadFile(orig)
	if err != nil {
		return "", err
	}
	const fallback = "\t\tSTATUS_NOT_SUPPORTED:"
	if strings.Count(string(src), fallback) != 1 {
		return "", fmt.Errorf("%s no longer has one %q case: update deleteOverlay in test/wine for this Go version", orig, strings.TrimSpace(fallback))
	}
	patched := strings.Replace(string(src), fallback, "\t\tNTStatus(0xC0000002), // STATUS_NOT_IMPLEMENTED, from Wine 8\n"+fallback, 1)
	file := filepath.Join(dir, "at_windows.go")
	if err := os.WriteFile(file, []byte(patched), 0o644); err != nil {
		return "", err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {orig: file}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "overlay.json")
	return path, os.WriteFile(path, overlay, 0o644)
}

// host runs a host program with the prefix's environment.
func (p *prefix) host(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = p.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out.Bytes())
	}
	return out.Bytes(), nil
}

// path returns the host path of a path on the prefix's C: drive.
func (p *prefix) path(win string) string {
	rest, ok := strings.CutPrefix(win, `C:\`)
	if !ok {
		panic("not a C: path: " + win)
	}
	return filepath.Join(p.dir, "prefix", "drive_c", filepath.FromSlash(strings.ReplaceAll(rest, `\`, "/")))
}

// exe returns the host path of one of the built Windows programs.
func (p *prefix) exe(name string) string { return p.path(`C:\pipeguard\bin\` + name + ".exe") }

// command returns a command running a Windows program under Wine.
func (p *prefix) command(ctx context.Context, program string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.wine, append([]string{program}, args...)...)
	cmd.Env = p.env
	// Should a process the program starts keep its output open, its end
	// still ends the wait.
	cmd.WaitDelay = 30 * time.Second
	return cmd
}

// close stops every Wine process of the prefix and removes it.
func (p *prefix) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = p.host(ctx, p.wineserver, "-k")
	_ = os.RemoveAll(p.dir)
}
