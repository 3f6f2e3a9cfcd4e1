package report

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// ReportJSON is a Result's JSON report with the captured output cut out:
// the texts and their base64 are written into it as it is written
// (Stream's WriteTextJSON and WriteBase64JSON), so that their encoded
// form, up to six times the output, is never in memory whole. What it
// writes is byte for byte json.Marshal (or json.MarshalIndent) of the
// Result and a newline.
type ReportJSON struct {
	parts [][]byte                // the JSON around the outputs
	fills []func(io.Writer) error // fills[i] is written after parts[i]
}

// EncodeReport encodes r, indented by indent as json.MarshalIndent does
// ("" for json.Marshal's compact form), with a placeholder for each
// captured text and base64, and cuts the report at them. A placeholder
// has a random name drawn after the command ended, so that nothing else
// in the report can be taken for it.
func EncodeReport(r *Result, indent string) (*ReportJSON, error) {
	rr := *r
	nonce := rand.Text()
	var rep ReportJSON
	var marks [][]byte
	for i, s := range []*Stream{&rr.Stdout, &rr.Stderr} {
		orig := *s
		if s.Text != nil && s.Base64 == nil {
			mark := fmt.Sprintf("tooljail-text-%d-%s", i, nonce)
			s.Text = &mark
			marks = append(marks, []byte(`"`+mark+`"`))
			rep.fills = append(rep.fills, orig.WriteTextJSON)
		}
		if s.Base64 != nil {
			// encoding/json writes a []byte as its base64: the mark's.
			mark := []byte(fmt.Sprintf("tooljail-base64-%d-%s", i, nonce))
			s.Base64 = mark
			marks = append(marks, []byte(`"`+base64.StdEncoding.EncodeToString(mark)+`"`))
			rep.fills = append(rep.fills, orig.WriteBase64JSON)
		}
	}
	var b []byte
	var err error
	if indent == "" {
		b, err = json.Marshal(&rr)
	} else {
		b, err = json.MarshalIndent(&rr, "", indent)
	}
	if err != nil {
		return nil, err
	}
	for _, m := range marks {
		if bytes.Count(b, m) != 1 {
			return nil, fmt.Errorf("placeholder %s is not in the report once", m)
		}
	}
	// The marks are in the order of the fields: stdout's text and base64,
	// then stderr's.
	for _, m := range marks {
		before, after, _ := bytes.Cut(b, m)
		rep.parts = append(rep.parts, before)
		b = after
	}
	rep.parts = append(rep.parts, append(b, '\n'))
	return &rep, nil
}

// reportWriters are WriteTo's buffers, reused: a server writes a report
// per call, and a fresh buffer each time was much of what a session call
// allocated (BENCHMARKS.md, issue 31).
var reportWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// WriteTo writes the report to w through a 64 KiB buffer: a report
// without long outputs goes out in one write.
func (rep *ReportJSON) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	bw := reportWriters.Get().(*bufio.Writer)
	bw.Reset(cw)
	defer func() {
		bw.Reset(nil)
		reportWriters.Put(bw)
	}()
	for i, p := range rep.parts {
		if _, err := bw.Write(p); err != nil {
			return cw.n, err
		}
		if i < len(rep.fills) {
			if err := rep.fills[i](bw); err != nil {
				return cw.n, err
			}
		}
	}
	err := bw.Flush()
	return cw.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
