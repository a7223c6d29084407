package fakecri

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Options configures a Server. Every field is optional.
type Options struct {
	// Clock stamps created/started/finished times and paces injected
	// latency. Default: the real clock.
	Clock clock.Clock
	// Rand decides probabilistic faults. Default: a PCG source with a fixed
	// seed, so runs are reproducible.
	Rand *rand.Rand
	// Logger. The zero value discards.
	Logger logr.Logger
	// RuntimeName reported by Version. Default "fakecri".
	RuntimeName string
	// RuntimeVersion reported by Version. Default "0.1.0".
	RuntimeVersion string
	// APIVersion reported by Version as the CRI API version. Default "v1".
	APIVersion string
	// Images present at start (pulled before the server answers). Any
	// other image can be pulled.
	Images []string
	// Registry describes images as a registry serves them, so that their
	// references (tags in several repositories, digests) resolve to one
	// image ID with a manifest digest and a user. Other references pull
	// as images of their own.
	Registry []RegistryImage
	// PullLatency is how long a PullImage takes, on Clock. Default 0.
	PullLatency time.Duration
	// Script, when set, is asked at every StartContainer what the
	// container does, with the sandbox's and the container's configs as
	// RunPodSandbox and CreateContainer received them (read-only; do not
	// keep them). ok false: the built-in behaviour of the container's
	// arguments ("exit N", "hang", run). The answer is kept with the
	// container for its life: its timed exit and its StopContainer. It is
	// called with the server's lock held: it must not call the Server.
	Script func(sandbox *runtimeapi.PodSandboxConfig, container *runtimeapi.ContainerConfig) (s ContainerScript, ok bool)
	// PullScript, when set, is called at every PullImage with the
	// reference asked for and the request's sandbox config (may be nil):
	// the pull then takes delay longer (on Clock, added to PullLatency and
	// cut short by the request's context with it) and, when err is
	// not nil, fails with it (a gRPC status error as is; any other error
	// as codes.Unknown with its message) without adding the image. Called
	// with no lock held; it may be called concurrently.
	PullScript func(image string, sandbox *runtimeapi.PodSandboxConfig) (delay time.Duration, err error)
	// NetworkReady is the NetworkReady condition Status reports. Default
	// false, like a runtime without CNI (pods use the node network).
	NetworkReady bool
	// PodIPPrefix: sandboxes that ask for a pod network get the IP
	// PodIPPrefix+N (N = 2, 3, …). Sandboxes in the node network get no IP.
	// Default "10.88.0.".
	PodIPPrefix string
	// ImageFsMountpoint is the mount point ImageFsInfo names for the
	// image file system. Default "/".
	ImageFsMountpoint string
	// ImageFsCapacity is the size, in bytes, of the fake image file
	// system ImageFsStats reports (ImageFsInfo gives only the usage, the
	// sum of the images' sizes). Default 100 GiB.
	ImageFsCapacity uint64
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(1, 2))
	}
	if o.RuntimeName == "" {
		o.RuntimeName = "fakecri"
	}
	if o.RuntimeVersion == "" {
		o.RuntimeVersion = "0.1.0"
	}
	if o.APIVersion == "" {
		o.APIVersion = "v1"
	}
	if o.PodIPPrefix == "" {
		o.PodIPPrefix = "10.88.0."
	}
	if o.ImageFsMountpoint == "" {
		o.ImageFsMountpoint = "/"
	}
	if o.ImageFsCapacity == 0 {
		o.ImageFsCapacity = 100 << 30
	}
	return o
}

// Server is an in-process CRI server: RuntimeService and ImageService over
// gRPC, with in-memory sandbox, container and image state and fault injection.
// Its state survives Down and Up, as a real runtime's state survives a
// restart of its daemon.
type Server struct {
	opts Options
	log  logr.Logger

	// mu guards everything below, the whole in-memory runtime included.
	mu         sync.Mutex
	grpcServer *grpc.Server
	serving    sync.WaitGroup // the Serve goroutine of the current grpcServer
	socketPath string         // set by StartUnix
	buf        *bufconn.Listener
	inMemory   bool // started by StartInMemory
	up         bool
	stopped    bool
	faults     []*fault
	// calls is the call log: indexes into methods (methodIndex is the
	// reverse); callCounts counts calls by method.
	calls       []uint8
	methods     []string
	methodIndex map[string]uint8
	callCounts  map[string]int
	nextID      uint64
	nextIP      int
	sandboxes   map[string]*sandbox
	containers  map[string]*container
	// Indexes of sandboxes and containers, kept by the store helpers
	// (store.go): reserved sandbox names, and both by pod UID label.
	sandboxNames  map[sandboxName]string
	podSandboxes  map[string]map[string]*sandbox
	podContainers map[string]map[string]*container
	images        map[string]*image // by ID
	stopTimes     map[string]int64  // container ID → timeout of its last StopContainer
	exec          ExecFunc          // SetExec's, or nil: builtinExec
	// Timed exits of scripted containers (script.go): the queue, and the
	// scheduler goroutine's timer and stop channel while it runs.
	exitQueue exitQueue
	exitSeq   uint64
	exitTimer clock.Timer
	exitStop  chan struct{}
	// exitsDone counts the scheduler goroutines, for Stop to wait for.
	exitsDone sync.WaitGroup

	// stream is the streaming server of Exec, Attach and PortForward
	// (streaming.go); it guards itself.
	stream streamer
	// direct holds the unary methods that Conn's calls run (direct.go);
	// set by New, read only.
	direct map[string]directMethod
}

