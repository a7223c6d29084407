package shutdown

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// state is what the state file keeps of the last shutdown, in the
// kubelet's format.
type state struct {
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
}

// loadState reads the state file; a missing file is an empty state.
func loadState(path string) (state, error) {
	var s state
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read shutdown state: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return state{}, fmt.Errorf("read shutdown state %s: %w", path, err)
	}
	return s, nil
}

// storeState writes the state file atomically: a new file renamed over
// the old one.
func storeState(path string, s state) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("store shutdown state: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("store shutdown state: %w", err)
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("store shutdown state: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("store shutdown state: %w", err)
	}
	return nil
}
