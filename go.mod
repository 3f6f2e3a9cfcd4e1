module github.com/tooljail/tooljail

go 1.26.8

require (
	github.com/containerd/cgroups/v3 v3.1.3
	github.com/google/jsonschema-go v0.4.3
	github.com/landlock-lsm/go-landlock v0.11.0
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/pelletier/go-toml/v2 v2.4.3
	github.com/seccomp/libseccomp-golang v0.11.1
	golang.org/x/crypto v0.59.0
	golang.org/x/net v0.63.0
	golang.org/x/sync v0.20.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/moby/sys/userns v0.1.0 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.77 // indirect
)
