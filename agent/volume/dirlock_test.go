package volume

import (
	"sync"
	"testing"
)

// Writers of one folder never overlap; the lock of a folder nobody holds
// is forgotten.
func TestDirLocks(t *testing.T) {
	var d dirLocks
	var wg sync.WaitGroup
	var mu sync.Mutex
	inside := map[string]int{}
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := []string{"a", "b"}[i%2]
			unlock := d.lock(dir)
			mu.Lock()
			inside[dir]++
			if inside[dir] != 1 {
				t.Errorf("%d writers of %s at once", inside[dir], dir)
			}
			mu.Unlock()
			mu.Lock()
			inside[dir]--
			mu.Unlock()
			unlock()
		}()
	}
	wg.Wait()
	if len(d.byDir) != 0 {
		t.Errorf("locks left: %v", d.byDir)
	}
}