// New returns a Server with the given options. It does not listen yet.
func New(opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		opts:       opts,
		log:        opts.Logger.WithName("fakecri"),
		nextIP:     2,
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},

		sandboxNames:  map[sandboxName]string{},
		podSandboxes:  map[string]map[string]*sandbox{},
		podContainers: map[string]map[string]*container{},
		images:        map[string]*image{},
		stopTimes:     map[string]int64{},

		methodIndex: map[string]uint8{},
		callCounts:  map[string]int{},
	}
	for _, ref := range opts.Images {
		s.addImageLocked(ref)
	}
	s.direct = directMethods(s)
	return s
}

// StartUnix listens on a unix socket at path (removing a stale socket file
// first) and serves in a goroutine that Stop waits for. It returns the
// endpoint to give a CRI client, "unix://" + path.
func (s *Server) StartUnix(path string) (endpoint string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return "", errors.New("fakecri: server stopped")
	}
	if s.up {
		return "", errors.New("fakecri: server already started")
	}
	s.socketPath = path
	s.inMemory = false
	if err := s.listenLocked(); err != nil {
		return "", err
	}
	return "unix://" + path, nil
}

// StartInMemory serves over an in-memory listener (no file, no network).
// Connect with DialContext, for example cri.Options{Dialer: s.DialContext}.
func (s *Server) StartInMemory() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("fakecri: server stopped")
	}
	if s.up {
		return errors.New("fakecri: server already started")
	}
	s.inMemory = true
	return s.listenLocked()
}

// DialContext connects to the in-memory listener. It fails, as a refused
// connection does, while the server is down.
func (s *Server) DialContext(ctx context.Context, _ string) (net.Conn, error) {
	s.mu.Lock()
	buf, up := s.buf, s.up
	s.mu.Unlock()
	if !up || buf == nil {
		return nil, errors.New("fakecri: connection refused: server is down")
	}
	return buf.DialContext(ctx)
}

// inMemoryBuffer is the buffer of each direction of an in-memory
// connection (bufconn allocates it whole): a writer waits while it is
// full, so its size bounds memory, not the size of a message. 64 KiB, as
// HTTP/2's initial window, keeps a fleet of servers small (1 MiB each
// was 2 MiB per client).
const inMemoryBuffer = 64 << 10

func (s *Server) listenLocked() error {
	var lis net.Listener
	if s.inMemory {
		s.buf = bufconn.Listen(inMemoryBuffer)
		lis = s.buf
	} else {
		if fi, err := os.Lstat(s.socketPath); err == nil && fi.Mode()&os.ModeSocket != 0 {
			_ = os.Remove(s.socketPath)
		}
		l, err := net.Listen("unix", s.socketPath)
		if err != nil {
			return fmt.Errorf("fakecri: listen on %s: %w", s.socketPath, err)
		}
		lis = l
	}
	gs := grpc.NewServer(grpc.UnaryInterceptor(s.intercept))
	runtimeapi.RegisterRuntimeServiceServer(gs, &runtimeService{s: s})
	runtimeapi.RegisterImageServiceServer(gs, &imageService{s: s})
	s.grpcServer = gs
	s.up = true
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		if err := gs.Serve(lis); err != nil {
			s.log.V(4).Info("serve ended", "err", err)
		}
	}()
	return nil
}

// Down takes the server off the air, as if the runtime daemon died: the
// listener closes (the socket file disappears), open connections drop and
// in-flight calls fail. Sandboxes, containers and images are kept. Up brings
// it back.
func (s *Server) Down() {
	s.mu.Lock()
	gs := s.grpcServer
	s.grpcServer = nil
	s.up = false
	s.buf = nil
	s.mu.Unlock()
	if gs != nil {
		gs.Stop()
	}
	s.serving.Wait()
}

// Up serves again on the same socket path (or a fresh in-memory listener)
// after Down.
func (s *Server) Up() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("fakecri: server stopped")
	}
	if s.up {
		return nil
	}
	if !s.inMemory && s.socketPath == "" {
		return errors.New("fakecri: Up before StartUnix or StartInMemory")
	}
	return s.listenLocked()
}

// IsUp reports whether the server is serving.
func (s *Server) IsUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}

// Stop stops serving for good and waits for the serving goroutine. Pending
// timed exits (Options.Script) are dropped: the containers stay as they are.
func (s *Server) Stop() {
	s.Down()
	s.stopStreaming()
	s.mu.Lock()
	s.stopped = true
	s.stopExitsLocked()
	s.mu.Unlock()
	s.exitsDone.Wait()
}

// now returns the clock's time in CRI form (Unix nanoseconds).
func (s *Server) now() int64 { return s.opts.Clock.Now().UnixNano() }

// wait waits d on the server's clock, or until ctx is done.
func (s *Server) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := s.opts.Clock.NewTimer(d)
	defer t.Stop() // a stopped fake timer stops counting as a waiter
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
