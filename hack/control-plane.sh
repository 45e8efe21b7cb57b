#!/usr/bin/env bash
# Builds the local Kubernetes control plane (kube-apiserver, etcd, kubectl)
# from Go modules and caches it under bin/k8s/<version>-<goos>-<goarch>/, the
# layout controller-runtime's envtest expects in KUBEBUILDER_ASSETS.
#
# Usage:
#   hack/control-plane.sh          build if needed; print the directory
#   hack/control-plane.sh sync     rewrite hack/tools/{kube,etcd}/go.mod to
#                                  match the versions below, then build
#
#   export KUBEBUILDER_ASSETS="$(hack/control-plane.sh)"
#
# The directory is the last line on stdout; progress goes to stderr. A second
# run finds the binaries and returns at once, without touching the network.
#
# Environment:
#   CONTROL_PLANE_BUILD_JOBS  packages compiled in parallel (default: CPUs, at
#                             most 4). A cold build needs ~15 CPU-minutes
#                             and peaks at ~2.4 GB RAM (linking kube-apiserver).
#   GOOS, GOARCH              target platform (default: the host's)

set -o errexit -o nounset -o pipefail

# The one place to change versions. After changing them run
# `hack/control-plane.sh sync` and commit hack/tools/.
KUBE_VERSION=1.37.1
ETCD_VERSION=3.7.3

# Staging modules (k8s.io/api, k8s.io/client-go, ...) are tagged v0.<minor>.<patch>
# for Kubernetes v1.<minor>.<patch>.
STAGING_VERSION="0.${KUBE_VERSION#*.}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBE_MOD="${ROOT}/hack/tools/kube"
ETCD_MOD="${ROOT}/hack/tools/etcd"

log() { printf 'control-plane: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

command -v go >/dev/null 2>&1 || die "go not found in PATH"

# The tool modules stand alone: a go.work of the caller must not change what
# they build.
export GOWORK=off
export CGO_ENABLED=0

GOOS="$(go env GOOS)"
GOARCH="$(go env GOARCH)"
EXE="$(go env GOEXE)"
export GOOS GOARCH

OUT="${ROOT}/bin/k8s/${KUBE_VERSION}-${GOOS}-${GOARCH}"
STAMP="${OUT}/.stamp"

# want_stamp names what the binaries are built from: the versions and a
# checksum of the tool modules, so that any change to those rebuilds them.
want_stamp() {
	printf 'kubernetes=v%s etcd=v%s modules=%s\n' "${KUBE_VERSION}" "${ETCD_VERSION}" "$(
		cat "${KUBE_MOD}/go.mod" "${KUBE_MOD}/go.sum" "${ETCD_MOD}/go.mod" "${ETCD_MOD}/go.sum" "${ETCD_MOD}/main.go" |
			cksum | cut -d' ' -f1
	)"
}

# sync_modules rewrites both tool modules to the versions above. k8s.io/kubernetes
# replaces each staging module with ./staging/src/<name>, which does not exist
# in the published module, so every one of them is replaced with its
# published copy of the matching version.
sync_modules() {
	log "syncing hack/tools/kube to k8s.io/kubernetes v${KUBE_VERSION}"
	local gomod staging
	gomod="$(cd "${KUBE_MOD}" && go mod download -json "k8s.io/kubernetes@v${KUBE_VERSION}" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
	[[ -f "${gomod}" ]] || die "cannot download the go.mod of k8s.io/kubernetes v${KUBE_VERSION}"
	staging="$(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/k8s\.io/[a-z0-9-]*$#\1#p' "${gomod}")"
	[[ -n "${staging}" ]] || die "no staging modules found in ${gomod}"
	(
		cd "${KUBE_MOD}"
		local m drop=()
		for m in $(go mod edit -json | sed -n 's/^[[:space:]]*"Path": "\(k8s\.io\/[^"]*\)".*/\1/p' | sort -u); do
			drop+=("-dropreplace=${m}")
		done
		go mod edit "${drop[@]}" "-require=k8s.io/kubernetes@v${KUBE_VERSION}"
		{
			printf '\n// k8s.io/kubernetes points its staging modules at ./staging/src; use the\n'
			printf '// published copies that match its release instead.\nreplace (\n'
			for m in ${staging}; do
				printf '\t%s => %s v%s\n' "${m}" "${m}" "${STAGING_VERSION}"
			done
			printf ')\n'
		} >>go.mod
		go mod tidy >&2
	)
	log "syncing hack/tools/etcd to go.etcd.io/etcd/server/v3 v${ETCD_VERSION}"
	(
		cd "${ETCD_MOD}"
		go mod edit "-require=go.etcd.io/etcd/server/v3@v${ETCD_VERSION}"
		go mod tidy >&2
	)
}

