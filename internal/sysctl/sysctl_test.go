package sysctl

import (
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "",
		"kernel.shm_rmid_forced":           "kernel.shm_rmid_forced",
		"kernel/shm_rmid_forced":           "kernel.shm_rmid_forced",
		"net/ipv4/conf/eth0.100/rp_filter": "net.ipv4.conf.eth0/100.rp_filter",
		"net.ipv4.conf.eth0/100.rp_filter": "net.ipv4.conf.eth0/100.rp_filter",
		"plain":                            "plain",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNamespaceOf(t *testing.T) {
	for name, want := range map[string]Namespace{
		"kernel.shm_rmid_forced": IPC, "kernel.msgmax": IPC, "kernel.sem": IPC, "fs.mqueue.msg_max": IPC,
		"net.core.somaxconn": Net, "kernel.semx": Unknown, "vm.swappiness": Unknown, "kernel.hostname": Unknown,
	} {
		if got := NamespaceOf(name); got != want {
			t.Errorf("NamespaceOf(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestAllowlist(t *testing.T) {
	a, err := NewAllowlist([]string{"kernel.msg*", "net/core/somaxconn"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		hostNet, hostIPC bool
		err              string // "" = allowed
	}{
		{name: "kernel.shm_rmid_forced"},
		{name: "kernel/shm_rmid_forced"},
		{name: "net.ipv4.tcp_syncookies"},
		{name: "kernel.msgmax"},
		{name: "net.core.somaxconn"},
		{name: "kernel.shmmax", err: `"kernel.shmmax" not allowlisted`},
		{name: "vm.swappiness", err: `"vm.swappiness" not allowlisted`},
		{name: "net.ipv4.tcp_syncookies", hostNet: true, err: `"net.ipv4.tcp_syncookies" not allowed with host net enabled`},
		{name: "kernel.msgmax", hostIPC: true, err: `"kernel.msgmax" not allowed with host IPC enabled`},
		{name: "kernel.shm_rmid_forced", hostNet: true},
	} {
		err := a.Validate(tc.name, tc.hostNet, tc.hostIPC)
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("Validate(%q, net %v, ipc %v) = %v, want %q", tc.name, tc.hostNet, tc.hostIPC, err, tc.err)
		}
	}
	def, err := NewAllowlist(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := def.Validate("kernel.msgmax", false, false); err == nil {
		t.Error("kernel.msgmax allowed without being allowlisted")
	}
}

func TestNewAllowlistRefusesWhatIsNotNamespaced(t *testing.T) {
	for _, p := range []string{"vm.swappiness", "kernel.*", "net.*.x*", "kernel.msg*max"} {
		if _, err := NewAllowlist([]string{p}); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("NewAllowlist(%q) = %v, want an error naming it", p, err)
		}
	}
}
