#!/usr/bin/env bash
# Runs a command that may take long (a go build, vet or test) and keeps the
# terminal informed: a line saying what it does and how long it takes cold
# before it starts, a "still ..." line every PROGRESS_EVERY seconds (default
# 10) while it runs, and how long it took at the end. The command line is
# printed too, as make prints it. Its output passes
# through; its exit status is the command's.
#
# Usage:
#   hack/progress.sh [--packages] WHAT COLD -- COMMAND [ARG...]
#
#   WHAT        what the command does, e.g. "building pipeguard-webhook"
#   COLD        how long it takes with an empty Go build cache
#   --packages  COMMAND is `go build -v` or `go vet -v`-like: lines that are
#               only an import path are packages being compiled; they are
#               counted into the "still ..." lines instead of printed
#
# Example:
#   hack/progress.sh --packages "building pipeguard-agent" "about 2 minutes on 2 CPUs" -- \
#       go build -v -o bin/ ./cmd/pipeguard-agent

set -o errexit -o nounset -o pipefail

packages=false
if [[ "${1:-}" == "--packages" ]]; then
	packages=true
	shift
fi
if [[ $# -lt 4 || "$3" != "--" ]]; then
	echo "usage: hack/progress.sh [--packages] WHAT COLD -- COMMAND [ARG...]" >&2
	exit 2
fi
what=$1 cold=$2
shift 3
every=${PROGRESS_EVERY:-10}

printf "%s (cold: %s; less once Go's build cache holds it)\n+ %s\n" "${what}" "${cold}" "$*"
start=${SECONDS}
last=${SECONDS}
n=0
partial=""
status=1
# The command's stdout and stderr are read line by line; read -t wakes the
# loop at least every second so that a silent command still gets its
# "still ..." lines.
while :; do
	line=""
	if IFS= read -r -t 1 line; then
		line=${partial}${line}
		partial=""
		if [[ "${line}" =~ ^__progress_status=([0-9]+)$ ]]; then
			status=${BASH_REMATCH[1]}
		elif ${packages} && [[ "${line}" =~ ^[A-Za-z0-9._~/+-]+$ && "${line}" != */*.go ]]; then
			n=$((n + 1))
		else
			printf '%s\n' "${line}"
		fi
	else
		rc=$?
		# rc > 128: the second passed within a line or without one (read
		# keeps what it got); otherwise the end of the input.
		if ((rc > 128)); then
			partial+=${line}
		else
			line=${partial}${line}
			[[ -n "${line}" ]] && printf '%s\n' "${line}"
			break
		fi
	fi
	if ((SECONDS - last >= every)); then
		last=${SECONDS}
		if ${packages}; then
			printf 'still %s: %ds, %d packages compiled\n' "${what}" "$((SECONDS - start))" "${n}"
		else
			printf 'still %s: %ds\n' "${what}" "$((SECONDS - start))"
		fi
	fi
done < <(
	status=0
	"$@" 2>&1 || status=$?
	echo "__progress_status=${status}"
)
if ((status == 0)); then
	printf '%s: done in %ds\n' "${what}" "$((SECONDS - start))"
else
	printf '%s: failed after %ds (exit %d)\n' "${what}" "$((SECONDS - start))" "${status}"
fi
exit "${status}"
