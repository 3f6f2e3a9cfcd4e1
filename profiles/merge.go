package profiles

import "reflect"

// merge lays child over p: set scalars override, lists append (dropping
// entries p already has, so a child may repeat its parent), map entries
// override key by key.
func (p *Profile) merge(child *Profile) {
	mergeValue(reflect.ValueOf(p).Elem(), reflect.ValueOf(child).Elem())
}

func mergeValue(dst, src reflect.Value) {
	t := dst.Type()
	for i := 0; i < t.NumField(); i++ {
		if tag := t.Field(i).Tag.Get("toml"); tag == "" || tag == "-" {
			continue
		}
		d, s := dst.Field(i), src.Field(i)
		switch d.Kind() {
		case reflect.Pointer:
			if !s.IsNil() {
				v := reflect.New(s.Elem().Type())
				v.Elem().Set(s.Elem())
				d.Set(v)
			}
		case reflect.Slice:
			d.Set(appendNew(d, s))
		case reflect.Map:
			if s.Len() == 0 {
				continue
			}
			if d.IsNil() {
				d.Set(reflect.MakeMap(d.Type()))
			}
			iter := s.MapRange()
			for iter.Next() {
				d.SetMapIndex(iter.Key(), iter.Value())
			}
		case reflect.Struct:
			mergeValue(d, s)
		}
	}
}

// appendNew returns a fresh slice with the elements of a, then those of b
// not seen before.
func appendNew(a, b reflect.Value) reflect.Value {
	if a.Len() == 0 && b.Len() == 0 {
		return a
	}
	out := reflect.MakeSlice(a.Type(), 0, a.Len()+b.Len())
	seen := map[any]bool{}
	for _, s := range []reflect.Value{a, b} {
		for i := 0; i < s.Len(); i++ {
			e := s.Index(i)
			if seen[e.Interface()] {
				continue
			}
			seen[e.Interface()] = true
			out = reflect.Append(out, e)
		}
	}
	return out
}
