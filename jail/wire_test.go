package jail

import (
	"reflect"
	"strings"
	"testing"
)

// fill sets every field reachable from v to a non-zero value derived from
// seed, so a round trip proves that no field is lost, whatever fields the
// structs gain later.
func fill(t *testing.T, v reflect.Value, seed int) {
	t.Helper()
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-int64(seed%100) - 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(uint64(seed%200) + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(seed) + 0.5)
	case reflect.String:
		v.SetString(strings.Repeat("x", seed%7+1) + "/é")
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 3, 3)
		for i := 0; i < 3; i++ {
			fill(t, s.Index(i), seed*3+i)
		}
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), seed+1)
		v.Set(p)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(t, v.Field(i), seed+i+1)
		}
	default:
		t.Fatalf("fill: %s has a kind the wire format does not carry", v.Type())
	}
}

func TestWireRoundTrip(t *testing.T) {
	for _, v := range []any{&initConfig{}, &stage2Config{}, &message{}} {
		fill(t, reflect.ValueOf(v).Elem(), 1)
		b, err := marshalWire(v)
		if err != nil {
			t.Fatalf("marshal %T: %v", v, err)
		}
		got := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := unmarshalWire(b, got); err != nil {
			t.Fatalf("unmarshal %T: %v", v, err)
		}
		if !reflect.DeepEqual(v, got) {
			t.Errorf("%T changed in a round trip:\n sent %+v\n got  %+v", v, v, got)
		}
		// Every proper prefix is refused, never half-decoded.
		for n := 0; n < len(b); n++ {
			if err := unmarshalWire(b[:n], reflect.New(reflect.TypeOf(v).Elem()).Interface()); err == nil {
				t.Fatalf("%T: a message cut to %d of %d bytes was accepted", v, n, len(b))
			}
		}
		if err := unmarshalWire(append(b, 0), got); err == nil {
			t.Errorf("%T: trailing bytes were accepted", v)
		}
	}
}

func TestWireZeroValues(t *testing.T) {
	in := &message{Type: msgExit}
	b, err := marshalWire(in)
	if err != nil {
		t.Fatal(err)
	}
	var out message
	if err := unmarshalWire(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, &out) {
		t.Errorf("got %+v, want %+v", out, *in)
	}
}

func TestWireRefusesBadInput(t *testing.T) {
	var m message
	for name, b := range map[string][]byte{
		// A string length far beyond the message: no allocation, an error.
		"huge length": {0xff, 0xff, 0xff, 0xff, 0x0f},
		"empty":       {},
	} {
		if err := unmarshalWire(b, &m); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A bool or a presence byte other than 0 or 1.
	good, err := marshalWire(&message{Type: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 2; i < len(good); i++ { // after "x"
		bad := append([]byte(nil), good...)
		bad[i] = 7
		var out message
		if unmarshalWire(bad, &out) == nil && reflect.DeepEqual(out, message{Type: "x"}) {
			t.Errorf("byte %d set to 7 decoded to the original message", i)
		}
	}
	type unexported struct{ a int }
	if _, err := marshalWire(&unexported{}); err == nil {
		t.Error("a struct with an unexported field was encoded")
	}
	type withMap struct{ M map[string]int }
	if _, err := marshalWire(&withMap{}); err == nil {
		t.Error("a map was encoded")
	}
}
