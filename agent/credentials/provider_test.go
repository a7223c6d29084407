package credentials_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/podlife/podlife/agent/credentials"
	"github.com/podlife/podlife/runtime"
)

const image = "registry.example.com:5000/team/app:1.0"

func dockerConfigJSON(name, data string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(data)},
	}
}

func authJSON(loc, user, pw string) string {
	return `{"auths":{"` + loc + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(user+":"+pw)) + `"}}}`
}

func podWith(secrets ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"}}
	for _, s := range secrets {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
	}
	return p
}

// events drains the fake recorder.
func events(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// gets counts the Secret GETs of the fake clientset.
func gets(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		if g, ok := a.(k8stesting.GetAction); ok && a.GetResource().Resource == "secrets" {
			out = append(out, g.GetNamespace()+"/"+g.GetName())
		}
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func TestProviderPicksMatchingSecretsInOrder(t *testing.T) {
	client := fake.NewClientset(
		dockerConfigJSON("other", authJSON("other.example.com", "o", "po")),
		dockerConfigJSON("first", authJSON("registry.example.com:5000", "u1", "p1")),
		&v1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "legacy"},
			Type:       v1.SecretTypeDockercfg,
			Data:       map[string][]byte{v1.DockerConfigKey: []byte(`{"https://registry.example.com:5000/team":{"username":"u2","password":"p2"}}`)},
		},
		dockerConfigJSON("second", authJSON("registry.example.com:5000", "u3", "p3")),
	)
	rec := record.NewFakeRecorder(10)
	p := credentials.New(credentials.Options{Secrets: credentials.ClientSecrets{Client: client}, Recorder: rec})
	got, err := p.ImagePullCredentials(context.Background(), podWith("other", "first", "legacy", "", "second"), image)
	if err != nil {
		t.Fatal(err)
	}
	want := []runtime.ImageAuth{
		{Username: "u2", Password: "p2"}, // registry.example.com:5000/team: longer key first
		{Username: "u1", Password: "p1"},
		{Username: "u3", Password: "p3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
	if e := events(rec); len(e) != 0 {
		t.Errorf("events %q, want none", e)
	}
	// One GET per named Secret (the empty name skipped), no list or watch.
	if diff := cmp.Diff([]string{"ns/other", "ns/first", "ns/legacy", "ns/second"}, gets(client)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestProviderMissingSecret(t *testing.T) {
	client := fake.NewClientset(dockerConfigJSON("good", authJSON("registry.example.com:5000", "u", "p")))
	rec := record.NewFakeRecorder(10)
	p := credentials.New(credentials.Options{Secrets: credentials.ClientSecrets{Client: client}, Recorder: rec})
	got, err := p.ImagePullCredentials(context.Background(), podWith("gone", "good", "also-gone"), image)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]runtime.ImageAuth{{Username: "u", Password: "p"}}, got); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
	want := []string{"Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (gone, also-gone); attempting to pull the image may not succeed."}
	if diff := cmp.Diff(want, events(rec)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// Only missing Secrets: an anonymous pull.
	got, err = p.ImagePullCredentials(context.Background(), podWith("gone"), image)
	if err != nil || len(got) != 0 {
		t.Errorf("got %v, %v; want no credentials and no error", got, err)
	}
}

func TestProviderMalformedSecret(t *testing.T) {
	client := fake.NewClientset(
		dockerConfigJSON("broken", `{"auths":{"registry.example.com:5000":{"password":"s3cr3t"`),
		dockerConfigJSON("bad-auth", `{"auths":{"registry.example.com:5000":{"auth":"s3cr3t!"}}}`),
		dockerConfigJSON("good", authJSON("registry.example.com:5000", "u", "p")),
	)
	rec := record.NewFakeRecorder(10)
	p := credentials.New(credentials.Options{Secrets: credentials.ClientSecrets{Client: client}, Recorder: rec})
	got, err := p.ImagePullCredentials(context.Background(), podWith("broken", "bad-auth", "good"), image)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]runtime.ImageAuth{{Username: "u", Password: "p"}}, got); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
	ev := events(rec)
	want := []string{
		`Warning InvalidImagePullSecret Image pull secret "broken" is malformed (malformed docker config: not valid JSON (error at byte 58)); attempting to pull the image without it.`,
		`Warning InvalidImagePullSecret Image pull secret "bad-auth" is malformed (malformed docker config: entry "registry.example.com:5000": auth is not base64); attempting to pull the image without it.`,
	}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, e := range ev {
		if strings.Contains(e, "s3cr3t") {
			t.Errorf("event %q shows secret data", e)
		}
	}
}

func TestProviderIgnoresOtherSecretTypes(t *testing.T) {
	client := fake.NewClientset(&v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "opaque"},
		Type:       v1.SecretTypeOpaque,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(authJSON("registry.example.com:5000", "u", "p"))},
	})
	rec := record.NewFakeRecorder(10)
	p := credentials.New(credentials.Options{Secrets: credentials.ClientSecrets{Client: client}, Recorder: rec})
	got, err := p.ImagePullCredentials(context.Background(), podWith("opaque"), image)
	if err != nil || len(got) != 0 {
		t.Errorf("got %v, %v; want no credentials and no error", got, err)
	}
	if e := events(rec); len(e) != 0 {
		t.Errorf("events %q, want none (the kubelet ignores such a Secret)", e)
	}
}

// forbidden is a SecretReader refusing everything, as the Node authorizer
// does for a Secret no pod of the node names.
type forbidden struct{}

func (forbidden) Secret(_ context.Context, ns, name string) (*v1.Secret, error) {
	return nil, apierrors.NewForbidden(v1.Resource("secrets"), name, errors.New("no relationship found"))
}

func TestProviderForbiddenSecret(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	p := credentials.New(credentials.Options{Secrets: forbidden{}, Recorder: rec})
	got, err := p.ImagePullCredentials(context.Background(), podWith("s"), image)
	if err != nil || len(got) != 0 {
		t.Errorf("got %v, %v; want no credentials and no error", got, err)
	}
	if diff := cmp.Diff([]string{"Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (s); attempting to pull the image may not succeed."}, events(rec)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestProviderContextDone(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, context.Canceled
	})
	rec := record.NewFakeRecorder(10)
	p := credentials.New(credentials.Options{Secrets: credentials.ClientSecrets{Client: client}, Recorder: rec})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.ImagePullCredentials(ctx, podWith("s"), image); !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	if e := events(rec); len(e) != 0 {
		t.Errorf("events %q, want none", e)
	}
}

func TestProviderWithoutAPIServer(t *testing.T) {
	p := credentials.New(credentials.Options{})
	got, err := p.ImagePullCredentials(context.Background(), podWith("s"), image)
	if err != nil || len(got) != 0 {
		t.Errorf("got %v, %v; want no credentials and no error", got, err)
	}
}
