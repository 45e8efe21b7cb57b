package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pipeguard/pipeguard/api/v1alpha1"
)

// TestWarnings: the words of the warnings about named namespaces and
// ServiceAccounts, for what TestAllowanceWarnings on a control plane does
// not show: several missing namespaces, names no object can have, a
// lookup that fails, and the bound on lookups.
func TestWarnings(t *testing.T) {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi-smb"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "node", Namespace: "csi-smb"}},
	}
	var many []string
	for i := range MaxServiceAccountChecks + 10 {
		many = append(many, fmt.Sprintf("sa-%03d", i))
	}
	for name, tc := range map[string]struct {
		allow   v1alpha1.Allowances
		broken  bool // every ServiceAccount lookup fails
		want    []string
		recheck bool
	}{
		"nothing named": {},
		"every named namespace and ServiceAccount exists": {
			allow: v1alpha1.Allowances{Namespaces: []string{"csi-smb"}, ServiceAccounts: []string{"node"}},
			want:  []string{ServiceAccountCaveat},
		},
		"several missing namespaces, named once each": {
			allow: v1alpha1.Allowances{Namespaces: []string{"b-later", "csi-smb", "a-later", "b-later"}},
			want: []string{`spec.allow.namespaces names namespaces "a-later" and "b-later", which do not exist: whoever creates one of them first gets this allowance there; ` +
				`create them now, or remove them from spec.allow.namespaces`},
		},
		"at most MaxNamed names in a warning": {
			allow: v1alpha1.Allowances{Namespaces: many[:MaxNamed+3]},
			want: []string{`spec.allow.namespaces names namespaces "sa-000", "sa-001", "sa-002", "sa-003", "sa-004", "sa-005", "sa-006", "sa-007", "sa-008", "sa-009", ` +
				`"sa-010", "sa-011", "sa-012", "sa-013", "sa-014", "sa-015", "sa-016", "sa-017", "sa-018", "sa-019" and 3 more, which do not exist: ` +
				`whoever creates one of them first gets this allowance there; create them now, or remove them from spec.allow.namespaces`},
		},
		"names no namespace or ServiceAccount can have are not looked up": {
			allow: v1alpha1.Allowances{Namespaces: []string{"Not_A_Namespace", "csi-smb", "x\u2028y"}, ServiceAccounts: []string{"node", "UPPER", ""}},
			want:  []string{ServiceAccountCaveat},
		},
		"a missing ServiceAccount is looked for again": {
			allow: v1alpha1.Allowances{Namespaces: []string{"csi-smb", "later"}, ServiceAccounts: []string{"node", "controller"}},
			want: []string{
				`spec.allow.namespaces names namespace "later", which does not exist: whoever creates namespace "later" first gets this allowance; create it now, or remove it from spec.allow.namespaces`,
				ServiceAccountCaveat,
				`ServiceAccount "controller" does not exist in namespace "csi-smb": a workload there may name it now, and its pods get this allowance once anyone who may create ServiceAccounts there creates it; create it now, or remove it from spec.allow.serviceAccounts`,
			},
			recheck: true,
		},
		"a lookup that fails says nothing, and is tried again": {
			allow:  v1alpha1.Allowances{Namespaces: []string{"csi-smb"}, ServiceAccounts: []string{"node"}},
			broken: true, want: []string{ServiceAccountCaveat}, recheck: true,
		},
		"at most MaxServiceAccountChecks lookups": {
			allow: v1alpha1.Allowances{Namespaces: []string{"csi-smb"}, ServiceAccounts: many},
			want: []string{ServiceAccountCaveat, fmt.Sprintf(`ServiceAccounts %s and 44 more do not exist in namespace "csi-smb": a workload there may name them now, `+
				`and its pods get this allowance once anyone who may create ServiceAccounts there creates them; create them now, or remove them from spec.allow.serviceAccounts`,
				`"`+strings.Join(many[:MaxNamed], `", "`)+`"`),
				`10 more pairs of a namespace of spec.allow.namespaces and a ServiceAccount of spec.allow.serviceAccounts were not looked up (pipeguard looks up at most 64 per policy), so whether those ServiceAccounts exist is not known`},
			recheck: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			gets := 0
			reader := fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if key.Namespace == "" {
						return c.Get(ctx, key, obj, opts...)
					}
					gets++
					if tc.broken {
						return errors.New("the API server is away")
					}
					return c.Get(ctx, key, obj, opts...)
				}}).Build()
			c := New(Options{Client: reader})
			p := &v1alpha1.PipeAccessPolicy{Spec: v1alpha1.PipeAccessPolicySpec{Allow: tc.allow}}
			got, recheck := c.warnings(context.Background(), p)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") || recheck != tc.recheck {
				t.Errorf("warnings (recheck %v):\n%s\nwant (recheck %v):\n%s", recheck, strings.Join(got, "\n"), tc.recheck, strings.Join(tc.want, "\n"))
			}
			if gets > MaxServiceAccountChecks {
				t.Errorf("%d ServiceAccount lookups, want at most %d", gets, MaxServiceAccountChecks)
			}
		})
	}
}