# check_modules fails when a tool module pins other versions than the ones above.
check_modules() {
	grep -Eq "^[[:space:]]*(require[[:space:]]+)?k8s\.io/kubernetes v${KUBE_VERSION//./\\.}( |$)" "${KUBE_MOD}/go.mod" ||
		die "hack/tools/kube/go.mod does not require k8s.io/kubernetes v${KUBE_VERSION}; run: hack/control-plane.sh sync"
	local replaced
	replaced="$(grep -E "=> k8s\.io/[a-z0-9-]+ v[0-9]" "${KUBE_MOD}/go.mod" || true)"
	[[ -n "${replaced}" ]] && ! grep -qv " v${STAGING_VERSION}\$" <<<"${replaced}" ||
		die "hack/tools/kube/go.mod does not replace every staging module with v${STAGING_VERSION}; run: hack/control-plane.sh sync"
	grep -Eq "^[[:space:]]*(require[[:space:]]+)?go\.etcd\.io/etcd/server/v3 v${ETCD_VERSION//./\\.}( |$)" "${ETCD_MOD}/go.mod" ||
		die "hack/tools/etcd/go.mod does not require go.etcd.io/etcd/server/v3 v${ETCD_VERSION}; run: hack/control-plane.sh sync"
}

# progress NAME TOTAL reads what `go build -v` writes to stderr: each
# package it compiles, one import path per line. It logs how far the build
# of NAME is at every tenth of TOTAL (the packages the build needs; those
# already in Go's build cache are not compiled again) and at least every 30
# seconds, and passes every other line (compiler errors) through.
progress() {
	local name=$1 total=$2 n=0 tenth=0 last=${SECONDS} line
	((total > 0)) || total=1
	while IFS= read -r line; do
		if [[ ! "${line}" =~ ^[A-Za-z0-9._~/+-]+$ ]]; then
			printf '%s\n' "${line}" >&2
			continue
		fi
		n=$((n + 1))
		if ((n * 10 / total > tenth || SECONDS - last >= 30)); then
			tenth=$((n * 10 / total))
			last=${SECONDS}
			log "${name}: ${n} of ${total} packages compiled ($((n * 100 / total))%), $((SECONDS - build_start))s"
		fi
	done
	log "${name}: ${n} packages compiled, the other $((total - n)) taken from Go's build cache"
}

# packages counts the packages, standard library included, that building
# the given import paths needs.
packages() {
	go list -mod=readonly -deps "$@" | wc -l
}

have_binaries() {
	local b
	for b in kube-apiserver etcd kubectl; do
		[[ -x "${OUT}/${b}${EXE}" ]] || return 1
	done
	[[ -f "${STAMP}" && "$(cat "${STAMP}")" == "$(want_stamp)" ]]
}

