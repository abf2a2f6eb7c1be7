package main

// The memory workload of `uvfs bench memory`: how much memory gVisor's VFS
// and tmpfs keep per empty file.
//
// The driver creates --files empty files in --dirs directories (file i is
// d<i*dirs/files>/f<i>, the names every column of the workload uses), through
// the VFS the way open(O_CREAT|O_WRONLY, 0644) + close does, and prints one
// line:
//
//	{"files": N, "dirs": D, "heap_alloc_delta_bytes": B, "heap_objects_delta": O,
//	 "sys_delta_bytes": S, "rss_delta_bytes": R}
//
// Each figure is a difference between just before the first mkdir and just
// after the last close, both taken after a blocking runtime.GC():
//   - heap_alloc_delta_bytes: runtime.MemStats.HeapAlloc, the bytes of live
//     heap objects (in their size classes). The headline: what the file
//     system keeps, without the garbage the collector has not reclaimed yet.
//   - heap_objects_delta: live heap objects (allocations live per file).
//   - sys_delta_bytes: runtime.MemStats.Sys, what the Go runtime obtained
//     from the OS (heap with its GC headroom, stacks, metadata).
//   - rss_delta_bytes: resident set size from /proc/self/statm.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"gvisor.dev/gvisor/pkg/abi/linux"
	"gvisor.dev/gvisor/pkg/context"
	"gvisor.dev/gvisor/pkg/sentry/kernel/auth"
	"gvisor.dev/gvisor/pkg/sentry/vfs"
)

// memorySize is how many files the memory workload creates, in how many
// directories.
type memorySize struct {
	files uint64
	dirs  uint64
}

// memorySample is what the memory workload reads before and after.
type memorySample struct {
	heapAlloc   uint64
	heapObjects uint64
	sys         uint64
	rss         uint64
}

// rssBytes is the resident set size of this process (/proc/self/statm,
// second field, in pages).
func rssBytes() (uint64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	fields := bytes.Fields(b)
	if len(fields) < 2 {
		return 0, fmt.Errorf("/proc/self/statm: unexpected %q", b)
	}
	pages, err := strconv.ParseUint(string(fields[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return pages * uint64(os.Getpagesize()), nil
}

// sampleMemory collects garbage, then reads the runtime's statistics and the
// RSS.
func sampleMemory() (memorySample, error) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	rss, err := rssBytes()
	return memorySample{heapAlloc: m.HeapAlloc, heapObjects: m.HeapObjects, sys: m.Sys, rss: rss}, err
}

// createEmpty creates the empty file `path` as open(O_CREAT|O_WRONLY, 0644)
// followed by close does.
func (s *sentry) createEmpty(ctx context.Context, creds *auth.Credentials, path string) error {
	pop := s.pathOp(path, follow)
	fd, err := s.vfsObj.OpenAt(ctx, creds, &pop, &vfs.OpenOptions{
		Flags: linux.O_CREAT | linux.O_WRONLY,
		Mode:  0o644,
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	fd.DecRef(ctx)
	return nil
}

// measureMemory runs the memory workload on s and prints its line to out.
func measureMemory(s *sentry, size memorySize, out *bufio.Writer) error {
	if size.files == 0 || size.dirs == 0 || size.dirs > size.files {
		return fmt.Errorf("--files and --dirs must be positive, with no more directories than files")
	}
	ctx := s.newContext()
	creds := auth.CredentialsFromContext(ctx)
	// A warm-up file first, so that what the first create sets up once is
	// not counted.
	if err := s.mkdir(ctx, "warm"); err != nil {
		return err
	}
	if err := s.createEmpty(ctx, creds, "warm/x"); err != nil {
		return err
	}
	before, err := sampleMemory()
	if err != nil {
		return err
	}
	for d := uint64(0); d < size.dirs; d++ {
		if err := s.mkdir(ctx, "d"+strconv.FormatUint(d, 10)); err != nil {
			return err
		}
	}
	// The path buffer is reused: only what the VFS keeps stays live.
	path := make([]byte, 0, 64)
	for i := uint64(0); i < size.files; i++ {
		dir := i * size.dirs / size.files
		path = append(path[:0], 'd')
		path = strconv.AppendUint(path, dir, 10)
		path = append(path, "/f"...)
		path = strconv.AppendUint(path, i, 10)
		if err := s.createEmpty(ctx, creds, string(path)); err != nil {
			return err
		}
	}
	after, err := sampleMemory()
	if err != nil {
		return err
	}
	runtime.KeepAlive(s)
	delta := func(a, b uint64) int64 { return int64(b) - int64(a) }
	fmt.Fprintf(out, "{\"files\": %d, \"dirs\": %d, \"heap_alloc_delta_bytes\": %d, \"heap_objects_delta\": %d, \"sys_delta_bytes\": %d, \"rss_delta_bytes\": %d}\n",
		size.files, size.dirs,
		delta(before.heapAlloc, after.heapAlloc), delta(before.heapObjects, after.heapObjects),
		delta(before.sys, after.sys), delta(before.rss, after.rss))
	return out.Flush()
}
