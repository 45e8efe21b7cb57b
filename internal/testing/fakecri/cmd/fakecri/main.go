// Command fakecri serves the pods, containers and pids of a JSON file
// (fakecri.State) as a CRI runtime service on a unix socket or named pipe,
// for end-to-end tests of pipeguard-agent's caller attribution.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/pipeguard/pipeguard/internal/testing/fakecri"
)

func main() { os.Exit(run()) }

func run() int {
	endpoint := flag.String("endpoint", "", "where to listen: unix:///path or npipe:////./pipe/name")
	state := flag.String("state", "", "JSON file of pods and containers (fakecri.State)")
	flag.Parse()
	if *endpoint == "" || *state == "" {
		fmt.Fprintln(os.Stderr, "fakecri: -endpoint and -state are required")
		return 2
	}
	st, err := fakecri.Load(*state)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakecri:", err)
		return 1
	}
	s, err := fakecri.Start(*endpoint, st)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakecri:", err)
		return 1
	}
	defer s.Stop()
	fmt.Println("serving", *endpoint)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
	return 0
}