build() {
	local jobs="${CONTROL_PLANE_BUILD_JOBS:-}"
	if [[ -z "${jobs}" ]]; then
		jobs="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
		((jobs > 4)) && jobs=4
	fi

	local tmp
	mkdir -p "${ROOT}/bin/k8s"
	tmp="$(mktemp -d "${ROOT}/bin/k8s/.build.XXXXXX")"
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '${tmp}'" EXIT

	# Version information, as the Kubernetes release build stamps it, so that
	# `kubectl version` and the API server's /version report the release
	# rather than v0.0.0 (clients check version skew against it).
	local minor="${KUBE_VERSION#*.}"
	minor="${minor%%.*}"
	local build_date
	build_date="$(cd "${KUBE_MOD}" && go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes)"
	[[ -n "${build_date}" ]] || build_date="1970-01-01T00:00:00Z"
	local kube_ldflags="-s -w" pkg kv key val
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		for kv in "gitVersion=v${KUBE_VERSION}" "gitMajor=${KUBE_VERSION%%.*}" "gitMinor=${minor}" \
			"gitCommit=" "gitTreeState=clean" "buildDate=${build_date}"; do
			key="${kv%%=*}"
			val="${kv#*=}"
			kube_ldflags+=" -X '${pkg}.${key}=${val}'"
		done
	done
	local etcd_ldflags="-s -w -X 'go.etcd.io/etcd/api/v3/version.GitSHA=v${ETCD_VERSION}'"

	# -mod=readonly: build exactly what go.sum pins, whatever GOFLAGS says.
	# -buildvcs=false: these are upstream binaries; the pipeguard checkout's
	# VCS state means nothing to them.
	local common=(-trimpath -mod=readonly -buildvcs=false -p "${jobs}")

	build_start=${SECONDS}
	log "step 1 of 3: downloading the Go modules of Kubernetes v${KUBE_VERSION} and etcd v${ETCD_VERSION} (once; about 300 MB)"
	(cd "${KUBE_MOD}" && go mod download) || die "downloading the modules of hack/tools/kube failed; check access to the Go module proxy ($(go env GOPROXY))"
	(cd "${ETCD_MOD}" && go mod download) || die "downloading the modules of hack/tools/etcd failed; check access to the Go module proxy ($(go env GOPROXY))"
	local kube_pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl) total
	total="$(cd "${KUBE_MOD}" && packages "${kube_pkgs[@]}")"
	log "step 2 of 3: building kube-apiserver and kubectl v${KUBE_VERSION} for ${GOOS}/${GOARCH}: ${total} packages (-p ${jobs}; a cold build takes 10-25 minutes on 2 CPUs)"
	(
		cd "${KUBE_MOD}"
		go build -v "${common[@]}" -ldflags "${kube_ldflags}" -o "${tmp}/" "${kube_pkgs[@]}" 2>&1 |
			progress "kube-apiserver and kubectl" "${total}"
	)
	total="$(cd "${ETCD_MOD}" && packages .)"
	log "step 3 of 3: building etcd v${ETCD_VERSION}: ${total} packages"
	(
		cd "${ETCD_MOD}"
		go build -v "${common[@]}" -ldflags "${etcd_ldflags}" -o "${tmp}/etcd${EXE}" . 2>&1 |
			progress "etcd" "${total}"
	)

	# Check the version stamps when the binaries can run here.
	if [[ "${GOOS}" == "$(go env GOHOSTOS)" && "${GOARCH}" == "$(go env GOHOSTARCH)" ]]; then
		local got
		got="$("${tmp}/kube-apiserver${EXE}" --version)"
		[[ "${got}" == "Kubernetes v${KUBE_VERSION}" ]] || die "kube-apiserver reports '${got}', want 'Kubernetes v${KUBE_VERSION}'"
		got="$("${tmp}/kubectl${EXE}" version --client -o yaml | sed -n 's/^[[:space:]]*gitVersion: //p')"
		[[ "${got}" == "v${KUBE_VERSION}" ]] || die "kubectl reports '${got}', want 'v${KUBE_VERSION}'"
		got="$("${tmp}/etcd${EXE}" --version | sed -n 's/^etcd Version: //p')"
		[[ "${got}" == "${ETCD_VERSION}" ]] || die "etcd reports '${got}', want '${ETCD_VERSION}'"
	fi

	want_stamp >"${tmp}/.stamp"
	chmod 0755 "${tmp}"
	# Publish the finished directory in one rename so that a reader never
	# sees a half-built set of binaries.
	rm -rf "${OUT}"
	mv "${tmp}" "${OUT}"
	trap - EXIT
}

main() {
	case "${1:-}" in
	"") ;;
	sync) sync_modules ;;
	*) die "unknown argument '$1' (usage: hack/control-plane.sh [sync])" ;;
	esac

	check_modules
	if ! have_binaries; then
		mkdir -p "${ROOT}/bin/k8s"
		# Serialize concurrent builds (for example two test runs started at
		# once) when flock(1) is available; the loser finds the binaries.
		if command -v flock >/dev/null 2>&1; then
			exec 9>"${ROOT}/bin/k8s/.lock"
			flock 9
		fi
		if ! have_binaries; then
			local start=${SECONDS}
			build
			log "built in $((SECONDS - start))s"
		fi
	fi
	printf '%s\n' "${OUT}"
}

main "$@"
