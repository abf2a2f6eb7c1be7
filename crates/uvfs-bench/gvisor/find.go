package main

// The find workload of `uvfs bench find` (crates/uvfs-bench/src/find.rs says
// what it measures): each goroutine walks its own tree the way find and du do,
// listing each directory and stat-ing every entry by name from it.
//
// The tree of walker i is w<i>/d<j>/f<k>: --dirs directories holding --files
// empty files (file k in directory k*dirs/files), files mode 0600,
// directories 0700. One operation of a round is one whole walk; every walk
// counts what its stats said and fails unless that is exactly the tree.
//
// gVisor's getdents64 (pkg/sentry/syscalls/linux/sys_getdents.go) is
// FileDescription.IterDirents with a callback that stops when the next record
// would not fit the caller's buffer; the description keeps its position for
// the next call. Here the callback keeps the names IterDirents hands out
// within a getdentsBufBytes budget of record sizes, without encoding the
// records or copying them out. Its fstatat with a directory fd is
// VirtualFilesystem.StatAt starting at the directory's dentry; so is this.

import (
	"errors"
	"fmt"

	"gvisor.dev/gvisor/pkg/abi/linux"
	"gvisor.dev/gvisor/pkg/context"
	"gvisor.dev/gvisor/pkg/fspath"
	"gvisor.dev/gvisor/pkg/sentry/kernel/auth"
	"gvisor.dev/gvisor/pkg/sentry/vfs"
)

// getdentsBufBytes is the getdents64 buffer of a walk: glibc's opendir
// buffer, as GETDENTS_BUF_BYTES in find.rs.
const getdentsBufBytes = 32 * 1024

// dirent64HeaderBytes is struct linux_dirent64 without its name: d_ino,
// d_off, d_reclen, d_type.
const dirent64HeaderBytes = 8 + 8 + 2 + 1

// The modes of the tree, as in find.rs.
const (
	findFileMode = linux.S_IFREG | 0o600
	findDirMode  = linux.S_IFDIR | 0o700
)

// errBatchFull ends one IterDirents call when the next record would not fit
// the buffer; the next call restarts with that entry.
var errBatchFull = errors.New("getdents64 buffer full")

// direntBatch is one getdents64 call's result: the names of the records that
// fit in getdentsBufBytes.
type direntBatch struct {
	names []string
	bytes int
}

// Handle implements vfs.IterDirentsCallback.Handle.
func (b *direntBatch) Handle(d vfs.Dirent) error {
	// The record: header, name, NUL, padded to 8 bytes.
	size := (dirent64HeaderBytes + len(d.Name) + 1 + 7) &^ 7
	if b.bytes+size > getdentsBufBytes {
		return errBatchFull
	}
	b.bytes += size
	b.names = append(b.names, d.Name)
	return nil
}

// walkCount is what one walk's stats said.
type walkCount struct {
	files, dirs, other uint64
}

// buildTree creates the tree of size under root (a directory of the tmpfs
// root).
func buildTree(ctx context.Context, s *sentry, root string, size memorySize) error {
	creds := auth.CredentialsFromContext(ctx)
	mkdir := func(path string) error {
		pop := s.pathOp(path, noFollow)
		if err := s.vfsObj.MkdirAt(ctx, creds, &pop, &vfs.MkdirOptions{Mode: findDirMode &^ linux.S_IFMT}); err != nil {
			return fmt.Errorf("mkdir %s: %w", path, err)
		}
		return nil
	}
	if err := mkdir(root); err != nil {
		return err
	}
	for j := uint64(0); j < size.dirs; j++ {
		if err := mkdir(fmt.Sprintf("%s/d%d", root, j)); err != nil {
			return err
		}
	}
	for k := uint64(0); k < size.files; k++ {
		path := fmt.Sprintf("%s/d%d/f%d", root, k*size.dirs/size.files, k)
		pop := s.pathOp(path, follow)
		fd, err := s.vfsObj.OpenAt(ctx, creds, &pop, &vfs.OpenOptions{
			Flags: linux.O_CREAT | linux.O_EXCL | linux.O_WRONLY,
			Mode:  findFileMode &^ linux.S_IFMT,
		})
		if err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		fd.DecRef(ctx)
	}
	return nil
}

// walkDir lists directory name of parent and stats every entry, then walks
// the subdirectories.
func (w *worker) walkDir(parent vfs.VirtualDentry, name string, count *walkCount) error {
	pop := vfs.PathOperation{Root: w.s.root, Start: parent, Path: fspath.Parse(name), FollowFinalSymlink: true}
	fd, err := w.s.vfsObj.OpenAt(w.ctx, w.creds, &pop, &vfs.OpenOptions{Flags: linux.O_RDONLY | linux.O_DIRECTORY})
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer fd.DecRef(w.ctx)
	dir := fd.VirtualDentry()
	var subdirs []string
	var batch direntBatch
	for {
		batch.names, batch.bytes = batch.names[:0], 0
		if err := fd.IterDirents(w.ctx, &batch); err != nil && err != errBatchFull {
			return fmt.Errorf("getdents64 %s: %w", name, err)
		}
		if len(batch.names) == 0 {
			// getdents64 returned 0: the end of the directory.
			break
		}
		for _, n := range batch.names {
			if n == "." || n == ".." {
				continue
			}
			spop := vfs.PathOperation{Root: w.s.root, Start: dir, Path: fspath.Parse(n)}
			st, err := w.s.vfsObj.StatAt(w.ctx, w.creds, &spop, &vfs.StatOptions{Mask: linux.STATX_BASIC_STATS})
			if err != nil {
				return fmt.Errorf("fstatat %s/%s: %w", name, n, err)
			}
			switch uint32(st.Mode) {
			case findDirMode:
				count.dirs++
				subdirs = append(subdirs, n)
			case findFileMode:
				count.files++
			default:
				count.other++
			}
		}
	}
	for _, d := range subdirs {
		if err := w.walkDir(dir, d, count); err != nil {
			return err
		}
	}
	return nil
}

// opFind is one walk of the worker's tree, checked against its size.
func opFind(w *worker) error {
	var count walkCount
	if err := w.walkDir(w.s.root, w.path, &count); err != nil {
		return err
	}
	if count.files != w.tree.files || count.dirs != w.tree.dirs || count.other != 0 {
		return fmt.Errorf("find: walker %s stat'ed %d files, %d directories and %d other entries in 1 walks of a tree of %d files and %d directories: a walk that sees less is an error, not a result",
			w.path, count.files, count.dirs, count.other, w.tree.files, w.tree.dirs)
	}
	return nil
}
