package credentials

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestFromSecret(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secret  v1.Secret
		want    DockerConfig
		ok      bool
		wantErr string // substring; "" means no error
	}{
		{
			name: "dockerconfigjson with username and password",
			secret: v1.Secret{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{
				v1.DockerConfigJsonKey: []byte(`{"auths":{"r.example.com":{"username":"u","password":"p","email":"e@x"}}}`)}},
			want: DockerConfig{"r.example.com": {Username: "u", Password: "p"}},
			ok:   true,
		},
		{
			name: "dockerconfigjson with auth, which wins",
			secret: v1.Secret{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{
				v1.DockerConfigJsonKey: []byte(`{"auths":{"r.example.com":{"username":"x","password":"y","auth":"` + b64("u:p:with:colons") + `"}}}`)}},
			want: DockerConfig{"r.example.com": {Username: "u", Password: "p:with:colons"}},
			ok:   true,
		},
		{
			name: "dockerconfigjson with an identity token",
			secret: v1.Secret{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{
				v1.DockerConfigJsonKey: []byte(`{"auths":{"r.example.com":{"identitytoken":"tok"}}}`)}},
			want: DockerConfig{"r.example.com": {IdentityToken: "tok"}},
			ok:   true,
		},
		{
			name: "dockercfg",
			secret: v1.Secret{Type: v1.SecretTypeDockercfg, Data: map[string][]byte{
				v1.DockerConfigKey: []byte(`{"https://index.docker.io/v1/":{"auth":"` + b64("u:p") + `"}}`)}},
			want: DockerConfig{"https://index.docker.io/v1/": {Username: "u", Password: "p"}},
			ok:   true,
		},
		{
			name: "dockerconfigjson without auths",
			secret: v1.Secret{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{
				v1.DockerConfigJsonKey: []byte(`{}`)}},
			want: DockerConfig{},
			ok:   true,
		},
		{
			name:   "opaque secret ignored",
			secret: v1.Secret{Type: v1.SecretTypeOpaque, Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{`)}},
		},
		{
			name:   "dockerconfigjson under the dockercfg key ignored",
			secret: v1.Secret{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{v1.DockerConfigKey: []byte(`{}`)}},
		},
		{
			name:   "empty data ignored",
			secret: v1.Secret{Type: v1.SecretTypeDockercfg, Data: map[string][]byte{v1.DockerConfigKey: nil}},
		},
		{
			name: "not JSON",
			secret: v1.Secret{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{
				v1.DockerConfigJsonKey: []byte(`{"auths":{"r":{"password":"s3cr3t}}}`)}},
			ok: true, wantErr: "not valid JSON",
		},
		{
			name: "auths of the wrong type",
			secret: v1.Secret{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{
				v1.DockerConfigJsonKey: []byte(`{"auths":["s3cr3t"]}`)}},
			ok: true, wantErr: "auths is a JSON array",
		},
		{
			name: "auth not base64",
			secret: v1.Secret{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{
				v1.DockerConfigJsonKey: []byte(`{"auths":{"r.example.com":{"auth":"s3cr3t!"}}}`)}},
			ok: true, wantErr: `entry "r.example.com": auth is not base64`,
		},
		{
			name: "auth without a colon",
			secret: v1.Secret{Type: v1.SecretTypeDockercfg, Data: map[string][]byte{
				v1.DockerConfigKey: []byte(`{"r.example.com":{"auth":"` + b64("s3cr3t") + `"}}`)}},
			ok: true, wantErr: "auth is not base64 of user:password",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := FromSecret(&tc.secret)
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v", ok, tc.ok)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrMalformed) {
					t.Fatalf("error = %v, want one wrapping ErrMalformed with %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("error %q shows secret data", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEntryDoesNotPrintSecrets(t *testing.T) {
	e := Entry{Username: "u", Password: "s3cr3t", IdentityToken: "t0ken"}
	for _, s := range []string{fmt.Sprint(e), fmt.Sprintf("%v %+v %#v %s", e, e, e, e), fmt.Sprint(DockerConfig{"r": e})} {
		if strings.Contains(s, "s3cr3t") || strings.Contains(s, "t0ken") {
			t.Errorf("printed %q", s)
		}
	}
}
