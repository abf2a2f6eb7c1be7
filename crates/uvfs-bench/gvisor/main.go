// Command uvfs-gvisor-driver runs one `uvfs bench` configuration on gVisor's
// Sentry VFS with its tmpfs, in this process, and prints one JSON line per
// round: {"elapsed_ns": N}, the wall time from the common start of all worker
// goroutines until the last one finished `--ops` operations.
//
// There is no syscall boundary and no copy to user memory: each operation calls
// the vfs package directly, the way gVisor's syscall layer does after it has
// copied the arguments in. Setup (files, directories, open descriptions) is
// untimed.
//
// Three modes:
//
//	uvfs-gvisor-driver --workload write1 --threads 1 --ops 100000 --rounds 5
//	    runs --rounds rounds and exits.
//	uvfs-gvisor-driver --workload write1 --threads 1 --serve
//	    sets up, prints {"ready":true}, then reads one operation count per line
//	    on stdin and answers each with one {"elapsed_ns": N} line, until EOF.
//	uvfs-gvisor-driver --workload memory --files 1000000 --dirs 1000
//	    creates --files empty files in --dirs directories and prints one line
//	    with the growth of this process's memory over the creation (memory.go).
//
// With --workload find (find.go), --files and --dirs give each walker's tree,
// and an operation is one whole walk of it.
//
// Any error is printed on stderr and the process exits with status 1.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/abi/linux"
	"gvisor.dev/gvisor/pkg/context"
	"gvisor.dev/gvisor/pkg/fspath"
	"gvisor.dev/gvisor/pkg/memutil"
	"gvisor.dev/gvisor/pkg/sentry/fsimpl/tmpfs"
	"gvisor.dev/gvisor/pkg/sentry/kernel/auth"
	ktime "gvisor.dev/gvisor/pkg/sentry/ktime"
	"gvisor.dev/gvisor/pkg/sentry/limits"
	"gvisor.dev/gvisor/pkg/sentry/pgalloc"
	"gvisor.dev/gvisor/pkg/sentry/uniqueid"
	"gvisor.dev/gvisor/pkg/sentry/vfs"
	"gvisor.dev/gvisor/pkg/usermem"
)

// fileSizeBytes is the size of the files that read1 and open-read-close read.
const fileSizeBytes = 64

// orcReadBytes is how much open-read-close reads per open.
const orcReadBytes = 32

// config is one measured configuration, as given on the command line.
type config struct {
	workload string
	threads  int
	depth    int
	shared   bool
	// tree is each walker's tree (find).
	tree memorySize
	// watch is the watch scenario of write1 (watch.go): "none" for plain write1.
	watch string
}

// wallClock is the realtime clock tmpfs stamps inodes with: the host's
// CLOCK_REALTIME through Go's time package (a vDSO read).
type wallClock struct{}

// Now implements ktime.Clock.Now.
func (wallClock) Now() ktime.Time {
	return ktime.FromNanoseconds(time.Now().UnixNano())
}

// NewTimer implements ktime.Clock.NewTimer. The workloads arm no timers.
func (wallClock) NewTimer(ktime.Listener) ktime.Timer {
	panic("uvfs-gvisor-driver: timers are not supported")
}

// sentry is the in-process VFS: one tmpfs mounted as the root of a mount
// namespace, and what a context needs to operate on it.
type sentry struct {
	vfsObj *vfs.VirtualFilesystem
	mntns  *vfs.MountNamespace
	root   vfs.VirtualDentry
	mf     *pgalloc.MemoryFile
	userns *auth.UserNamespace
	// limits is the resource-limit set of the one simulated process; its
	// goroutines share it like the threads of a process share theirs.
	limits *limits.LimitSet
	clock  wallClock
	// lastID is the last system-wide unique id handed out (an inotify instance's).
	lastID atomic.Uint64
	// watch is the placed watch of write1's scenario, if any.
	watch *watcher
}

// taskContext is what one goroutine passes to the VFS: the values a Sentry
// task would answer for, and nothing else (no blocking, no signals).
type taskContext struct {
	context.Context
	s     *sentry
	creds *auth.Credentials
}

// Value implements context.Context.Value. Like a task, it takes a reference on
// the mount namespace it returns; the VFS drops it when done.
func (c *taskContext) Value(key any) any {
	switch key {
	case auth.CtxCredentials:
		return c.creds
	case pgalloc.CtxMemoryFile:
		return c.s.mf
	case ktime.CtxRealtimeClock:
		return ktime.Clock(c.s.clock)
	case limits.CtxLimits:
		return c.s.limits
	case uniqueid.CtxGlobalUniqueID:
		return c.s.lastID.Add(1)
	case vfs.CtxMountNamespace:
		if c.s.mntns == nil {
			return nil
		}
		c.s.mntns.IncRef()
		return c.s.mntns
	}
	return c.Context.Value(key)
}

