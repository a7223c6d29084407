package fleet_test

import (
	"context"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/agent/fleet"
)

const waitTimeout = 30 * time.Second

// eventually polls cond every 10 ms until it holds, failing the test after
// waitTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testFleet is a fleet whose nodes each have a fake clientset of their own.
type testFleet struct {
	*fleet.Fleet
	mu      sync.Mutex
	clients map[string]*fake.Clientset
	events  *record.FakeRecorder
	cancel  context.CancelFunc
	done    chan error
}

func newFleet(t *testing.T, nodes int, mutate ...func(*fleet.Options)) *testFleet {
	t.Helper()
	tf := &testFleet{clients: map[string]*fake.Clientset{}, events: record.NewFakeRecorder(1000)}
	opts := fleet.Options{
		Nodes: nodes,
		Client: func(name string) (kubernetes.Interface, error) {
			tf.mu.Lock()
			defer tf.mu.Unlock()
			if tf.clients[name] == nil { // a restarted node keeps its API
				tf.clients[name] = fake.NewClientset()
			}
			return tf.clients[name], nil
		},
		Root:   t.TempDir(),
		Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 1}),
		Agent: func(_ string, o *agent.Options) {
			o.Recorder = tf.events
			o.HousekeepingInterval = 100 * time.Millisecond
			o.RelistInterval = 100 * time.Millisecond
		},
	}
	for _, m := range mutate {
		m(&opts)
	}
	f, err := fleet.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	tf.Fleet = f
	return tf
}

// run runs the fleet until stop (or the test's end).
func (tf *testFleet) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tf.cancel, tf.done = cancel, make(chan error, 1)
	go func() { tf.done <- tf.Run(ctx) }()
	t.Cleanup(func() { tf.stop(t) })
	for _, name := range tf.Names() {
		eventually(t, "node "+name+" registered", func() bool {
			c := tf.client(name)
			if c == nil {
				return false
			}
			_, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			return err == nil
		})
	}
}

func (tf *testFleet) stop(t *testing.T) {
	t.Helper()
	if tf.done == nil {
		return
	}
	tf.cancel()
	select {
	case err := <-tf.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return after its context ended")
	}
	tf.done = nil
}

func (tf *testFleet) client(name string) *fake.Clientset {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	return tf.clients[name]
}

// createPod creates a pod bound to node, with one container "app" and the
// script (when not empty).
func (tf *testFleet) createPod(t *testing.T, node, name, script string, mutate func(*v1.Pod)) *v1.Pod {
	t.Helper()
	grace := int64(1)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{{Name: "app", Image: "registry.test/app:1"}},
		},
	}
	if script != "" {
		p.Annotations = map[string]string{fleet.ScriptAnnotation: script}
	}
	if mutate != nil {
		mutate(p)
	}
	out, err := tf.client(node).CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pod returns the pod as the node's API holds it.
