// Package doctable reads the tables of the docs for tests that check them
// against the code: a table whose rows name a value and where it is set.
package doctable

import (
	"os"
	"strings"
	"testing"
)

// Rows returns the cells of every row of the first table in the section
// headed "## "+section of the Markdown file at path, header and separator
// rows left out. A row with another number of cells than want fails t.
func Rows(t testing.TB, path, section string, want int) [][]string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(doc), "\n## "+section+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", path, section)
	}
	body, _, _ = strings.Cut(body, "\n## ")
	var rows [][]string
	header := true
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "|") {
			if !header {
				break // the first table ended
			}
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if header {
			header = false
			continue
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		if len(cells) != want {
			t.Fatalf("%s, section %q: row %q has %d cells, want %d", path, section, line, len(cells), want)
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		t.Fatalf("%s, section %q: no table", path, section)
	}
	return rows
}
