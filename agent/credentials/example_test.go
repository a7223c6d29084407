package credentials_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/agent/credentials"
)

func ExampleProvider_ImagePullCredentials() {
	client := fake.NewClientset(&v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "regcred"},
		Type:       v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{
			"registry.example.com:5000": {"username": "ci", "password": "not-shown"},
			"https://index.docker.io/v1/": {"username": "hub", "password": "not-shown"}}}`)},
	})
	p := credentials.New(credentials.Options{Secrets: credentials.ClientSecrets{Client: client}})
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:       v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "regcred"}}},
	}
	for _, image := range []string{"registry.example.com:5000/team/app:1.0", "busybox", "quay.io/coreos/etcd"} {
		auths, err := p.ImagePullCredentials(context.Background(), pod, image)
		if err != nil {
			fmt.Println(err)
			return
		}
		var users []string
		for _, a := range auths {
			users = append(users, a.Username)
		}
		fmt.Println(image, users)
	}
	// Output:
	// registry.example.com:5000/team/app:1.0 [ci]
	// busybox [hub]
	// quay.io/coreos/etcd []
}