func (tf *testFleet) pod(t *testing.T, node, name string) *v1.Pod {
	t.Helper()
	p, err := tf.client(node).CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func TestNewRejectsBadOptions(t *testing.T) {
	client := func(string) (kubernetes.Interface, error) { return fake.NewClientset(), nil }
	for name, tc := range map[string]struct {
		opts fleet.Options
		want string
	}{
		"no credentials": {fleet.Options{Nodes: 1}, "Config or Client is required"},
		"no nodes":       {fleet.Options{Client: client}, "Nodes is 0"},
		"bad prefix":     {fleet.Options{Client: client, Nodes: 2, NamePrefix: "Edge_"}, `node name "Edge_1"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := fleet.New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
	f, err := fleet.New(fleet.Options{Client: client, Nodes: 3, NamePrefix: "edge-"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Names(), ","); got != "edge-0,edge-1,edge-2" {
		t.Fatalf("names %s", got)
	}
	if f.Node("edge-1").IP() == f.Node("edge-2").IP() || f.Node("edge-3") != nil {
		t.Fatalf("IPs %s and %s; edge-3 %v", f.Node("edge-1").IP(), f.Node("edge-2").IP(), f.Node("edge-3"))
	}
	if err := f.Node("edge-0").Start(); err == nil || !strings.Contains(err.Error(), "the fleet does not run") {
		t.Fatalf("Start before Run: %v", err)
	}
}

// Scripts drive the containers through the real lifecycle: a container
// that exits 3 fails its restartPolicy Never pod; an image whose pulls
// fail leaves its container waiting in the kubelet's reasons; a readiness
// probe (httpGet: no network here) fails as scripted; a script that does
// not parse is an InvalidScript event and its pod runs with the defaults.
func TestScriptsDriveTheLifecycle(t *testing.T) {
	tf := newFleet(t, 1)
	tf.run(t)
	node := tf.Names()[0]
	tf.createPod(t, node, "exits", `{"containers": {"app": {"exitCodes": [3], "runFor": "100ms"}}}`,
		func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever })
	tf.createPod(t, node, "pullfails", `{"containers": {"*": {"pullFailures": -1, "pullDelay": "50ms"}}}`,
		func(p *v1.Pod) { p.Spec.Containers[0].Image = "registry.test/never:1" }) // an image no other pod pulls
	tf.createPod(t, node, "unready", `{"containers": {"app": {"readiness": [{"after": "0s", "result": "failure"}]}}}`,
		func(p *v1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{
				HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intOrString(8080)}}}
		})
	tf.createPod(t, node, "ready", "", func(p *v1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{
			HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intOrString(8080)}}}
	})
	tf.createPod(t, node, "invalid", `{"containers": {"app": {"exitCode": 1}}}`, nil)

	eventually(t, "exits Failed with exit code 3", func() bool {
		p := tf.pod(t, node, "exits")
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == v1.PodFailed && len(cs) == 1 && cs[0].State.Terminated != nil &&
			cs[0].State.Terminated.ExitCode == 3 && cs[0].State.Terminated.Reason == "Error"
	})
	eventually(t, "pullfails waiting on its image, with the scripted error", func() bool {
		cs := tf.pod(t, node, "pullfails").Status.ContainerStatuses
		if len(cs) != 1 || cs[0].State.Waiting == nil {
			return false
		}
		w := cs[0].State.Waiting
		return (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") && strings.Contains(w.Message, "scripted failure 1 of every pull")
	})
	eventually(t, "ready Running and Ready, invalid Running", func() bool {
		r, i := tf.pod(t, node, "ready"), tf.pod(t, node, "invalid")
		return podReady(r) && i.Status.Phase == v1.PodRunning
	})
	if p := tf.pod(t, node, "unready"); p.Status.Phase != v1.PodRunning || podReady(p) {
		t.Fatalf("unready: phase %s, ready %v; want Running and never Ready", p.Status.Phase, podReady(p))
	}
	var got []string
	eventually(t, "an InvalidScript event", func() bool {
		for {
			select {
			case e := <-tf.events.Events:
				got = append(got, e)
				if strings.HasPrefix(e, "Warning InvalidScript annotation fleet.podlife.io/script: json: unknown field \"exitCode\"") {
					return true
				}
			default:
				return false
			}
		}
	})
}

// Stop keeps the node's runtime (a stopped kubelet: the containers keep
// running), Kill loses it, and Start runs the node again; once Run
// returns, no goroutine of the fleet is left.
func TestStopKillStartAndNoGoroutineLeft(t *testing.T) {
	before := goruntime.NumGoroutine()
	tf := newFleet(t, 2)
	tf.run(t)
	n := tf.Node(tf.Names()[1])
	tf.createPod(t, n.Name(), "web", "", nil)
	running := func() int {
		srv := n.Runtime()
		if srv == nil {
			return -1
		}
		_, c := srv.RunningCounts()
		return c
	}
	eventually(t, "web's container running", func() bool { return running() == 1 })

	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if n.Running() || n.Agent() != nil || running() != 1 {
		t.Fatalf("stopped: running %v, %d containers running; want the runtime's container kept", n.Running(), running())
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err == nil || !strings.Contains(err.Error(), "runs already") {
		t.Fatalf("second Start: %v", err)
	}
	eventually(t, "web Running again in the API", func() bool { return tf.pod(t, n.Name(), "web").Status.Phase == v1.PodRunning })

	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if n.Runtime() != nil || n.Running() {
		t.Fatal("killed: the runtime or the agent is still there")
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web's container running on the new runtime", func() bool { return running() == 1 })

	tf.stop(t)
	eventually(t, "the goroutines gone", func() bool { return goruntime.NumGoroutine() <= before })
}

func intOrString(port int32) intstr.IntOrString { return intstr.FromInt32(port) }

// With a Registerer, every node's metrics carry its name, and a node that
// restarts, or is killed and started again, takes over its metrics
// instead of failing to register them a second time.
func TestMetricsSurviveRestarts(t *testing.T) {
	reg := prometheus.NewRegistry()
	tf := newFleet(t, 2, func(o *fleet.Options) { o.Registerer = reg })
	tf.run(t)
	n := tf.Node(tf.Names()[0])
	if err := n.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatalf("start after a kill: %v", err)
	}
	if !n.Running() {
		t.Fatal("not running after the start")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "node" {
					nodes[l.GetValue()] = true
				}
			}
		}
	}
	if len(mfs) == 0 || !nodes[tf.Names()[0]] || !nodes[tf.Names()[1]] {
		t.Fatalf("%d metric families, node labels %v", len(mfs), nodes)
	}
}
