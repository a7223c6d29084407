package node

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// modulePath is podlife's Go module.
const modulePath = "github.com/podlife/podlife"

// Version returns podlife's version as the Node's kubeletVersion:
// the version of the podlife module in this binary's build information
// (v0.0.0 in a development build), with the build metadata "+podlife",
// e.g. "v0.9.0+podlife". It stays a semantic version, which tools that
// compare node versions can parse.
func Version() string {
	v := "v0.0.0"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == modulePath && strings.HasPrefix(bi.Main.Version, "v") {
			v = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == modulePath && strings.HasPrefix(d.Version, "v") {
				v = d.Version
			}
		}
	}
	if i := strings.IndexByte(v, '+'); i >= 0 {
		v = v[:i]
	}
	return v + "+podlife"
}

// UserAgent is the user agent podlife's clients should send:
// "podlife/VERSION (OS/ARCH)".
func UserAgent() string {
	return fmt.Sprintf("podlife/%s (%s/%s)", strings.TrimSuffix(Version(), "+podlife"), goruntime.GOOS, goruntime.GOARCH)
}

// machine is what the Controller reads of the machine once, at New.
type machine struct {
	capacity  v1.ResourceList
	addresses []v1.NodeAddress
	info      v1.NodeSystemInfo
}

// readMachine reads the machine's resources, addresses and system
// information. What cannot be read is left out; nothing here fails.
func readMachine(storagePath string) machine {
	m := machine{capacity: v1.ResourceList{
		v1.ResourcePods: *resource.NewQuantity(DefaultMaxPods, resource.DecimalSI),
		v1.ResourceCPU:  *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
	}}
	if mem, ok := memTotal("/proc/meminfo"); ok {
		m.capacity[v1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(storagePath, &fs); err == nil {
		m.capacity[v1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(fs.Blocks)*fs.Bsize, resource.BinarySI)
	}
	if ip := firstIPv4(); ip != "" {
		m.addresses = append(m.addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	} else {
		m.addresses = append(m.addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "127.0.0.1"})
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		m.addresses = append(m.addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: strings.ToLower(h)})
	}
	m.info = v1.NodeSystemInfo{
		MachineID:       readTrimmed("/etc/machine-id"),
		SystemUUID:      readTrimmed("/sys/class/dmi/id/product_uuid"),
		BootID:          readTrimmed("/proc/sys/kernel/random/boot_id"),
		KernelVersion:   readTrimmed("/proc/sys/kernel/osrelease"),
		OSImage:         osImage("/etc/os-release"),
		OperatingSystem: goruntime.GOOS,
		Architecture:    goruntime.GOARCH,
	}
	return m
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// memTotal reads MemTotal (in bytes) from a meminfo file.
func memTotal(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

// osImage reads PRETTY_NAME from an os-release file ("Unknown" without it,
// as the kubelet's cAdvisor reports).
func osImage(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "Unknown"
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "PRETTY_NAME="); ok {
			if u, err := strconv.Unquote(v); err == nil {
				return u
			}
			return strings.Trim(v, `"'`)
		}
	}
	return "Unknown"
}

// firstIPv4 returns the first global unicast IPv4 address of an interface
// that is up, or "".
func firstIPv4() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip4 := ipn.IP.To4(); ip4 != nil && ip4.IsGlobalUnicast() {
					return ip4.String()
				}
			}
		}
	}
	return ""
}
