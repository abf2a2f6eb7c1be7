package main

// The watch scenarios of `uvfs bench write1-watch` (crates/uvfs-bench/src/watch.rs) on
// gVisor's own inotify, driven in process: vfs.NewInotifyFD makes the instance,
// (*vfs.Inotify).AddWatch places a watch on a dentry found with GetDentryAt (what the
// inotify_add_watch syscall does in pkg/sentry/syscalls/linux/sys_inotify.go), and events are
// read with FileDescription.Read, waiting on the file's waiter queue when it is empty.
//
// Layout: directory w, the written file w/f, the unrelated file u. Each scenario's watch is
// checked before the clock runs: one write of w/f must queue exactly the scenario's events,
// and the scenarios whose watch a write does not match poke their object and must see its
// one event. gVisor has no fanotify: the mount scenario is refused (the Rust column skips it).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/abi/linux"
	"gvisor.dev/gvisor/pkg/context"
	"gvisor.dev/gvisor/pkg/errors/linuxerr"
	"gvisor.dev/gvisor/pkg/sentry/kernel/auth"
	"gvisor.dev/gvisor/pkg/sentry/vfs"
	"gvisor.dev/gvisor/pkg/usermem"
	"gvisor.dev/gvisor/pkg/waiter"
)

const (
	watchDir      = "w"
	writtenName   = "f"
	writtenFile   = "w/f"
	unrelatedFile = "u"
	// eventBufBytes holds many events.
	eventBufBytes = 4096
	// eventHeaderBytes is the size of struct inotify_event without its name.
	eventHeaderBytes = 16
)

// inotifyEvent is one struct inotify_event, its name without the NUL padding.
type inotifyEvent struct {
	wd   int32
	mask uint32
	name string
}

// watchScenario is a scenario's inotify watch: the watched path and mask, and the event one
// write of w/f makes on it (mask 0: none).
type watchScenario struct {
	path      string
	mask      uint32
	writeMask uint32
	writeName string
	drained   bool
}

// scenarios maps the names of watch.rs's Watch to their watches ("none" has none).
var scenarios = map[string]*watchScenario{
	"none":           nil,
	"unrelated":      {path: unrelatedFile, mask: linux.IN_MODIFY},
	"parent-other":   {path: watchDir, mask: linux.IN_ACCESS},
	"parent":         {path: watchDir, mask: linux.IN_MODIFY, writeMask: linux.IN_MODIFY, writeName: writtenName},
	"self":           {path: writtenFile, mask: linux.IN_MODIFY, writeMask: linux.IN_MODIFY, drained: true},
	"self-undrained": {path: writtenFile, mask: linux.IN_MODIFY, writeMask: linux.IN_MODIFY},
}

// watcher is a placed watch, and the goroutine draining it (scenario self).
type watcher struct {
	fd     *vfs.FileDescription
	events atomic.Uint64
}

// parseEvents splits what a read returned into events.
func parseEvents(b []byte) []inotifyEvent {
	var out []inotifyEvent
	for len(b) >= eventHeaderBytes {
		wd := int32(binary.NativeEndian.Uint32(b[0:]))
		mask := binary.NativeEndian.Uint32(b[4:])
		n := int(binary.NativeEndian.Uint32(b[12:]))
		if len(b) < eventHeaderBytes+n {
			break
		}
		name := b[eventHeaderBytes : eventHeaderBytes+n]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		out = append(out, inotifyEvent{wd: wd, mask: mask, name: string(name)})
		b = b[eventHeaderBytes+n:]
	}
	return out
}

// queuedEvents reads every event queued on fd without waiting.
func queuedEvents(ctx context.Context, fd *vfs.FileDescription) ([]inotifyEvent, error) {
	var out []inotifyEvent
	buf := make([]byte, eventBufBytes)
	for {
		n, err := fd.Read(ctx, usermem.BytesIOSequence(buf), vfs.ReadOptions{})
		if linuxerr.Equals(linuxerr.ErrWouldBlock, err) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, parseEvents(buf[:n])...)
	}
}

// expectEvents checks that fd's queue holds exactly `want` (nil: nothing).
func expectEvents(ctx context.Context, fd *vfs.FileDescription, what string, want []inotifyEvent) error {
	got, err := queuedEvents(ctx, fd)
	if err != nil {
		return err
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("%s gave the events %+v, not %+v", what, got, want)
	}
	return nil
}

