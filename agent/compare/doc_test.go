package compare

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestBoundsDocumented: docs/install.md states the bounds and tolerances
// this package has.
func TestBoundsDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	_, doc, ok := strings.Cut(string(data), "### Before you switch: compare")
	if !ok {
		t.Fatal("docs/install.md has no section Before you switch: compare")
	}
	doc, _, _ = strings.Cut(doc, "\n### ")
	doc = strings.Join(strings.Fields(doc), " ")
	for _, want := range []string{
		fmt.Sprintf("read only up to %d MiB", MaxMessage>>20),
		fmt.Sprintf("up to %d entries", MaxItems),
		fmt.Sprintf("at most %d disks and %d volumes", MaxDisks, MaxVolumes),
		fmt.Sprintf("kept up to %d bytes", MaxValue),
		fmt.Sprintf("at most %d levels down", MaxDepth),
		fmt.Sprintf("at most %d,%03d entries", MaxEntries/1000, MaxEntries%1000),
		fmt.Sprintf("at most %d paths", MaxTargetPaths),
		fmt.Sprintf("within %g%% of the volume's total bytes or %d MiB", UsedBytesShare*100, UsedBytesFloor>>20),
		fmt.Sprintf("(default `%s`)", DefaultTimeout),
		fmt.Sprintf("at %d characters", MaxCell),
		fmt.Sprintf("leaves %d calls in a row unanswered", MaxTimeouts),
		"`GetService` of `" + strings.Join(DefaultServices[:2], "`, `"),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/install.md's compare section does not say %q", want)
		}
	}
}
