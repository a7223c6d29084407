package envvars_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/agent/envvars"
)

func ExampleResolver_Env() {
	client := fake.NewClientset(&v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Data:       map[string]string{"greeting": "hello"},
	})
	r := envvars.New(envvars.Options{Reader: envvars.ClientReader{Client: client}})
	links := false
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1.PodSpec{EnableServiceLinks: &links, Containers: []v1.Container{{
			Name:    "c",
			Command: []string{"echo", "$(MESSAGE)"},
			Env: []v1.EnvVar{
				{Name: "GREETING", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
					LocalObjectReference: v1.LocalObjectReference{Name: "app"}, Key: "greeting"}}},
				{Name: "MESSAGE", Value: "$(GREETING), $(POD) $$(POD)"},
				{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			},
		}}},
	}
	c := &pod.Spec.Containers[0]
	env, err := r.Env(context.Background(), pod, c, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range env {
		fmt.Printf("%s=%s\n", e.Name, e.Value)
	}
	cmd, _ := envvars.CommandAndArgs(c, env)
	fmt.Println(cmd)
	// Output:
	// GREETING=hello
	// MESSAGE=hello, $(POD) $(POD)
	// POD=web
	// [echo hello, $(POD) $(POD)]
}