// pokeFile does a 1-byte write or read at offset 0 of path.
func (s *sentry) pokeFile(ctx context.Context, path string, write bool) error {
	pop := s.pathOp(path, follow)
	flags := uint32(linux.O_RDONLY)
	if write {
		flags = linux.O_WRONLY
	}
	fd, err := s.vfsObj.OpenAt(ctx, auth.CredentialsFromContext(ctx), &pop, &vfs.OpenOptions{Flags: flags})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer fd.DecRef(ctx)
	b := []byte{'p'}
	if write {
		_, err = fd.PWrite(ctx, usermem.BytesIOSequence(b), 0, vfs.WriteOptions{})
	} else {
		_, err = fd.PRead(ctx, usermem.BytesIOSequence(b), 0, vfs.ReadOptions{})
	}
	return err
}

// placeWatch places scenario name's watch on the layout (which must exist) and checks it.
func placeWatch(s *sentry, name string) (*watcher, error) {
	sc, ok := scenarios[name]
	if !ok {
		if name == "mount" {
			return nil, errors.New("gVisor has no fanotify: no mount mark")
		}
		return nil, fmt.Errorf("unknown watch scenario %q", name)
	}
	if sc == nil {
		return nil, nil
	}
	ctx := s.newContext()
	fd, err := vfs.NewInotifyFD(ctx, s.vfsObj, 0)
	if err != nil {
		return nil, fmt.Errorf("NewInotifyFD: %w", err)
	}
	ino := fd.Impl().(*vfs.Inotify)
	pop := s.pathOp(sc.path, follow)
	vd, err := s.vfsObj.GetDentryAt(ctx, auth.CredentialsFromContext(ctx), &pop, &vfs.GetDentryOptions{})
	if err != nil {
		return nil, fmt.Errorf("GetDentryAt %s: %w", sc.path, err)
	}
	wd := ino.AddWatch(vd.Dentry(), sc.mask)
	vd.DecRef(ctx)
	if err := s.pokeFile(ctx, writtenFile, true); err != nil {
		return nil, err
	}
	var want []inotifyEvent
	if sc.writeMask != 0 {
		want = []inotifyEvent{{wd: wd, mask: sc.writeMask, name: sc.writeName}}
	}
	if err := expectEvents(ctx, fd, "one write of "+writtenFile, want); err != nil {
		return nil, err
	}
	switch name {
	case "unrelated":
		if err := s.pokeFile(ctx, unrelatedFile, true); err != nil {
			return nil, err
		}
		want = []inotifyEvent{{wd: wd, mask: linux.IN_MODIFY}}
		if err := expectEvents(ctx, fd, "a write of "+unrelatedFile, want); err != nil {
			return nil, err
		}
	case "parent-other":
		if err := s.pokeFile(ctx, writtenFile, false); err != nil {
			return nil, err
		}
		want = []inotifyEvent{{wd: wd, mask: linux.IN_ACCESS, name: writtenName}}
		if err := expectEvents(ctx, fd, "a read of "+writtenFile, want); err != nil {
			return nil, err
		}
	}
	w := &watcher{fd: fd}
	if sc.drained {
		go w.drain(s.newContext(), wd)
	}
	return w, nil
}

// drain reads watch wd's events for the life of the process, waiting on the instance's queue when it is
// empty; an event of another kind ends the process.
func (w *watcher) drain(ctx context.Context, wd int32) {
	e, ch := waiter.NewChannelEntry(waiter.ReadableEvents)
	if err := w.fd.EventRegister(&e); err != nil {
		fail(fmt.Errorf("EventRegister: %w", err))
	}
	defer w.fd.EventUnregister(&e)
	buf := make([]byte, eventBufBytes)
	for {
		n, err := w.fd.Read(ctx, usermem.BytesIOSequence(buf), vfs.ReadOptions{})
		if linuxerr.Equals(linuxerr.ErrWouldBlock, err) {
			<-ch
			continue
		}
		if err != nil {
			fail(fmt.Errorf("drainer read: %w", err))
		}
		for _, ev := range parseEvents(buf[:n]) {
			if ev.wd != wd || ev.mask != linux.IN_MODIFY {
				fail(fmt.Errorf("the drainer read %+v, not an IN_MODIFY of watch %d", ev, wd))
			}
			w.events.Add(1)
		}
	}
}

// fail reports err the way run's errors are reported and exits: for goroutines that cannot
// return it.
func fail(err error) {
	fmt.Fprintf(os.Stderr, "uvfs-gvisor-driver: %v\n", err)
	os.Exit(1)
}
