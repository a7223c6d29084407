package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestCacheGetSetDelete(t *testing.T) {
	errRead := errors.New("read failed")
	type op struct {
		set         bool
		delete      bool
		status      *PodStatus
		err         error
		ts          time.Time
		wantUpdated bool
	}
	for _, tc := range []struct {
		name       string
		ops        []op
		wantStatus *PodStatus
		wantErr    error
	}{
		{name: "miss gives an empty status with the ID", wantStatus: &PodStatus{ID: "a"}},
		{name: "set then get", ops: []op{{set: true, status: &PodStatus{ID: "a", Name: "n"}, ts: at(1), wantUpdated: true}}, wantStatus: &PodStatus{ID: "a", Name: "n"}},
		{name: "nil status is stored as an empty one", ops: []op{{set: true, ts: at(1), wantUpdated: true}}, wantStatus: &PodStatus{ID: "a"}},
		{name: "error is kept", ops: []op{{set: true, status: &PodStatus{ID: "a"}, err: errRead, ts: at(1), wantUpdated: true}}, wantStatus: &PodStatus{ID: "a"}, wantErr: errRead},
		{name: "older data is refused", ops: []op{
			{set: true, status: &PodStatus{ID: "a", Name: "new"}, ts: at(2), wantUpdated: true},
			{set: true, status: &PodStatus{ID: "a", Name: "old"}, ts: at(1), wantUpdated: false},
		}, wantStatus: &PodStatus{ID: "a", Name: "new"}},
		{name: "same timestamp overwrites", ops: []op{
			{set: true, status: &PodStatus{ID: "a", Name: "first"}, ts: at(2), wantUpdated: true},
			{set: true, status: &PodStatus{ID: "a", Name: "second"}, ts: at(2), wantUpdated: true},
		}, wantStatus: &PodStatus{ID: "a", Name: "second"}},
		{name: "delete forgets", ops: []op{
			{set: true, status: &PodStatus{ID: "a", Name: "n"}, ts: at(1), wantUpdated: true},
			{delete: true},
		}, wantStatus: &PodStatus{ID: "a"}},
		{name: "after delete, older data is accepted again", ops: []op{
			{set: true, status: &PodStatus{ID: "a", Name: "new"}, ts: at(2), wantUpdated: true},
			{delete: true},
			{set: true, status: &PodStatus{ID: "a", Name: "old"}, ts: at(1), wantUpdated: true},
		}, wantStatus: &PodStatus{ID: "a", Name: "old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache()
			for i, o := range tc.ops {
				switch {
				case o.set:
					if got := c.Set("a", o.status, o.err, o.ts); got != o.wantUpdated {
						t.Fatalf("op %d: Set returned %v, want %v", i, got, o.wantUpdated)
					}
				case o.delete:
					c.Delete("a")
				}
			}
			got, err := c.Get("a")
			if diff := cmp.Diff(tc.wantStatus, got); diff != "" {
				t.Errorf("Get status (-want +got):\n%s", diff)
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("Get error %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestCacheGetNewerThanReturnsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(*MemoryCache)
		minTime time.Time
	}{
		{"entry modified after minTime", func(c *MemoryCache) { c.Set("a", &PodStatus{ID: "a"}, nil, at(2)) }, at(1)},
		{"whole cache refreshed after minTime", func(c *MemoryCache) { c.UpdateTime(at(2)) }, at(1)},
		{"refresh covers pods with no entry", func(c *MemoryCache) { c.Set("other", nil, nil, at(0)); c.UpdateTime(at(5)) }, at(4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache()
			tc.prepare(c)
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a returning call must not need the context
			if _, err := c.GetNewerThan(ctx, "a", tc.minTime); err != nil {
				t.Fatalf("GetNewerThan: %v", err)
			}
		})
	}
}

// waitFor runs GetNewerThan in a goroutine and returns its result channel
// once the waiter is registered.
func waitFor(t *testing.T, c *MemoryCache, ctx context.Context, uid types.UID, minTime time.Time) <-chan error {
	t.Helper()
	before := c.waiterCount(uid)
	done := make(chan error, 1)
	go func() {
		_, err := c.GetNewerThan(ctx, uid, minTime)
		done <- err
	}()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for c.waiterCount(uid) == before {
		select {
		case <-deadline.C:
			t.Fatal("GetNewerThan did not start waiting")
		case <-tick.C:
		}
	}
	return done
}

func (c *MemoryCache) waiterCount(uid types.UID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters[uid])
}

func expectBlocked(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s: GetNewerThan returned (%v); it should still wait", what, err)
	default:
	}
}

func expectDone(t *testing.T, done <-chan error, wantErr error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
			t.Fatalf("GetNewerThan: %v, want %v", err, wantErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("GetNewerThan did not return")
	}
}

func TestCacheGetNewerThanWokenBySet(t *testing.T) {
	c := NewCache()
	c.Set("a", &PodStatus{ID: "a"}, nil, at(1))
	done := waitFor(t, c, context.Background(), "a", at(1))
	c.Set("b", &PodStatus{ID: "b"}, nil, at(5)) // another pod
	expectBlocked(t, done, "set of another pod")
	c.Set("a", &PodStatus{ID: "a"}, nil, at(1)) // not after minTime
	expectBlocked(t, done, "set at minTime")
	c.Set("a", &PodStatus{ID: "a", Name: "fresh"}, nil, at(2))
	expectDone(t, done, nil)
	if n := c.waiterCount("a"); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
}

func TestCacheGetNewerThanWokenByUpdateTime(t *testing.T) {
	c := NewCache()
	done := waitFor(t, c, context.Background(), "a", at(3))
	c.UpdateTime(at(3))
	expectBlocked(t, done, "UpdateTime at minTime")
	c.UpdateTime(at(2)) // the cache time never goes back
	expectBlocked(t, done, "UpdateTime before minTime")
	c.UpdateTime(at(4))
	expectDone(t, done, nil)
}

// UpdateTimeExcept wakes the waiters of every pod but the pending ones;
// those wait for their own Set, or for the UpdateTime that ends the relist.
func TestCacheGetNewerThanWokenByUpdateTimeExcept(t *testing.T) {
	c := NewCache()
	c.Set("changed", &PodStatus{ID: "changed"}, nil, at(1))
	c.Set("same", &PodStatus{ID: "same", Name: "cached"}, nil, at(1))
	changed := waitFor(t, c, context.Background(), "changed", at(3))
	also := waitFor(t, c, context.Background(), "changed-too", at(3))
	same := waitFor(t, c, context.Background(), "same", at(3))
	unknown := waitFor(t, c, context.Background(), "unknown", at(3))
	pending := map[types.UID]struct{}{"changed": {}, "changed-too": {}}

	c.UpdateTimeExcept(at(3), pending)
	expectBlocked(t, same, "UpdateTimeExcept at minTime")
	c.UpdateTimeExcept(at(4), pending)
	expectDone(t, same, nil)
	expectDone(t, unknown, nil)
	expectBlocked(t, changed, "UpdateTimeExcept with the pod pending")
	if st, _ := c.GetNewerThan(context.Background(), "same", at(3)); st.Name != "cached" {
		t.Errorf("status of an unchanged pod: %+v, want the cached one", st)
	}
	c.UpdateTimeExcept(at(2), nil) // older: changes nothing
	expectBlocked(t, changed, "an older UpdateTimeExcept")

	c.Set("changed", &PodStatus{ID: "changed"}, nil, at(4)) // its inspection
	expectDone(t, changed, nil)
	expectBlocked(t, also, "another pod's Set")
	c.UpdateTime(at(4)) // the relist's end
	expectDone(t, also, nil)

	// The pending set is gone with the UpdateTime: a later
	// UpdateTimeExcept decides alone.
	again := waitFor(t, c, context.Background(), "changed-too", at(4))
	c.UpdateTimeExcept(at(5), map[types.UID]struct{}{"other": {}})
	expectDone(t, again, nil)
}

func TestCacheGetNewerThanContextCancel(t *testing.T) {
	c := NewCache()
	ctx, cancel := context.WithCancel(context.Background())
	done := waitFor(t, c, ctx, "a", at(1))
	cancel()
	expectDone(t, done, context.Canceled)
	if n := c.waiterCount("a"); n != 0 {
		t.Fatalf("%d waiters left after cancel", n)
	}
	// A deadline works the same way.
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer dcancel()
	if _, err := c.GetNewerThan(dctx, "a", at(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := NewCache()
	const pods, writers, readers = 20, 4, 8
	uid := func(i int) types.UID { return types.UID(fmt.Sprintf("pod-%d", i%pods)) }
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range 500 {
				switch i % 5 {
				case 0, 1, 2:
					c.Set(uid(i+w), &PodStatus{ID: uid(i + w)}, nil, at(i))
				case 3:
					c.UpdateTime(at(i))
				case 4:
					c.Delete(uid(i + w))
				}
			}
		})
	}
	results := make(chan error, readers*pods)
	for r := range readers {
		wg.Go(func() {
			for i := range pods {
				if _, err := c.Get(uid(i)); err != nil {
					results <- err
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := c.GetNewerThan(ctx, uid(i+r), at(400))
				cancel()
				results <- err
			}
		})
	}
	// Every writer ends with refreshes after at(400) (i = 403, 408, …, 498),
	// so every reader is woken whatever the interleaving.
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCacheOnWaitCalledWhenAWaitBegins(t *testing.T) {
	c := NewCache()
	var calls atomic.Int32
	c.OnWait(func() { calls.Add(1) })
	c.Set("a", &PodStatus{ID: "a"}, nil, at(2))
	if _, err := c.GetNewerThan(context.Background(), "a", at(1)); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("OnWait called %d times for data already new enough", n)
	}
	done := waitFor(t, c, context.Background(), "a", at(2))
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("OnWait called %d times, want 1 for the wait", calls.Load())
		}
		time.Sleep(time.Millisecond)
	}
	c.UpdateTime(at(3))
	expectDone(t, done, nil)
}
