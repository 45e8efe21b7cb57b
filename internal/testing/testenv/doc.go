// Package testenv starts a real Kubernetes control plane (kube-apiserver and
// etcd, through controller-runtime's envtest) for integration tests.
//
// The binaries are not downloaded: hack/control-plane.sh builds them from Go
// modules into bin/k8s/<version>-<goos>-<goarch>/ and prints that directory,
// which tests receive through KUBEBUILDER_ASSETS:
//
//	export KUBEBUILDER_ASSETS="$(hack/control-plane.sh)"
//	go test ./...
//
// Without the binaries, [Start] skips the test and says how to build them.
// When CI=true it fails the test instead, so that a misconfigured pipeline
// cannot pass by skipping every integration test.
//
// Each call to [Start] runs its own control plane, stopped by t.Cleanup. It
// takes a few seconds to start, so related tests share one [Env]: start it
// in a parent test and run the cases as subtests.
package testenv
