package initc

import (
	"strconv"
	"strings"
	"syscall"
)

// A failure record in words: init_steps.h's phrases filled in with the
// record's values and the words of the plan that failed (package jail's).

// StepText is the text of step, or unknown for a step init_steps.h does
// not have.
func StepText(steps []Phrase, step int, unknown string) string {
	if step > 0 && step < len(steps) {
		return steps[step].Text
	}
	return unknown
}

// Describe fills text in for record r: with the record's own values, then
// with words, the plan's.
func Describe(r Record, text string, words func(r Record, name string) (string, bool)) error {
	errno := syscall.Errno(r.Err)
	value := func(name string) (string, bool) {
		switch name {
		case "path":
			return r.Path, true
		case "index":
			return strconv.Itoa(r.Index), true
		case "step":
			return strconv.Itoa(r.Step), true
		case "is_dir":
			return Choice(r.IsDir), true
		case "errno":
			return errnoText(errno), true
		case "cause":
			if ops := InitOps(); r.Op > 0 && r.Op < len(ops) && !ops[r.Op].Reason {
				return ops[r.Op].Text + ": " + errnoText(errno), true
			}
			return errnoText(errno), true
		}
		return words(r, name)
	}
	return &recordError{text: fill(text, value), errno: errno}
}

// errnoText is the errno as the error says it; 0 is a read that found the
// other end gone.
func errnoText(errno syscall.Errno) string {
	if errno == 0 {
		return "end of file"
	}
	return errno.Error()
}

// Choice is a condition as the number of a {name:a|b} choice: 0 or 1.
func Choice(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

// recordError is a failure record in words; it wraps the record's errno.
type recordError struct {
	text  string
	errno syscall.Errno
}

func (e *recordError) Error() string { return e.text }

func (e *recordError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}

// fill expands the placeholders of a text of init_steps.h: {name} is
// value(name), and {name:a|b|...} the choice that value(name) picks (0:
// a), itself a text. A placeholder value does not know stays as it is.
func fill(text string, value func(name string) (string, bool)) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(text, '{')
		end := closing(text, open)
		if open < 0 || end < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:open])
		name, alts, choice := strings.Cut(text[open+1:end], ":")
		v, ok := value(name)
		switch {
		case !ok:
			v = text[open : end+1]
		case choice:
			cs := choices(alts)
			if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < len(cs) {
				v = fill(cs[n], value)
			} else {
				v = "?"
			}
		}
		b.WriteString(v)
		text = text[end+1:]
	}
}

// closing is the index of the brace that closes the one at open, or -1.
func closing(s string, open int) int {
	if open < 0 {
		return -1
	}
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// choices splits "a|b{x}|c" at the bars outside braces.
func choices(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
		case '|':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
