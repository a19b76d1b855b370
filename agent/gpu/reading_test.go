package gpu

import (
	"reflect"
	"testing"
)

// filled is a reading whose every value field is distinct and non-zero.
func filled() Reading {
	var r Reading
	v := reflect.ValueOf(&r).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Float64:
			f.SetFloat(float64(i + 1))
		case reflect.Uint64:
			f.SetUint(uint64(i + 1))
		}
	}
	r.Missing = 0
	return r
}

// TestCopyFieldsCoversEveryValue: copying every field copies every value
// of the struct (a field added to Reading and forgotten in CopyFields
// fails here), and dropping every field zeroes them all.
func TestCopyFieldsCoversEveryValue(t *testing.T) {
	t.Parallel()
	src := filled()
	var dst Reading
	dst.Reset()
	dst.CopyFields(&src, AllFields)
	if dst != src {
		t.Errorf("CopyFields(all):\n got %+v\nwant %+v", dst, src)
	}
	dst.Drop(AllFields)
	if want := (Reading{Missing: AllFields}); dst != want {
		t.Errorf("Drop(all) = %+v", dst)
	}
	// A subset leaves the rest alone.
	dst.Reset()
	dst.CopyFields(&src, FieldSMActivity|FieldLink)
	if dst.SMActivity != src.SMActivity || dst.LinkTxBytesPerSecond != src.LinkTxBytesPerSecond || dst.UtilizationRatio != 0 ||
		dst.Missing != AllFields&^(FieldSMActivity|FieldLink) {
		t.Errorf("CopyFields(sm|link) = %+v", dst)
	}
	src.Drop(FieldPCIe)
	if src.PCIeRxBytesPerSecond != 0 || src.PCIeTxBytesPerSecond != 0 || src.Has(FieldPCIe) || src.SMActivity == 0 {
		t.Errorf("Drop(pcie) = %+v", src)
	}
}
