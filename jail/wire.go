package jail

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
)

// The supervisor, the init and stage 2 are the same binary, so the
// messages between them need no self-description: the wire format is the
// fields of a struct in declaration order, walked with reflect. Integers
// are varints, strings and slices carry their length, a pointer a presence
// byte. A field added to a struct is carried without further work.
//
// Not encoding/json: in a process that lives a few milliseconds, its
// first use of each type (tag parsing, field maps) cost more than a
// millisecond per run across the three processes.

var errWireShort = errors.New("message truncated")

// marshalWire encodes the struct that v points to.
func marshalWire(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, fmt.Errorf("wire: marshal needs a non-nil pointer, not %T", v)
	}
	return appendWire(nil, rv.Elem())
}

func appendWire(b []byte, v reflect.Value) ([]byte, error) {
	var err error
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.AppendVarint(b, v.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return binary.AppendUvarint(b, v.Uint()), nil
	case reflect.Float64, reflect.Float32:
		return binary.AppendUvarint(b, math.Float64bits(v.Float())), nil
	case reflect.String:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		return append(b, v.String()...), nil
	case reflect.Slice:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return append(b, v.Bytes()...), nil
		}
		for i := 0; i < v.Len(); i++ {
			if b, err = appendWire(b, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return b, nil
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, 0), nil
		}
		return appendWire(append(b, 1), v.Elem())
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if !t.Field(i).IsExported() {
				return nil, fmt.Errorf("wire: %s.%s is not exported", t, t.Field(i).Name)
			}
			if b, err = appendWire(b, v.Field(i)); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("wire: cannot encode %s", v.Type())
}

// unmarshalWire decodes b into the struct that v points to; b must hold
// exactly one value.
func unmarshalWire(b []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("wire: unmarshal needs a non-nil pointer, not %T", v)
	}
	d := wireDecoder{b: b}
	if err := d.value(rv.Elem()); err != nil {
		return fmt.Errorf("decode %s: %w", rv.Elem().Type(), err)
	}
	if len(d.b) != 0 {
		return fmt.Errorf("decode %s: %d bytes left over", rv.Elem().Type(), len(d.b))
	}
	return nil
}

type wireDecoder struct{ b []byte }

func (d *wireDecoder) uvarint() (uint64, error) {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		return 0, errWireShort
	}
	d.b = d.b[n:]
	return x, nil
}

// length reads a length that the rest of the message can hold (each
// element takes at least one byte), so that a bad message cannot make the
// receiver allocate much.
func (d *wireDecoder) length() (int, error) {
	n, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(d.b)) {
		return 0, errWireShort
	}
	return int(n), nil
}

func (d *wireDecoder) value(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Bool:
		if len(d.b) == 0 {
			return errWireShort
		}
		if d.b[0] > 1 {
			return fmt.Errorf("bad bool %d", d.b[0])
		}
		v.SetBool(d.b[0] == 1)
		d.b = d.b[1:]
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x, n := binary.Varint(d.b)
		if n <= 0 {
			return errWireShort
		}
		d.b = d.b[n:]
		if v.OverflowInt(x) {
			return fmt.Errorf("%d overflows %s", x, v.Type())
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x, err := d.uvarint()
		if err != nil {
			return err
		}
		if v.OverflowUint(x) {
			return fmt.Errorf("%d overflows %s", x, v.Type())
		}
		v.SetUint(x)
	case reflect.Float64, reflect.Float32:
		x, err := d.uvarint()
		if err != nil {
			return err
		}
		v.SetFloat(math.Float64frombits(x))
	case reflect.String:
		n, err := d.length()
		if err != nil {
			return err
		}
		v.SetString(string(d.b[:n]))
		d.b = d.b[n:]
	case reflect.Slice:
		n, err := d.length()
		if err != nil {
			return err
		}
		if n == 0 {
			v.SetZero()
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			s := reflect.MakeSlice(v.Type(), n, n)
			copy(s.Bytes(), d.b[:n])
			v.Set(s)
			d.b = d.b[n:]
			return nil
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			if err := d.value(s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Pointer:
		if len(d.b) == 0 {
			return errWireShort
		}
		present := d.b[0]
		d.b = d.b[1:]
		switch present {
		case 0:
			v.SetZero()
		case 1:
			p := reflect.New(v.Type().Elem())
			if err := d.value(p.Elem()); err != nil {
				return err
			}
			v.Set(p)
		default:
			return fmt.Errorf("bad pointer flag %d", present)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if !v.Type().Field(i).IsExported() {
				return fmt.Errorf("%s.%s is not exported", v.Type(), v.Type().Field(i).Name)
			}
			if err := d.value(v.Field(i)); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("cannot decode %s", v.Type())
	}
	return nil
}
