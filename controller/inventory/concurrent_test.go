package inventory_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pipeguard/pipeguard/controller/inventory"
	"github.com/pipeguard/pipeguard/internal/kinds"
	"github.com/pipeguard/pipeguard/policy"
	"github.com/pipeguard/pipeguard/webhook"
)

// TestEvaluatorIsSafeForConcurrentUse: one Evaluator, shared by many
// goroutines deciding on every reviewed object of the corpus in allowed
// and plain namespaces, in different orders, gives each object the
// decision it gets alone. An evaluator that kept its last decision in a
// field would hand one object's violations to another here (and fail under
// -race).
func TestEvaluatorIsSafeForConcurrentUse(t *testing.T) {
	ctx := context.Background()
	engine, err := policy.NewEngine(ctx, policy.Options{DecisionCacheSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	e := inventory.NewEvaluator(engine, webhook.StaticNamespaces{"allowed": {policy.AllowLabel: "true"}, "plain": {}}, nil)
	decoder := serializer.NewCodecFactory(clientgoscheme.Scheme).UniversalDeserializer()
	type job struct {
		obj  client.Object
		want inventory.Result
	}
	var jobs []job
	verdicts := map[policy.Verdict]int{}
	for _, d := range corpus(t) {
		obj, _, err := decoder.Decode(d.json, nil, nil)
		if err != nil {
			continue
		}
		co, ok := obj.(client.Object)
		if !ok {
			continue
		}
		k, ok := kinds.ForObject(co)
		if !ok {
			continue
		}
		for _, ns := range []string{"allowed", "plain"} {
			o := co.DeepCopyObject().(client.Object)
			if k.Namespaced {
				o.SetNamespace(ns)
			}
			want, err := e.EvaluateObject(ctx, o)
			if err != nil {
				t.Fatalf("%s: %v", d.source, err)
			}
			verdicts[want.Verdict]++
			jobs = append(jobs, job{o, want})
		}
	}
	if verdicts[policy.Deny] == 0 || verdicts[policy.Allow] == 0 {
		t.Fatalf("the corpus gives verdicts %v; it needs denied and allowed objects to show a mix-up", verdicts)
	}
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan string, workers*len(jobs))
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				j := jobs[(i*(w+1)+w)%len(jobs)] // each worker its own order
				got, err := e.EvaluateObject(ctx, j.obj)
				if err != nil {
					errs <- err.Error()
					continue
				}
				if !reflect.DeepEqual(got, j.want) {
					errs <- fmt.Sprintf("%s %s/%s: got %s with %d deny, want %s with %d deny",
						j.want.Kind, j.want.Namespace, j.want.Name, got.Verdict, len(got.Deny), j.want.Verdict, len(j.want.Deny))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for e := range errs {
		if n++; n <= 5 {
			t.Error(e)
		}
	}
	if n > 5 {
		t.Errorf("… and %d more", n-5)
	}
}
