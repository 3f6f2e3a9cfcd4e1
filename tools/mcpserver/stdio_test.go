package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/report"
)

func TestCheckLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		code       int    // 0: passed to the SDK
		id         any    // the answer's id
		msg        string // in the answer's message
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 0, nil, ""},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, nil, ""},
		{"response", `{"jsonrpc":"2.0","id":"a","result":{}}`, 0, nil, ""},
		{"not JSON", `garbage`, -32700, nil, "Parse error: not one JSON value on this line (invalid character 'g'"},
		{"cut short", `{"jsonrpc":"2.0","id":1,`, -32700, nil, "Parse error"},
		{"two values", `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, -32700, nil, "Parse error"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600, nil, "a JSON-RPC batch"},
		{"empty batch", `[]`, -32600, nil, "a JSON-RPC batch"},
		{"a string", `"hello"`, -32600, nil, "not a JSON-RPC 2.0 message"},
		{"wrong version", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, json.Number("7"), `invalid message version tag "1.0"`},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600, nil, "invalid ID type"},
		{"no method, no id", `{"jsonrpc":"2.0","result":{}}`, -32600, nil, "not a JSON-RPC 2.0 message"},
		{"string id kept", `{"jsonrpc":"2.0","id":"x","method":5}`, -32600, "x", "not a JSON-RPC 2.0 message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := checkLine([]byte(tc.line))
			if tc.code == 0 {
				if answer != nil {
					t.Fatalf("a valid message answered: %s", answer)
				}
				return
			}
			var r struct {
				JSONRPC string `json:"jsonrpc"`
				ID      any    `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			dec := json.NewDecoder(strings.NewReader(string(answer)))
			dec.UseNumber()
			if err := dec.Decode(&r); err != nil || !strings.HasSuffix(string(answer), "}\n") || strings.Count(string(answer), "\n") != 1 {
				t.Fatalf("answer %q: %v", answer, err)
			}
			if r.JSONRPC != "2.0" || r.Error.Code != tc.code || r.ID != tc.id || !strings.Contains(r.Error.Message, tc.msg) {
				t.Errorf("answer %s; want code %d, id %v, message with %q", answer, tc.code, tc.id, tc.msg)
			}
		})
	}
}

// TestStdioSurvivesBadLines serves the test tools over StdioTransport on
// pipes and writes raw lines, as a host would: each bad line is answered
// with its JSON-RPC error, and the call after it is answered too.
func TestStdioSurvivesBadLines(t *testing.T) {
	c, _ := testCaller(t)
	srv, err := New(c, report.Peer{UID: 1, GID: 2, PID: 3})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), StdioTransport(inR, outW)) }()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("no answer: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("%q: %v", lines.Text(), err)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := next(); m["id"] != 0.0 || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, tc := range []struct {
		line string
		code float64
	}{
		{"garbage", -32700},
		{"", 0}, // blank: skipped, no answer
		{`{"jsonrpc":"2.0","id":1,`, -32700},
		{`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, -32600},
		{`{"jsonrpc":"1.0","id":3,"method":"ping"}`, -32600},
		{"\r", 0},
		{strings.Repeat(" ", 10) + `{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600},
	} {
		send(tc.line)
		if tc.code == 0 {
			continue
		}
		m := next()
		if e, _ := m["error"].(map[string]any); e["code"] != tc.code {
			t.Errorf("%q: answer %v, want code %v", tc.line, m, tc.code)
		}
	}
	send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"show","arguments":{"word":"alive"}}}`)
	m := next()
	res, _ := m["result"].(map[string]any)
	if m["id"] != 9.0 || res == nil || res["isError"] == true {
		t.Fatalf("the call after the bad lines: %v", m)
	}
	if content := res["content"].([]any); content[0].(map[string]any)["text"] != "alive\n" {
		t.Errorf("content %v", content)
	}
	inW.Close()
	if err := <-done; err != nil && err != io.EOF {
		t.Errorf("Run after stdin closed: %v", err)
	}
}

// A line over the limit is read to its end, never held whole, and
// answered; the line after it is read.
func TestStdioLongLine(t *testing.T) {
	in := strings.NewReader(strings.Repeat("x", 300) + "\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	var out strings.Builder
	g := &lineGuard{in: bufio.NewReaderSize(in, 16), closer: io.NopCloser(nil), out: &out, max: 100}
	b, err := io.ReadAll(g)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n" {
		t.Errorf("passed %q", b)
	}
	if !strings.Contains(out.String(), `"code":-32600,"message":"Invalid request: a line of more than 100 bytes`) {
		t.Errorf("answer %q", out.String())
	}
	// The last line may lack its "\n".
	g = &lineGuard{in: bufio.NewReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)), out: &out, max: 100}
	if b, _ := io.ReadAll(g); string(b) != `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n" {
		t.Errorf("the last line without its end: %q", b)
	}
}
