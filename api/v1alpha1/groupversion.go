package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of PipeAccessPolicy.
var GroupVersion = schema.GroupVersion{Group: "pipeguard.io", Version: "v1alpha1"}

// AddToScheme registers the types of this package with a scheme. It is a
// function rather than a SchemeBuilder so that nothing is registered as a
// side effect of importing the package.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &PipeAccessPolicy{}, &PipeAccessPolicyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