// newContext returns a fresh context with its own root credentials, for one
// goroutine: gVisor contexts are per task and not shared between goroutines.
func (s *sentry) newContext() context.Context {
	return &taskContext{Context: context.Background(), s: s, creds: auth.NewRootCredentials(s.userns)}
}

// newSentry sets up the VFS, the memfd-backed page allocator and the tmpfs root.
func newSentry() (*sentry, error) {
	memfd, err := memutil.CreateMemFD("uvfs-gvisor-driver", 0)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	mf, err := pgalloc.NewMemoryFile(os.NewFile(uintptr(memfd), "uvfs-gvisor-driver-memfd"), pgalloc.MemoryFileOpts{})
	if err != nil {
		return nil, fmt.Errorf("pgalloc.NewMemoryFile: %w", err)
	}
	s := &sentry{vfsObj: &vfs.VirtualFilesystem{}, mf: mf, userns: auth.NewRootUserNamespace(), limits: limits.NewLimitSet()}
	ctx := s.newContext()
	if err := s.vfsObj.Init(ctx); err != nil {
		return nil, fmt.Errorf("VirtualFilesystem.Init: %w", err)
	}
	s.vfsObj.MustRegisterFilesystemType("tmpfs", tmpfs.FilesystemType{}, &vfs.RegisterFilesystemTypeOptions{
		AllowUserMount: true,
	})
	creds := auth.CredentialsFromContext(ctx)
	s.mntns, err = s.vfsObj.NewMountNamespace(ctx, creds, "", "tmpfs", &vfs.MountOptions{}, nil)
	if err != nil {
		return nil, fmt.Errorf("mount tmpfs: %w", err)
	}
	s.root = s.mntns.Root(ctx)
	return s, nil
}

// finalSymlink says whether a walk follows a symbolic link in its last
// component: open and stat do, mkdir and unlink do not (gVisor's VFS rejects
// a creating or removing walk that would).
type finalSymlink bool

const (
	follow   finalSymlink = true
	noFollow finalSymlink = false
)

// pathOp is a walk of `path` relative to the tmpfs root.
func (s *sentry) pathOp(path string, last finalSymlink) vfs.PathOperation {
	return vfs.PathOperation{Root: s.root, Start: s.root, Path: fspath.Parse(path), FollowFinalSymlink: bool(last)}
}

func (s *sentry) mkdir(ctx context.Context, path string) error {
	pop := s.pathOp(path, noFollow)
	if err := s.vfsObj.MkdirAt(ctx, auth.CredentialsFromContext(ctx), &pop, &vfs.MkdirOptions{Mode: 0o755}); err != nil {
		return fmt.Errorf("mkdir %s: %w", path, err)
	}
	return nil
}

