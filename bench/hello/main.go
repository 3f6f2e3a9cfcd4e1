// Command hello is the start-up bench's floor for a Go process: a static,
// pure-Go hello world (fmt and os, nothing else). `tooljail version` is
// measured against it, so what tooljail's own packages and binary add
// before main shows as a ratio taken in the same run.
package main

import "fmt"

func main() { fmt.Println("hello") }
