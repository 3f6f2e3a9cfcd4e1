//go:build tooljail_testhooks

package jail

import (
	"fmt"
	"os"
)

// The test build of the binary (make bin/tooljail-testhooks, build tag
// tooljail_testhooks) resolves the allow mode's names from
// TOOLJAIL_TEST_HOSTS ("NAME=ADDR[,ADDR...];..."), and only from it, so
// that the integration suite can give made-up names private, metadata
// and IPv6 addresses. The shipped binary has neither this file nor the
// variable's name (TestShippedBinaryHasNoTestHooks).
func init() {
	v, ok := os.LookupEnv("TOOLJAIL_TEST_HOSTS")
	if !ok {
		return
	}
	h, err := parseHosts(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tooljail (test build): TOOLJAIL_TEST_HOSTS: %v\n", err)
		os.Exit(125)
	}
	upstreamLookup = h
}
