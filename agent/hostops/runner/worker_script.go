package runner

// WorkerMarker opens WorkerBootstrap, so that a process list or a stand-in
// can tell a worker's command line from a one-off script's.
const WorkerMarker = "<# pipeguard-powershell-worker v1 #>"

// WorkerBootstrap is the constant -Command of every PowerShell worker. It
// reads one JSON request per line from standard input and answers each with
// one JSON line on standard output, both UTF-8:
//
//	{"register":"s3","script":"..."}                   remember a script; no answer
//	{"id":7,"run":"s3","env":{"disknumber":"4242"}}    run it with these values
//	{"id":7,"ok":true,"out":"..."}                     its output, as Out-String
//	{"id":7,"ok":false,"error":"..."}                  the exception message
//
// Before a run it sets each value as a process environment variable, so
// that the scripts read $Env:name as they do in a process of their own, and
// afterwards puts back what the variables held; once the answer is written
// it removes its own variables of the request (WorkerRequestVariables) and
// clears $Error, which holds the exceptions of the request. The script runs with
// $ErrorActionPreference='Stop' in a child scope, so its variables do not
// outlive the request, and inside a loop of its own, so that a stray break
// or continue in it cannot reach the worker's loop. Its warning, verbose, debug and information streams
// are discarded and progress is off: anything else written to standard
// output would break the framing. A request for a name never registered is
// an error answer. The worker ends when its standard input closes.
//
// It is one line, with no double quotes, so that no command line quoting
// rule can change it, and request values never appear in it: they arrive
// on standard input as JSON data.
const WorkerBootstrap = WorkerMarker + " " +
	`$ErrorActionPreference='Stop'; $ProgressPreference='SilentlyContinue'; ` +
	`$utf8 = New-Object Text.UTF8Encoding $false; ` +
	`$stdin = New-Object IO.StreamReader([Console]::OpenStandardInput(), $utf8); ` +
	`$stdout = New-Object IO.StreamWriter([Console]::OpenStandardOutput(), $utf8); $stdout.AutoFlush = $true; ` +
	`$scripts = @{}; ` +
	`while ($null -ne ($line = $stdin.ReadLine())) { ` +
	`$req = ConvertFrom-Json $line; ` +
	`if ($req.register) { $scripts[$req.register] = [string]$req.script; continue }; ` +
	`$ans = [ordered]@{ id = $req.id; ok = $true; out = '' }; $saved = @{}; ` +
	`try { ` +
	`if (-not $scripts.ContainsKey([string]$req.run)) { throw ('no script is registered as ' + $req.run) }; ` +
	`foreach ($v in $req.env.PSObject.Properties) { ` +
	`$saved[$v.Name] = [Environment]::GetEnvironmentVariable($v.Name, 'Process'); ` +
	`[Environment]::SetEnvironmentVariable($v.Name, [string]$v.Value, 'Process') }; ` +
	`$sb = [ScriptBlock]::Create($scripts[[string]$req.run]); ` +
	`do { $ans.out = [string](& $sb 3>$null 4>$null 5>$null 6>$null | Out-String -Width 65536) } while ($false) ` +
	`} catch { $ans.ok = $false; $ans.error = [string]$_.Exception.Message } ` +
	`finally { foreach ($n in $saved.Keys) { [Environment]::SetEnvironmentVariable($n, $saved[$n], 'Process') } }; ` +
	`$stdout.WriteLine((ConvertTo-Json $ans -Compress)); ` +
	`Remove-Variable -Name ` + WorkerRequestVariables + ` -ErrorAction SilentlyContinue; $Error.Clear() }`

// WorkerRequestVariables are the variables WorkerBootstrap sets for a
// request, removed once it is answered, with $Error, so that no value of a
// request (an SMB password, a CHAP secret) stays in the worker for the next
// one to read.
const WorkerRequestVariables = "line,req,ans,saved,v,n,sb"

// WorkerArgs are the arguments of a PowerShell worker: the options every
// PowerShell command gets, and WorkerBootstrap as its -Command.
func WorkerArgs() []string {
	return []string{"-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-Command", WorkerBootstrap}
}
