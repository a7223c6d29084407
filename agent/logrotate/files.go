package logrotate

import (
	"compress/gzip"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// TimestampFormat is the time layout of a rotated log's suffix, the
// kubelet's: 0.log is rotated to 0.log.20260102-150405 (the time of the
// rotation on Options.Clock, in its location), later compressed to
// 0.log.20260102-150405.gz.
const TimestampFormat = "20060102-150405"

const (
	compressSuffix = ".gz"
	// tmpSuffix marks a compression in progress (0.log.STAMP.tmp, as the
	// kubelet's); one left behind by a crash is deleted at the next
	// rotation.
	tmpSuffix = ".tmp"
)

// plan is what a rotation does to the files beside a log before it
// renames the log itself.
type plan struct {
	// Remove are leftovers of interrupted rotations (temporary files,
	// rotated files whose compressed copy exists), then the oldest rotated
	// files beyond the count.
	Remove []string
	// Compress are the rotated files kept but not yet compressed, oldest
	// first.
	Compress []string
}

// planRotation decides, from the names of the files in a log's folder,
// what to remove and what to compress before the log named base is
// renamed, so that the folder then holds at most maxFiles files of that
// log: the new current one, the one just rotated (left uncompressed: the
// runtime may still be writing to it until it reopens the log, and a log
// shipper may still be reading it) and maxFiles-2 compressed ones. Names
// other than base.STAMP, base.STAMP.gz and those with .tmp appended are
// not the rotation's and are left alone.
func planRotation(base string, names []string, maxFiles int) plan {
	type rotated struct {
		name, stamp string
		compressed  bool
	}
	var p plan
	var files []rotated
	compressed := map[string]bool{}
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, base+".")
		if !ok {
			continue
		}
		tmp := false
		if r, ok := strings.CutSuffix(rest, tmpSuffix); ok {
			rest, tmp = r, true
		}
		gz := false
		if r, ok := strings.CutSuffix(rest, compressSuffix); ok {
			rest, gz = r, true
		}
		if _, err := time.Parse(TimestampFormat, rest); err != nil || len(rest) != len(TimestampFormat) {
			continue
		}
		if tmp {
			p.Remove = append(p.Remove, n)
			continue
		}
		files = append(files, rotated{name: n, stamp: rest, compressed: gz})
		if gz {
			compressed[rest] = true
		}
	}
	// An uncompressed file whose compressed copy exists was compressed
	// by a rotation that could not delete it.
	files = slices.DeleteFunc(files, func(f rotated) bool {
		if !f.compressed && compressed[f.stamp] {
			p.Remove = append(p.Remove, f.name)
			return true
		}
		return false
	})
	slices.SortFunc(files, func(a, b rotated) int { return strings.Compare(a.stamp, b.stamp) })
	keep := max(maxFiles-2, 0)
	for i, f := range files {
		switch {
		case i < len(files)-keep:
			p.Remove = append(p.Remove, f.name)
		case !f.compressed:
			p.Compress = append(p.Compress, f.name)
		}
	}
	slices.Sort(p.Remove)
	return p
}

// compressFile writes path gzipped to path.gz, through path.tmp so that
// no half-written .gz is ever seen, and removes path. The compressed file
// keeps path's permissions.
func compressFile(path string) (err error) {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	tmp := path + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = out.Close()
			_ = os.Remove(tmp)
		}
	}()
	zw := gzip.NewWriter(out)
	if _, err = io.Copy(zw, in); err != nil {
		return err
	}
	if err = zw.Close(); err != nil {
		return err
	}
	if err = out.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path+compressSuffix); err != nil {
		return err
	}
	return os.Remove(path)
}
