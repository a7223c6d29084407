package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/agent"
	"github.com/podlife/podlife/podmanager/source"
	"github.com/podlife/podlife/podworker/podworkertest"
	"github.com/podlife/podlife/runtime"
	"github.com/podlife/podlife/runtime/fakecri"
)

// The kubelet's own admission runs before the handlers: a sysctl that is
// not allowed, or another OS, is rejected with the kubelet's reason,
// message and a Warning event; safe and allowed sysctls are admitted.
func TestBuiltinAdmission(t *testing.T) {
	_, endpoint := startFakeCRI(t, fakecri.Options{})
	var channel *source.Channel
	events := &eventLog{}
	handlerSaw := map[string]bool{}
	ra := startAgentWith(t, endpoint, t.TempDir(), func(o *agent.Options) {
		apiChannel(o, &channel)
		o.Recorder = events
		o.AllowedUnsafeSysctls = []string{"kernel/sem"}
		// Runs on the sync loop only: no lock needed until the agent stops.
		o.AdmitHandlers = []agent.AdmitHandler{agent.AdmitHandlerFunc(func(a *agent.AdmitAttributes) agent.AdmitResult {
			handlerSaw[a.Pod.Name] = true
			return agent.AdmitResult{Admit: true}
		})}
	})
	pod := func(name string, edit func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: testImage}}}}
		edit(p)
		return p
	}
	sysctls := func(names ...string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{}
			for _, n := range names {
				p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
			}
		}
	}
	rejected := map[string][2]string{
		"unsafe":   {"SysctlForbidden", `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted`},
		"slashes":  {"SysctlForbidden", `Pod was rejected: forbidden sysctl: "kernel.shmmax" not allowlisted`},
		"hostnet":  {"SysctlForbidden", `Pod was rejected: forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled`},
		"windows":  {"PodOSNotSupported", "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS"},
		"os-label": {"PodOSSelectorNodeLabelDoesNotMatch", "Pod was rejected: Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
	}
	pods := []*v1.Pod{
		pod("unsafe", sysctls("kernel.shm_rmid_forced", "kernel.msgmax")),
		pod("slashes", sysctls("kernel/shmmax")),
		pod("hostnet", func(p *v1.Pod) { sysctls("net.ipv4.tcp_syncookies")(p); p.Spec.HostNetwork = true }),
		pod("windows", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }),
		pod("os-label", func(p *v1.Pod) { p.Labels = map[string]string{v1.LabelOSStable: "windows"} }),
		pod("safe", sysctls("kernel.shm_rmid_forced", "kernel/sem")),
		pod("linux", func(p *v1.Pod) {
			p.Spec.OS = &v1.PodOS{Name: v1.Linux}
			p.Labels = map[string]string{v1.LabelOSStable: "linux"}
		}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := channel.Push(ctx, pods); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ra, "safe-uid")
	waitRunning(t, ra, "linux-uid")
	for name, want := range rejected {
		uid := types.UID(name + "-uid")
		podworkertest.WaitFor(t, waitTimeout, name+" rejected", func() bool {
			st, ok := ra.StatusReporter().Status(uid)
			return ok && st.Phase == v1.PodFailed
		})
		st, _ := ra.StatusReporter().Status(uid)
		if st.Reason != want[0] || st.Message != want[1] {
			t.Errorf("%s: reason %q message %q, want %q %q", name, st.Reason, st.Message, want[0], want[1])
		}
		if _, known := ra.Workers().PodInfo(uid); known {
			t.Errorf("%s reached a pod worker", name)
		}
		if ev := "Warning " + want[0] + " " + want[1][len("Pod was rejected: "):]; !slices.Contains(events.all(), ev) {
			t.Errorf("%s: no event %q among %q", name, ev, events.all())
		}
	}
	ra.stop(t)
	for name := range rejected {
		if handlerSaw[name] {
			t.Errorf("Options.AdmitHandlers saw %s, which the built-in checks rejected", name)
		}
	}
	if !handlerSaw["safe"] || !handlerSaw["linux"] {
		t.Errorf("Options.AdmitHandlers did not see the admitted pods: %v", handlerSaw)
	}
}

func TestAllowedUnsafeSysctlsValidated(t *testing.T) {
	_, err := agent.New(agent.Options{Runtime: struct{ runtime.Runtime }{}, NodeName: "n", AllowedUnsafeSysctls: []string{"vm.swappiness"}})
	if err == nil || !strings.Contains(err.Error(), `AllowedUnsafeSysctls: sysctl "vm.swappiness": not known to be namespaced`) {
		t.Errorf("New: %v", err)
	}
}
