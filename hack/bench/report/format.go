package main

import (
	"strconv"
	"strings"
)

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func ms(v float64) string   { return strconv.FormatFloat(v, 'f', 3, 64) }
func x1(v float64) string   { return strconv.FormatFloat(v, 'f', 1, 64) }
func x2(v float64) string   { return strconv.FormatFloat(v, 'f', 2, 64) }
func pct(v float64) string  { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" }
func num0(v float64) string { return thousands(int(v + 0.5)) }
func mib(b int64) string    { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) }

func signed(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if v >= 0 {
		s = "+" + s
	}
	return s
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// cell makes s safe inside a markdown table cell.
func cell(s string) string {
	if s == "" {
		return "unknown"
	}
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// trimFloat writes v without trailing zeros.
func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
