package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"

	"github.com/pipeguard/pipeguard/internal/testing/samplepods"
)

// decoders pairs each object type with its decoding, so that every type is
// checked against sigs.k8s.io/json.
var decoders = []struct {
	name string
	read func(raw []byte) (any, error)
	want func() any
}{
	{"Pod", decoder[Pod], func() any { return &Pod{} }},
	{"Deployment", decoder[Workload], func() any { return &Workload{} }},
	{"CronJob", decoder[CronJob], func() any { return &CronJob{} }},
	{"PodTemplate", decoder[PodTemplate], func() any { return &PodTemplate{} }},
	{"PersistentVolume", decoder[PersistentVolume], func() any { return &PersistentVolume{} }},
}

func decoder[T Kind](raw []byte) (any, error) {
	o, err := Object[T](raw)
	if o == nil {
		o = new(T)
	}
	return o, err
}

// checkAgainstJSON decodes raw with the reader and with sigs.k8s.io/json
// as each object type and fails on any difference other than the reader's
// refusal of a repeated field.
func checkAgainstJSON(t *testing.T, raw []byte) {
	t.Helper()
	for _, d := range decoders {
		got, err := d.read(raw)
		want := d.want()
		wantErr := kjson.UnmarshalCaseSensitivePreserveInts(raw, want)
		switch {
		case err == nil && wantErr != nil:
			t.Fatalf("%s: reader accepted %q, which sigs.k8s.io/json refuses: %v", d.name, raw, wantErr)
		case err != nil && wantErr == nil:
			if !hasRepeatedField(raw) {
				t.Fatalf("%s: reader refused %q, which sigs.k8s.io/json accepts: %v", d.name, raw, err)
			}
			if !strings.Contains(err.Error(), "appears more than once") {
				t.Fatalf("%s: reader refused %q with %v, want a repeated field error", d.name, raw, err)
			}
		case err == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("%s: decoding %q\nreader:            %+v\nsigs.k8s.io/json: %+v", d.name, raw, got, want)
		}
	}
}

// hasRepeatedField reports whether some object in raw, valid JSON, names a
// field twice.
func hasRepeatedField(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object bool
		seen   map[string]bool
		key    bool // the next string token is a field name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if s, ok := tok.(string); ok {
				if top.seen[s] {
					return true
				}
				top.seen[s] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, seen: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true // a value ended
		}
	}
}

func objectSeeds(t testing.TB) [][]byte {
	csi := samplepods.CSINode()
	deploy := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: csi.Spec}}}
	deploy.Name = "csi-node"
	cron := &batchv1.CronJob{Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: csi.Spec}}}}}
	tmpl := &corev1.PodTemplate{Template: corev1.PodTemplateSpec{Spec: csi.Spec}}
	pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: `\\.\pipe\csi-proxy-disk-v1`}}}}
	var seeds [][]byte
	for _, o := range []any{csi, samplepods.Plain(), deploy, cron, tmpl, pv} {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, raw)
	}
	for _, depth := range []int{9998, 9999, 10000} {
		seeds = append(seeds, []byte(`{"spec":{"x":`+strings.Repeat("[", depth)+strings.Repeat("]", depth)+`}}`))
	}
	return append(seeds,
		[]byte(`null`), []byte(` {} `), []byte(`[]`), []byte(`"pod"`), []byte(``),
		[]byte(`{"spec":{"volumes":null,"containers":[]}}`),
		[]byte(`{"spec":{"volumes":[{"name":"p","hostPath":{"path":"\\\\.\\pipe\\x\u00e9\t\ud83d\ude00\ud800"}}]}}`),
		[]byte(`{"spec":{"volumes":[{"name":"p","hostPath":{"path":"\\\\.\\pipe\\x","type":""}}],"containers":[{"name":"c","volumeMounts":[{"name":"p","readOnly":true,"subPath":"a/b"}],"securityContext":{"privileged":null,"windowsOptions":{"hostProcess":false}}}]}}`),
		[]byte(`{"spec":{"volumes":[{"name":"a"}],"volumes":[{"name":"b"}]}}`),
		[]byte(`{"spec":{"x":[1,-0.5e+3,true,false,null,{"a":{}},[[]]],"serviceAccountName":"sa"}}`),
		[]byte(`{"metadata":{"na\u006de":"n\u0041me"},"spec":{"Volumes":[{"HostPath":{}}]}}`),
		[]byte(`{"spec":{"volumes":[{"name":"p","hostPath":{"path":7}}]}}`),
		[]byte(`{"spec":{"containers":[{"securityContext":{"privileged":"true"}}]}}`),
		[]byte(`{"spec":{"x":01}}`), []byte(`{"spec":{"x":1.}}`), []byte(`{"spec":{"x":"\x"}}`),
		[]byte("{\"spec\":{\"x\":\"\x01\"}}"), []byte("{\"a\":\"\xff\xfe\"}"),
		[]byte(`{"spec":{}} x`), []byte(`{"spec":{},}`), []byte(`{,"spec":{}}`),
	)
}

// The reader gives the results sigs.k8s.io/json gives, on every seed.
func TestReaderMatchesJSON(t *testing.T) {
	for _, raw := range objectSeeds(t) {
		checkAgainstJSON(t, raw)
	}
}

// FuzzDecodeMatchesJSON: on any input, the reader and sigs.k8s.io/json
// accept the same documents and decode them to the same values, except
// that the reader refuses a repeated field it reads.
func FuzzDecodeMatchesJSON(f *testing.F) {
	for _, raw := range objectSeeds(f) {
		if len(raw) < 4096 {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkAgainstJSON(t, raw)
	})
}

// Errors say where the input went wrong and what was expected there.
func TestReaderErrors(t *testing.T) {
	for raw, want := range map[string]string{
		`{"spec":{"volumes":[{"name":"a"}],"volumes":[]}}`:                   `field "volumes", byte 46: the field appears more than once in its object`,
		`{"spec":{"volumes":[{"name":"p","hostPath":{"path":7}}]}}`:          `field "path", byte 51: want a string, found a number`,
		`{"spec":{"volumes":"hostPath"}}`:                                    `field "volumes", byte 19: want an array, found a string`,
		`{"spec":{"containers":[{"securityContext":{"privileged":"yes"}}]}}`: `field "privileged", byte 56: want a boolean, found a string`,
		`{"spec":{}} trailing`:                                               `byte 12: found character 't' after the object, want the end of the input`,
		`{"spec":{"volumes":[{"name":"a`:                                     `field "name", byte 30: unterminated string`,
		`{"metadata":{"name":"a\qb"}}`:                                       `field "name", byte 23: invalid escape \q in a string`,
		`[]`:                                                                 `byte 0: want an object, found an array`,
	} {
		_, err := Object[Pod]([]byte(raw))
		if err == nil || err.Error() != want {
			t.Errorf("decoding %s: error %v, want %q", raw, err, want)
		}
	}
}
