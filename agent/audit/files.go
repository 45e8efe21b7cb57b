package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pipeguard/pipeguard/internal/option"
)

// backupTimeLayout stamps rotated files, as kube-apiserver's lumberjack
// rotation does: audit.log becomes audit-2025-01-02T15-04-05.000.log.
const backupTimeLayout = "2006-01-02T15-04-05.000"

// splitName splits a log file name into stem and extension.
func splitName(path string) (dir, stem, ext string) {
	dir, base := filepath.Split(path)
	ext = filepath.Ext(base)
	return filepath.Clean(dir), strings.TrimSuffix(base, ext), ext
}

// backupName is the name a rotated file gets; n > 0 disambiguates two
// rotations in one millisecond.
func backupName(path string, t time.Time, n int) string {
	dir, stem, ext := splitName(path)
	suffix := ""
	if n > 0 {
		suffix = fmt.Sprintf("-%d", n)
	}
	return filepath.Join(dir, stem+"-"+t.UTC().Format(backupTimeLayout)+suffix+ext)
}

func backupPattern(path string) *regexp.Regexp {
	_, stem, ext := splitName(path)
	return regexp.MustCompile(`^` + regexp.QuoteMeta(stem) + `-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}(-\d+)?` + regexp.QuoteMeta(ext) + `$`)
}

// Backups lists the rotated siblings of the log file path, oldest first by
// name (names carry the rotation time).
func Backups(path string) ([]string, error) {
	dir, _, _ := splitName(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	re := backupPattern(path)
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && re.MatchString(e.Name()) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Slice(out, func(i, j int) bool { return backupLess(out[i], out[j]) })
	return out, nil
}

// backupLess orders backups by time stamp, then by disambiguating number.
func backupLess(a, b string) bool {
	if len(a) != len(b) {
		// Same stamp: "x-….000.log" sorts before "x-….000-1.log".
		ta, tb := strings.TrimSuffix(a, filepath.Ext(a)), strings.TrimSuffix(b, filepath.Ext(b))
		if strings.HasPrefix(tb, ta) {
			return true
		}
		if strings.HasPrefix(ta, tb) {
			return false
		}
	}
	return a < b
}

// Files returns the files of the log whose current file is path: its
// rotated siblings, oldest first, then path itself when it exists. A
// directory yields every regular file in it. Verification (package
// review) orders them by the sequence numbers they hold, not by name.
func Files(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err == nil && fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range entries {
			if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, filepath.Join(path, e.Name()))
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s holds no audit log files", path)
		}
		sort.Slice(out, func(i, j int) bool { return backupLess(out[i], out[j]) })
		return out, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	backups, berr := Backups(path)
	if berr != nil && !errors.Is(berr, fs.ErrNotExist) {
		return nil, berr
	}
	if err == nil {
		backups = append(backups, path)
	}
	if len(backups) == 0 {
		return nil, option.Errorf("no audit log at %s and no rotated files beside it: give the %s of the agent, or a directory of audit files", path, pathOption)
	}
	return backups, nil
}
