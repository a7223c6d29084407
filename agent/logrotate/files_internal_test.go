package logrotate

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestPlanRotation(t *testing.T) {
	const (
		s1 = "0.log.20260101-000001"
		s2 = "0.log.20260101-000002"
		s3 = "0.log.20260101-000003"
		s4 = "0.log.20260101-000004"
	)
	for _, tc := range []struct {
		name     string
		names    []string
		maxFiles int
		want     plan
	}{
		{name: "nothing rotated yet", names: []string{"0.log"}, maxFiles: 5, want: plan{}},
		{
			name:     "the newest rotated file is compressed now, before the next one is made",
			names:    []string{"0.log", s1 + ".gz", s2},
			maxFiles: 5,
			want:     plan{Compress: []string{s2}},
		},
		{
			name:     "at most maxFiles-2 rotated files kept before the rename, oldest removed",
			names:    []string{s3 + ".gz", "0.log", s1 + ".gz", s4, s2 + ".gz"},
			maxFiles: 4,
			want:     plan{Remove: []string{s1 + ".gz", s2 + ".gz"}, Compress: []string{s4}},
		},
		{
			name:     "maxFiles 2: every rotated file goes",
			names:    []string{"0.log", s1 + ".gz", s2},
			maxFiles: 2,
			want:     plan{Remove: []string{s1 + ".gz", s2}},
		},
		{
			name:     "leftovers of an interrupted rotation: a temporary file, a file compressed but not removed",
			names:    []string{"0.log", s1 + ".tmp", s2, s2 + ".gz", s3 + ".gz.tmp"},
			maxFiles: 5,
			want:     plan{Remove: []string{s1 + ".tmp", s2, s3 + ".gz.tmp"}},
		},
		{
			name: "other files are not the rotation's: other logs, other suffixes, other instances",
			names: []string{"0.log", "1.log", "1.log.20260101-000001", "0.log.old", "0.log.2026-01-01",
				"0.log.20260101-0000011", "x0.log.20260101-000001", "0.log.20261301-000001", s1},
			maxFiles: 5,
			want:     plan{Compress: []string{s1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planRotation("0.log", tc.names, tc.maxFiles)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("planRotation (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompressFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log.20260101-000001")
	content := bytes.Repeat([]byte("2026-01-01T00:00:00Z stdout F a line of the log\n"), 1000)
	if err := os.WriteFile(path, content, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := compressFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the uncompressed file is still there: %v", err)
	}
	if _, err := os.Stat(path + tmpSuffix); !os.IsNotExist(err) {
		t.Errorf("the temporary file is still there: %v", err)
	}
	f, err := os.Open(path + compressSuffix)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if info, _ := f.Stat(); info.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the original's 0640", info.Mode().Perm())
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, content) {
		t.Errorf("decompressed %d bytes, want the original %d", len(got), len(content))
	}

	// A file that cannot be read leaves no temporary or compressed file.
	bad := filepath.Join(dir, "0.log.20260101-000002")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := compressFile(bad); err == nil {
		t.Fatal("compressing a folder succeeded")
	}
	for _, n := range []string{bad + tmpSuffix, bad + compressSuffix} {
		if _, err := os.Stat(n); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", filepath.Base(n), err)
		}
	}
}
