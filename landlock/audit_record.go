package landlock

import (
	"bytes"
	"encoding/hex"
	"strconv"
	"strings"
)

// record is one audit record: "audit(SEC.MS:SERIAL): k=v k="v" ...".
type record struct {
	typ    uint16
	serial uint64
	fields map[string]string
}

// parseRecord parses the text of an audit record. Values in double quotes
// are taken as they are; unquoted values of path-like keys are hex encoded
// by the kernel when they contain spaces, quotes or control characters, and
// are decoded.
func parseRecord(typ uint16, data []byte) (record, bool) {
	r := record{typ: typ}
	data = bytes.TrimRight(data, "\x00\n")
	if !bytes.HasPrefix(data, []byte("audit(")) {
		return r, false
	}
	end := bytes.IndexByte(data, ')')
	if end < 0 {
		return r, false
	}
	stamp := data[len("audit("):end]
	colon := bytes.LastIndexByte(stamp, ':')
	if colon < 0 {
		return r, false
	}
	serial, err := strconv.ParseUint(string(stamp[colon+1:]), 10, 64)
	if err != nil {
		return r, false
	}
	r.serial = serial
	r.fields = parseFields(string(bytes.TrimPrefix(data[end+1:], []byte(":"))))
	return r, true
}

var hexKeys = map[string]bool{"path": true, "exe": true, "comm": true, "ocomm": true, "name": true}

func parseFields(s string) map[string]string {
	m := make(map[string]string, 8)
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return m
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return m
		}
		key := s[:eq]
		s = s[eq+1:]
		var val string
		if strings.HasPrefix(s, "\"") {
			closing := strings.IndexByte(s[1:], '"')
			if closing < 0 {
				val, s = s[1:], ""
			} else {
				val, s = s[1:1+closing], s[2+closing:]
			}
		} else {
			sp := strings.IndexByte(s, ' ')
			if sp < 0 {
				val, s = s, ""
			} else {
				val, s = s[:sp], s[sp:]
			}
			if hexKeys[key] && val != "(null)" && val != "?" {
				if b, err := hex.DecodeString(val); err == nil {
					val = string(b)
				}
			}
		}
		if _, dup := m[key]; !dup {
			m[key] = val
		}
	}
}

func (r record) int(key string) int {
	n, _ := strconv.Atoi(r.fields[key])
	return n
}
