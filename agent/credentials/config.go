package credentials

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// DockerConfig is a set of registry credentials by location, as in a
// .dockercfg file or the "auths" of a .docker/config.json.
type DockerConfig map[string]Entry

// Entry is one registry's credentials. It never prints its secrets.
type Entry struct {
	Username      string
	Password      string
	IdentityToken string
}

// String shows the user name only.
func (e Entry) String() string {
	return fmt.Sprintf("{Username:%q Password:<redacted> IdentityToken:<redacted>}", e.Username)
}

// GoString shows the user name only.
func (e Entry) GoString() string { return e.String() }

// ErrMalformed is the error of Secret data that does not parse; the
// errors of Parse wrap it. Their messages name no credential.
var ErrMalformed = errors.New("malformed docker config")

// rawEntry is an entry as written in JSON.
type rawEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	Email         string `json:"email,omitempty"`
}

func (r rawEntry) entry(loc string) (Entry, error) {
	e := Entry{Username: r.Username, Password: r.Password, IdentityToken: r.IdentityToken}
	if r.Auth == "" {
		return e, nil
	}
	// "auth" wins over username and password, as in the kubelet.
	b, err := base64.StdEncoding.DecodeString(r.Auth)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: entry %q: auth is not base64", ErrMalformed, loc)
	}
	user, pass, ok := strings.Cut(string(b), ":")
	if !ok {
		return Entry{}, fmt.Errorf("%w: entry %q: auth is not base64 of user:password", ErrMalformed, loc)
	}
	e.Username, e.Password = user, pass
	return e, nil
}

// ParseDockerConfigJSON parses the data of a .dockerconfigjson key:
// {"auths": {"location": {entry}, ...}}.
func ParseDockerConfigJSON(data []byte) (DockerConfig, error) {
	var doc struct {
		Auths map[string]rawEntry `json:"auths"`
	}
	if err := unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return entries(doc.Auths)
}

// ParseDockercfg parses the data of a .dockercfg key: {"location":
// {entry}, ...}.
func ParseDockercfg(data []byte) (DockerConfig, error) {
	var doc map[string]rawEntry
	if err := unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return entries(doc)
}

func entries(raw map[string]rawEntry) (DockerConfig, error) {
	out := make(DockerConfig, len(raw))
	for loc, r := range raw {
		e, err := r.entry(loc)
		if err != nil {
			return nil, err
		}
		out[loc] = e
	}
	return out, nil
}

// unmarshal decodes JSON with an error that quotes none of data (a
// json.SyntaxError's message may show a character of a password).
func unmarshal(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%w: not valid JSON (error at byte %d)", ErrMalformed, syn.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the document"
		}
		return fmt.Errorf("%w: %s is a JSON %s, not a %s", ErrMalformed, field, typ.Value, typ.Type)
	default:
		return fmt.Errorf("%w: not valid JSON", ErrMalformed)
	}
}

// FromSecret returns the registry credentials of a pull secret: those of
// .dockerconfigjson in a kubernetes.io/dockerconfigjson Secret, of
// .dockercfg in a kubernetes.io/dockercfg Secret. ok is false when the
// Secret is of another type or lacks its key (or it is empty): the
// kubelet ignores it. An error wraps ErrMalformed.
func FromSecret(s *v1.Secret) (cfg DockerConfig, ok bool, err error) {
	switch s.Type {
	case v1.SecretTypeDockerConfigJson:
		data := s.Data[v1.DockerConfigJsonKey]
		if len(data) == 0 {
			return nil, false, nil
		}
		cfg, err = ParseDockerConfigJSON(data)
	case v1.SecretTypeDockercfg:
		data := s.Data[v1.DockerConfigKey]
		if len(data) == 0 {
			return nil, false, nil
		}
		cfg, err = ParseDockercfg(data)
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return cfg, true, nil
}
