//go:build !windows

package app

import (
	"context"
	"fmt"
	"io"
)

// runAsService is only meaningful on Windows.
func runAsService(_ string, _ func(ctx context.Context) int, stderr io.Writer) int {
	fmt.Fprintln(stderr, "--windows-service works only on Windows; run without it")
	return 2
}