// createFile creates `path` holding `size` bytes.
func (s *sentry) createFile(ctx context.Context, path string, size int) error {
	pop := s.pathOp(path, follow)
	fd, err := s.vfsObj.OpenAt(ctx, auth.CredentialsFromContext(ctx), &pop, &vfs.OpenOptions{
		Flags: linux.O_CREAT | linux.O_EXCL | linux.O_WRONLY,
		Mode:  0o644,
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer fd.DecRef(ctx)
	if size > 0 {
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = 'x'
		}
		if _, err := fd.PWrite(ctx, usermem.BytesIOSequence(buf), 0, vfs.WriteOptions{}); err != nil {
			return fmt.Errorf("fill %s: %w", path, err)
		}
	}
	return nil
}

// worker is one goroutine's state: its own context and credentials, and the
// object it works on.
type worker struct {
	s     *sentry
	ctx   context.Context
	creds *auth.Credentials
	// fd is the open description of write1 and read1.
	fd *vfs.FileDescription
	// path is what open-read-close opens, stat-walk stats and create-unlink
	// creates, and the root of find's tree.
	path string
	buf  []byte
	// tree is the size of find's tree.
	tree memorySize
	op   func(w *worker) error
}

func opWrite1(w *worker) error {
	_, err := w.fd.PWrite(w.ctx, usermem.BytesIOSequence(w.buf[:1]), 0, vfs.WriteOptions{})
	return err
}

func opRead1(w *worker) error {
	n, err := w.fd.PRead(w.ctx, usermem.BytesIOSequence(w.buf[:1]), 0, vfs.ReadOptions{})
	if err == nil && n != 1 {
		err = fmt.Errorf("short read: %d bytes", n)
	}
	return err
}

func opOpenReadClose(w *worker) error {
	pop := w.s.pathOp(w.path, follow)
	fd, err := w.s.vfsObj.OpenAt(w.ctx, w.creds, &pop, &vfs.OpenOptions{Flags: linux.O_RDONLY})
	if err != nil {
		return err
	}
	n, err := fd.Read(w.ctx, usermem.BytesIOSequence(w.buf[:orcReadBytes]), vfs.ReadOptions{})
	fd.DecRef(w.ctx)
	if err == nil && n != orcReadBytes {
		err = fmt.Errorf("short read: %d bytes", n)
	}
	return err
}

func opStatWalk(w *worker) error {
	pop := w.s.pathOp(w.path, follow)
	_, err := w.s.vfsObj.StatAt(w.ctx, w.creds, &pop, &vfs.StatOptions{Mask: linux.STATX_BASIC_STATS})
	return err
}

func opCreateUnlink(w *worker) error {
	pop := w.s.pathOp(w.path, follow)
	fd, err := w.s.vfsObj.OpenAt(w.ctx, w.creds, &pop, &vfs.OpenOptions{
		Flags: linux.O_CREAT | linux.O_EXCL | linux.O_WRONLY,
		Mode:  0o644,
	})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	fd.DecRef(w.ctx)
	pop = w.s.pathOp(w.path, noFollow)
	if err := w.s.vfsObj.UnlinkAt(w.ctx, w.creds, &pop); err != nil {
		return fmt.Errorf("unlink: %w", err)
	}
	return nil
}

// objectName is the name of thread i's object: the shared one, or its own.
func objectName(prefix string, c config, i int) string {
	if c.shared {
		return prefix
	}
	return prefix + strconv.Itoa(i)
}

// walkPath is the stat-walk target of `depth`: d1/d2/.../f (depth-1
// directories, then the file), as `walk_components` in params.rs.
func walkPath(depth int) string {
	var parts []string
	for i := 1; i < depth; i++ {
		parts = append(parts, "d"+strconv.Itoa(i))
	}
	return strings.Join(append(parts, "f"), "/")
}

// setup builds what configuration c needs and returns one worker per thread.
func setup(s *sentry, c config) ([]*worker, error) {
	ctx := s.newContext()
	made := map[string]bool{}
	once := func(path string, build func() error) error {
		if made[path] {
			return nil
		}
		made[path] = true
		return build()
	}
	workers := make([]*worker, c.threads)
	fds := map[string]*vfs.FileDescription{}
	for i := range workers {
		wctx := s.newContext()
		w := &worker{s: s, ctx: wctx, creds: auth.CredentialsFromContext(wctx), buf: make([]byte, fileSizeBytes)}
		w.buf[0] = 'y'
		switch c.workload {
		case "write1", "read1":
			w.path = objectName("f", c, i)
			if c.workload == "write1" && c.watch != "none" {
				// The watch scenarios' layout (watch.go).
				w.path = writtenFile
				err := once(w.path, func() error {
					if err := s.mkdir(ctx, watchDir); err != nil {
						return err
					}
					if err := s.createFile(ctx, unrelatedFile, fileSizeBytes); err != nil {
						return err
					}
					return s.createFile(ctx, w.path, fileSizeBytes)
				})
				if err != nil {
					return nil, err
				}
			}
			if err := once(w.path, func() error { return s.createFile(ctx, w.path, fileSizeBytes) }); err != nil {
				return nil, err
			}
			if fds[w.path] == nil {
				pop := s.pathOp(w.path, follow)
				fd, err := s.vfsObj.OpenAt(ctx, auth.CredentialsFromContext(ctx), &pop, &vfs.OpenOptions{Flags: linux.O_RDWR})
				if err != nil {
					return nil, fmt.Errorf("open %s: %w", w.path, err)
				}
				fds[w.path] = fd
			}
			w.fd = fds[w.path]
			w.op = opWrite1
			if c.workload == "read1" {
				w.op = opRead1
			}
		case "open-read-close":
			w.path = objectName("f", c, i)
			if err := once(w.path, func() error { return s.createFile(ctx, w.path, fileSizeBytes) }); err != nil {
				return nil, err
			}
			w.op = opOpenReadClose
		case "stat-walk":
			w.path = walkPath(c.depth)
			err := once(w.path, func() error {
				parts := strings.Split(w.path, "/")
				for j := 1; j < len(parts); j++ {
					if err := s.mkdir(ctx, strings.Join(parts[:j], "/")); err != nil {
						return err
					}
				}
				return s.createFile(ctx, w.path, 0)
			})
			if err != nil {
				return nil, err
			}
			w.op = opStatWalk
		case "create-unlink":
			dir := objectName("d", c, i)
			if err := once(dir, func() error { return s.mkdir(ctx, dir) }); err != nil {
				return nil, err
			}
			w.path = dir + "/n" + strconv.Itoa(i)
			w.op = opCreateUnlink
		case "find":
			w.path = "w" + strconv.Itoa(i)
			w.tree = c.tree
			if err := buildTree(ctx, s, w.path, c.tree); err != nil {
				return nil, err
			}
			w.op = opFind
			// The warm-up walk, checked.
			if err := opFind(w); err != nil {
				return nil, fmt.Errorf("warm-up walk: %w", err)
			}
		default:
			return nil, fmt.Errorf("unknown workload %q", c.workload)
		}
		workers[i] = w
	}
	if c.watch != "none" {
		if c.workload != "write1" {
			return nil, fmt.Errorf("--watch %s is for write1 only", c.watch)
		}
		wt, err := placeWatch(s, c.watch)
		if err != nil {
			return nil, fmt.Errorf("placing the %s watch: %w", c.watch, err)
		}
		s.watch = wt
	}
	return workers, nil
}

// round runs `ops` operations on every worker, started together, and returns
// the wall time from the common start until the last one finished.
func round(workers []*worker, ops uint64) (time.Duration, error) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, len(workers))
	for i, w := range workers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for n := uint64(0); n < ops; n++ {
				if err := w.op(w); err != nil {
					errs[i] = fmt.Errorf("thread %d, op %d: %w", i, n, err)
					return
				}
			}
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	elapsed := time.Since(t0)
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return elapsed, nil
}

