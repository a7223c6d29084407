package credentials

import (
	"errors"
	"strings"
	"testing"
)

// FuzzSecretAndLookup: any Secret data and any image name give
// credentials or an ErrMalformed error, never a panic; an error never
// quotes a password of the data.
func FuzzSecretAndLookup(f *testing.F) {
	f.Add([]byte(`{"auths":{"r.example.com:5000/team":{"username":"u","password":"p4ss"}}}`), "r.example.com:5000/team/app:1")
	f.Add([]byte(`{"auths":{"*.example.com":{"auth":"dTpwNHNz"}}}`), "a.example.com/x@sha256:00")
	f.Add([]byte(`{"https://index.docker.io/v1/":{"auth":"dTpwNHNz"}}`), "busybox")
	f.Add([]byte(`{"auths":{"[::1]:5000":{"identitytoken":"t"}}}`), "[::1]:5000/app")
	f.Add([]byte(`{"auths":{"r":{"password":"p4ss`), ":")
	f.Fuzz(func(t *testing.T, data []byte, image string) {
		for _, parse := range []func([]byte) (DockerConfig, error){ParseDockerConfigJSON, ParseDockercfg} {
			cfg, err := parse(data)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("error %v does not wrap ErrMalformed", err)
				}
				if strings.Contains(string(data), `"p4ss`) && strings.Contains(err.Error(), "p4ss") {
					t.Fatalf("error %q quotes the password", err)
				}
				continue
			}
			var k Keyring
			k.Add(cfg)
			for _, a := range k.Lookup(image) {
				if a.ServerAddress != "" {
					t.Fatalf("credential with a server address %q", a.ServerAddress)
				}
			}
		}
	})
}
