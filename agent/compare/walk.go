package compare

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The bounds of the walk of the kubelet directory for target paths.
const (
	// MaxDepth is how many levels below the kubelet directory a target
	// path may lie: pods\<uid>\volumes\<plugin>\<name>\mount is 6,
	// plugins\kubernetes.io\csi\<driver>\<hash>\globalmount is 6.
	MaxDepth = 8
	// MaxEntries is the most directory entries the walk reads.
	MaxEntries = 100000
	// MaxTargetPaths is the most target paths it returns.
	MaxTargetPaths = 256
)

// FindMountPoints walks root, the kubelet directory, breadth first and
// returns the target paths a CSI driver would ask GetVolumeIDFromTargetPath
// about: every folder named mount or globalmount (where the kubelet has
// drivers stage and publish volumes), and every link, junction or mount
// point (a reparse point) below root, without descending into them. The
// walk is bounded by MaxDepth, MaxEntries and MaxTargetPaths; notes say
// which bound it reached and what it could not read. It only reads.
func FindMountPoints(root string) (paths []string, notes []string) {
	type dir struct {
		path  string
		depth int
	}
	if _, err := os.Stat(root); err != nil {
		return nil, []string{fmt.Sprintf("no target paths compared: the kubelet directory %s cannot be read: %v", root, err)}
	}
	queue := []dir{{root, 0}}
	entries, unreadable := 0, 0
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		list, err := readDir(d.path, MaxEntries-entries)
		if err != nil {
			unreadable++
			if unreadable <= 3 {
				notes = append(notes, fmt.Sprintf("cannot read %s: %v", d.path, err))
			}
			continue
		}
		for _, e := range list {
			entries++
			p := filepath.Join(d.path, e.Name())
			reparse := e.Type()&(fs.ModeSymlink|fs.ModeIrregular) != 0
			named := e.Name() == "mount" || e.Name() == "globalmount"
			if reparse || (named && e.IsDir()) {
				if len(paths) == MaxTargetPaths {
					return paths, append(notes, fmt.Sprintf("only the first %d target paths found were compared", MaxTargetPaths))
				}
				paths = append(paths, p)
				continue
			}
			if e.IsDir() && d.depth+1 < MaxDepth {
				queue = append(queue, dir{p, d.depth + 1})
			}
		}
		if entries >= MaxEntries {
			return paths, append(notes, fmt.Sprintf("the walk of %s stopped after %d entries", root, MaxEntries))
		}
	}
	if unreadable > 3 {
		notes = append(notes, fmt.Sprintf("and %d more folders could not be read", unreadable-3))
	}
	return paths, notes
}

// readDir reads at most n entries of a folder.
func readDir(path string, n int) ([]os.DirEntry, error) {
	if n <= 0 {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	list, err := f.ReadDir(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return list, err
}
