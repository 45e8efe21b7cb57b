package main

func agent(w writer, in *Input) {
	a := in.Agent
	if a == nil {
		return
	}
	w("## Agent\n\n")
	w("`hack/bench/agentload` calls filesystem v1 PathExists (a read) and Mkdir (a mutating call; each makes a new directory)\n")
	w("through real unix sockets, each client on its own connection, on two agents in processes of their own: one that\n")
	w("gates and audits every request as pipeguard-agent does (the shipped rules, Metadata level, default durability: a\n")
	w("mutating call's write-ahead record is synced before it runs), with its audit log on %s, and one with neither.\n", cell(a.AuditFilesystem))
	w("The load alternates between them every %s ms, so both see the same machine.\n\n", trimFloat(a.SliceMs))
	w("| op | clients | agent | calls/s | p50 ms | p90 ms | p99 ms | max ms | errors | agent CPU ms/call | RSS MiB | peak RSS MiB |\n")
	w("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range a.Cases {
		for _, v := range []struct {
			name string
			s    *AgentStats
		}{{"ungated", c.Ungated}, {"gated + audited", c.Gated}} {
			w("| %s | %d | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |\n", cell(c.Op), c.Clients, v.name,
				num0(v.s.CallsPerSecond), ms(v.s.P50), ms(v.s.P90), ms(v.s.P99), ms(v.s.Max), v.s.Errors,
				ms(v.s.CPUPerCallMs), mib(v.s.RSSBytes), mib(v.s.PeakRSSBytes))
		}
	}
	w("\n| op | clients | gated calls/s / ungated | overhead | p99 gated / ungated |\n|---|---:|---:|---:|---:|\n")
	for _, c := range a.Cases {
		w("| %s | %d | %s | %s%% | %s× |\n", cell(c.Op), c.Clients, pct(ratio(c.Gated.CallsPerSecond, c.Ungated.CallsPerSecond)),
			signed(c.OverheadPercent), x2(c.P99Ratio))
	}
	w("\nOverhead: how much longer the gated agent takes for the same calls, (ungated calls/s ÷ gated calls/s − 1) × 100.\n\n")
}

func goBench(w writer, in *Input) {
	if len(in.GoBench) == 0 {
		return
	}
	w("## Go benchmarks\n\n")
	w("`make bench-go`: the admission path, the rego engine, the handler of each target for each kind of request, and the\n")
	w("agent (BenchmarkGuardOverhead compares gated and ungated agents in one process), on one core.\n\n")
	w("<details><summary>go test -bench output</summary>\n\n```text\n")
	for _, l := range in.GoBench {
		w("%s\n", l)
	}
	w("```\n\n</details>\n")
}