func printElapsed(out *bufio.Writer, d time.Duration) error {
	fmt.Fprintf(out, "{\"elapsed_ns\": %d}\n", d.Nanoseconds())
	return out.Flush()
}

// serve answers one round per line of stdin (the operation count per thread).
func serve(workers []*worker, out *bufio.Writer) error {
	fmt.Fprintln(out, `{"ready": true}`)
	if err := out.Flush(); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		ops, err := strconv.ParseUint(line, 10, 64)
		if err != nil {
			return fmt.Errorf("bad operation count %q on stdin", line)
		}
		d, err := round(workers, ops)
		if err != nil {
			return err
		}
		if err := printElapsed(out, d); err != nil {
			return err
		}
	}
	return in.Err()
}

func run() error {
	var c config
	var sharing string
	var ops, rounds uint64
	var serveMode bool
	flag.StringVar(&c.workload, "workload", "", "write1, read1, open-read-close, stat-walk, create-unlink, find or memory")
	flag.IntVar(&c.threads, "threads", 1, "goroutines running the workload at once")
	flag.IntVar(&c.depth, "depth", 1, "path depth (stat-walk)")
	flag.StringVar(&sharing, "sharing", "shared", "shared or per-thread")
	flag.Uint64Var(&ops, "ops", 100000, "operations per goroutine and round (find: walks)")
	flag.Uint64Var(&rounds, "rounds", 1, "rounds to run")
	flag.BoolVar(&serveMode, "serve", false, "read operation counts from stdin, one round per line")
	flag.StringVar(&c.watch, "watch", "none", "write1's watch scenario: none, unrelated, parent-other, parent, self or self-undrained")
	var size memorySize
	flag.Uint64Var(&size.files, "files", 1000000, "empty files to create (memory; find: per walker)")
	flag.Uint64Var(&size.dirs, "dirs", 1000, "directories to create them in (memory, find)")
	flag.Parse()
	if flag.NArg() != 0 {
		return fmt.Errorf("unexpected argument %q", flag.Arg(0))
	}
	switch sharing {
	case "shared":
		c.shared = true
	case "per-thread":
	default:
		return fmt.Errorf("--sharing must be shared or per-thread, not %q", sharing)
	}
	if c.threads < 1 || c.depth < 1 {
		return fmt.Errorf("--threads and --depth must be at least 1")
	}
	if size.files == 0 || size.dirs == 0 || size.dirs > size.files {
		return fmt.Errorf("--files and --dirs take positive counts with no more directories than files")
	}
	c.tree = size
	if runtime.GOMAXPROCS(0) < c.threads {
		runtime.GOMAXPROCS(c.threads)
	}

	s, err := newSentry()
	if err != nil {
		return err
	}
	if c.workload == "memory" {
		return measureMemory(s, size, bufio.NewWriter(os.Stdout))
	}
	workers, err := setup(s, c)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	if serveMode {
		return serve(workers, out)
	}
	for r := uint64(0); r < rounds; r++ {
		d, err := round(workers, ops)
		if err != nil {
			return err
		}
		if err := printElapsed(out, d); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "uvfs-gvisor-driver: %v\n", err)
		os.Exit(1)
	}
}
