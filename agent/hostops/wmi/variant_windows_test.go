//go:build windows

package wmi

import (
	"reflect"
	"strings"
	"testing"

	ole "github.com/go-ole/go-ole"
)

// TestParamEncodingsReadBack: every in-parameter encoding, WMI's and the
// native one, reads back as the value by its CIM type, SAFEARRAYs and
// BSTRs made and freed by the host's oleaut32.
func TestParamEncodingsReadBack(t *testing.T) {
	for _, tc := range []struct {
		value   any
		cimType int32
	}{
		{"a ✓ 'b' \\ \"c\"", cimString},
		{"", cimString},
		{true, cimBoolean},
		{false, cimBoolean},
		{int32(-7), cimSint32},
		{uint8(200), cimUint8},
		{uint16(65535), cimUint16},
		{uint32(0x80000002), cimUint32},
		{int64(-1 << 40), cimSint64},
		{uint64(1<<64 - 1), cimUint64},
		{[]string{"x", "", "ü z"}, cimString | cimFlagArray},
		{[]string{}, cimString | cimFlagArray},
		{nil, cimString},
	} {
		for _, native := range []bool{false, true} {
			v, _, err := paramVariant(tc.value, native)
			if err != nil {
				t.Errorf("%#v: %v", tc.value, err)
				continue
			}
			got, err := value(&v, tc.cimType, 0)
			ole.VariantClear(&v)
			if err != nil {
				t.Errorf("%#v (native %v): %v", tc.value, native, err)
				continue
			}
			if !reflect.DeepEqual(got, tc.value) {
				t.Errorf("%#v (native %v) read back as %#v", tc.value, native, got)
			}
		}
	}
}

// TestValueBounds: a string, or a string array, past MaxValueBytes is an
// error; a value of a type the agent does not read is one too, never
// dropped.
func TestValueBounds(t *testing.T) {
	long := strings.Repeat("x", MaxValueBytes+1)
	for _, tc := range []struct {
		value   any
		cimType int32
		want    string
	}{
		{long, cimString, "longer than"},
		{[]string{long[:MaxValueBytes/2], long[:MaxValueBytes/2+1]}, cimString | cimFlagArray, "longer than"},
		{int32(1), cimReal32, "real32"},
		{[]string{"x"}, cimSint32 | cimFlagArray, "sint32[]"},
		{"x", cimUint32, "uint32"},
	} {
		v, _, err := paramVariant(tc.value, false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = value(&v, tc.cimType, 0)
		ole.VariantClear(&v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s value: err = %v, want one saying %q", cimName(tc.cimType), err, tc.want)
		}
	}
	if ok := strings.HasPrefix(long, "x"); ok {
		v, _, _ := paramVariant(long[:MaxValueBytes], false)
		defer ole.VariantClear(&v)
		if got, err := value(&v, cimString, 0); err != nil || len(got.(string)) != MaxValueBytes {
			t.Errorf("a string of MaxValueBytes: %v", err)
		}
	}
}
