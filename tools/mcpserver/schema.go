// Package mcpserver serves the tools of a tool file to agents over MCP
// (the Model Context Protocol), with the official Go SDK: one MCP tool per
// declared tool, its input schema generated from the tool's parameters,
// and every call made by package tools/call, which checks, limits, jails
// and records it. The model chooses a tool and its arguments; the profile,
// the limits and the program are the file's, and nothing in a call can
// change them.
package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tooljail/tooljail/tools"
)

// StdinArg is the argument that carries a call's stdin, for a tool with
// stdin = true (the tool file reserves the name).
const StdinArg = "stdin"

// Schema is t's input schema: an object with one property per parameter
// (its type, allowlist and description), the required ones required, no
// other property. It tells the model what a call may hold; the checks of
// tools.Tool.Check decide, and refuse what breaks a rule whatever the
// schema said (a JSON Schema pattern is ECMA-262, the file's is RE2: the
// schema has it anchored, as Check applies it).
func Schema(t *tools.Tool) *jsonschema.Schema {
	s := &jsonschema.Schema{
		Type:                 "object",
		Properties:           map[string]*jsonschema.Schema{},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
	if t.Generic {
		one, most := 1, t.MaxArgs
		s.Properties[tools.ArgvArg] = &jsonschema.Schema{
			Type: "array", MinItems: &one, MaxItems: &most, Items: &jsonschema.Schema{Type: "string"},
			Description: "The program and its arguments, each element one argument as it is: no shell, no splitting, no globbing.",
		}
		s.Properties[tools.TimeoutArg] = &jsonschema.Schema{Type: "string", Description: `A shorter timeout for this call, as a duration ("5s", "2m"); one above the server's limit is refused.`}
		s.PropertyOrder = []string{tools.ArgvArg, tools.TimeoutArg}
		s.Required = []string{tools.ArgvArg}
	}
	for _, p := range t.Params {
		s.Properties[p.Name] = paramSchema(p)
		s.PropertyOrder = append(s.PropertyOrder, p.Name)
		if p.Required {
			s.Required = append(s.Required, p.Name)
		}
	}
	if t.Stdin {
		s.Properties[StdinArg] = &jsonschema.Schema{Type: "string", Description: "Text passed to the command on its standard input."}
		s.PropertyOrder = append(s.PropertyOrder, StdinArg)
	}
	return s
}

func paramSchema(p *tools.Param) *jsonschema.Schema {
	s := &jsonschema.Schema{Description: p.Description}
	switch p.Type {
	case tools.Integer:
		s.Type = "integer"
	case tools.Number:
		s.Type = "number"
	case tools.Boolean:
		s.Type = "boolean"
	default:
		s.Type = "string"
	}
	s.Minimum, s.Maximum = p.Min, p.Max
	if p.MaxLength > 0 {
		n := p.MaxLength
		s.MaxLength = &n
	}
	if p.Pattern != "" {
		s.Pattern = "^(?:" + p.Pattern + ")$"
	}
	for _, v := range p.Values {
		s.Enum = append(s.Enum, v)
	}
	if p.Type == tools.Path {
		dirs := make([]string, len(p.Beneath))
		for i, d := range p.Beneath {
			if d == "." {
				d = "the working directory"
			}
			dirs[i] = d
		}
		note := fmt.Sprintf("A path beneath %s (a relative path is taken from the working directory); symlinks out of it are refused.", strings.Join(dirs, " or "))
		if s.Description == "" {
			s.Description = note
		} else {
			s.Description += " " + note
		}
	}
	if p.Default != nil {
		if b, err := json.Marshal(p.Default); err == nil {
			s.Default = b
		}
	}
	return s
}
