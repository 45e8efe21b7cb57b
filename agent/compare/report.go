package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// MaxCell is the widest answer the table shows; JSON shows them whole.
const MaxCell = 120

// WriteJSON writes the report as one JSON object.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as a table: one line per call, then each
// difference below its call, then the notes and a summary.
func WriteTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tRPC\tREQUEST\tCSI PROXY\tPIPEGUARD")
	for _, row := range r.Rows {
		result := "same"
		if !row.Same {
			result = "DIFFERENT"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", result, row.RPC, dash(row.Request), cell(row.CSIProxy), cell(row.Pipeguard))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	for _, row := range r.Rows {
		if row.Same {
			continue
		}
		fmt.Fprintf(&b, "\n%s %s:\n", row.RPC, row.Request)
		for _, d := range row.Differences {
			fmt.Fprintf(&b, "  - %s\n", d)
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\nNot compared:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	if r.Identical {
		fmt.Fprintf(&b, "\n%d calls: pipeguard answers as CSI Proxy does.\n", r.Calls)
	} else {
		fmt.Fprintf(&b, "\n%d calls: %d differ.\n", r.Calls, r.Differ)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cell fits an answer in the table: no tabs or line breaks, at most MaxCell
// runes.
func cell(s string) string {
	s = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
	if r := []rune(s); len(r) > MaxCell {
		return string(r[:MaxCell-1]) + "…"
	}
	return s
}
